"""Run the file tools the way a LangGraph ToolNode does, on any backend.

`Harness` injects a real `ToolRuntime` (state, tool_call_id, config) into each call and
applies the `Command` updates a tool returns through the channels' own reducers, so a
StateBackend is exercised exactly as inside a graph, without a model.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from langchain_core.messages import ToolMessage
from langgraph.prebuilt import ToolRuntime
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command
from obstore.store import MemoryStore

from langchain_fstools import (
    CompositeBackend,
    FileToolkit,
    LocalBackend,
    ObjectStoreBackend,
    StateBackend,
    StoreBackend,
)
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.backends.sandbox import SandboxBackend
from langchain_fstools.backends.state import merge_files
from langchain_fstools.core import calls
from langchain_fstools.tools.reads import READS_KEY, merge_reads
from tests.unit.backends.sandbox_double import ShellBaseSandbox, ShellSandbox, path_with_ripgrep

BACKENDS = [
    "local",
    "local-python",
    "state",
    "store",
    "composite",
    "objectstore",
    "sandbox",
    "sandbox-python",
]
"""local: LocalBackend with ripgrep; local-python: without; state: StateBackend;
store: StoreBackend on an InMemoryStore; composite: LocalBackend with /docs/ and /odd/
mounted from graph state; objectstore: ObjectStoreBackend on obstore's MemoryStore;
sandbox: SandboxBackend over a deepagents `BaseSandbox` subclass running `sh -c` here,
with ripgrep on its PATH; sandbox-python: over a plain provider object without it, and
told not to search with ripgrep (not to upload it: the engine runs in the sandbox)."""


class Harness:
    """A toolkit plus a simulated graph state for one backend."""

    def __init__(self, kind: str, tmp_path: Path, **settings: Any) -> None:
        self.kind = kind
        self.root = tmp_path / "root"
        self.root.mkdir(parents=True, exist_ok=True)
        backend: Backend = {
            "state": lambda: StateBackend(),
            "store": lambda: StoreBackend(InMemoryStore(), namespace=("harness",)),
            "objectstore": lambda: ObjectStoreBackend(MemoryStore(), prefix="harness"),
            "composite": lambda: CompositeBackend(
                LocalBackend(self.root), {"/docs/": StateBackend(), "/odd/": StateBackend()}
            ),
            "sandbox": lambda: SandboxBackend(
                ShellBaseSandbox(ShellSandbox(path=path_with_ripgrep(tmp_path / "bin"))),
                str(self.root),
                helper_folder=str(tmp_path / "helper"),
            ),
            "sandbox-python": lambda: SandboxBackend(
                ShellSandbox(),
                str(self.root),
                helper_folder=str(tmp_path / "helper"),
                use_ripgrep=False,
            ),
        }.get(kind, lambda: LocalBackend(self.root, use_ripgrep=kind == "local"))()
        self.mounts = ["/docs/", "/odd/"] if kind == "composite" else []
        """Mount points `ls /` shows even when empty."""
        if kind == "local":
            assert backend.native_search() is not None, "rg (the ripgrep wheel) is missing"
        if kind.startswith("sandbox"):
            backend.native_search()
            assert backend.searches_with_ripgrep == (kind == "sandbox")
        self.toolkit = FileToolkit(backend, **settings)
        self.tools = {tool.name: tool for tool in self.toolkit.get_tools()}
        self.state: dict[str, Any] = {"files": {}, READS_KEY: {}, "messages": []}
        self._ids = itertools.count(1)

    def runtime(self) -> ToolRuntime[Any, Any]:
        return ToolRuntime(
            state=dict(self.state),
            context=None,
            config={"configurable": {"thread_id": "t"}},
            stream_writer=lambda _chunk: None,
            tool_call_id=f"call_{next(self._ids)}",
            store=None,
        )

    def _call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        runtime = self.runtime()
        return {
            "type": "tool_call",
            "name": name,
            "id": runtime.tool_call_id,
            "args": {**args, "runtime": runtime},
        }

    def call(self, name: str, **args: Any) -> ToolMessage:
        return self._apply(self.tools[name].invoke(self._call(name, args)))

    async def acall(self, name: str, **args: Any) -> ToolMessage:
        return self._apply(await self.tools[name].ainvoke(self._call(name, args)))

    def _apply(self, result: Any) -> ToolMessage:
        if isinstance(result, Command):
            update = dict(result.update or {})
            if "files" in update:
                self.state["files"] = merge_files(self.state["files"], [update.pop("files")])
            if READS_KEY in update:
                self.state[READS_KEY] = merge_reads(self.state[READS_KEY], update.pop(READS_KEY))
            (message,) = update.pop("messages")
            assert not update, f"unexpected state keys {sorted(update)}"
        else:
            message = result
        assert isinstance(message, ToolMessage)
        self.state["messages"] = [*self.state["messages"], message]  # as the graph adds it
        return message

    def seed(self, path: str, data: bytes) -> None:
        """Put a file in place as if it had been there before the agent started."""
        backend = self.toolkit.backend.bind(self.runtime())
        calls.run(calls.write_bytes(path, data), backend)
        update = backend.state_update()
        if "files" in update:
            self.state["files"] = merge_files(self.state["files"], [update["files"]])

    def content(self, path: str) -> bytes:
        backend = self.toolkit.backend.bind(self.runtime())
        return calls.run(calls.read_bytes(path), backend)

    def change_behind_the_agents_back(self, path: str, data: bytes) -> None:
        self.seed(path, data)


def listed_paths(text: str) -> list[str]:
    """The whole paths of a grouped listing (see `formats.listing`), in order."""
    paths: list[str] = []
    folder = ""
    for line in text.split("\n"):
        if line.startswith("/") and line.endswith("/"):
            folder = line
        elif line.startswith("/"):
            paths.append(line)
        elif line:
            paths.append(folder + line)
    return paths
