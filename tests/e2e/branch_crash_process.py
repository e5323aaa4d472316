"""One process of a thread whose subagents' merges a SIGKILL cuts: run it, or resume it.

    python -m tests.e2e.branch_crash_process run|resume DATABASE BACKEND ROOT KILL [async]

A deepagents parent (`FilesystemMiddleware(branches=True)`) launches two subagents in
one turn, each editing /m.py on its branch (`tests.e2e.test_branches`). The checkpointer
is SQLite at the file DATABASE, or PostgreSQL at a `postgresql://` URL. BACKEND is
`state`, `local` (the files in ROOT) or `store` (a `StoreBackend` on PostgreSQL at
DATABASE). In `run`, the process kills itself with SIGKILL at the merge point KILL:
`before-N` (the Nth merge is about to commit) or `after-N` (it has committed); or, with
`mid`, one subagent only runs, killed as it calls its model after its edit (its step
checkpointed first: the run's durability is `sync`). `resume` continues the thread in a
fresh process and prints, as JSON, the `task` results and the text of /m.py. With
`async`, both phases run `ainvoke` with an `AsyncSqliteSaver`. Nothing is shared between
the two processes but the database and the files.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from langchain_core.messages import ToolMessage
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.store.postgres import PostgresStore

from langchain_fstools import FilesystemMiddleware, LocalBackend, StateBackend, StoreBackend
from langchain_fstools.backends import branch
from langchain_fstools.testing import ScriptedChatModel
from tests.e2e.test_branches import SOURCE, editing, launching

if TYPE_CHECKING:
    from collections.abc import Iterator

    from langchain_fstools.backends.protocol import Backend

CONFIG: Any = {"configurable": {"thread_id": "crash"}}
NAMESPACE = ("crash",)


@contextmanager
def storage(database: str, kind: str, root: str) -> Iterator[tuple[Any, Backend, Any]]:
    """The checkpointer, the backend and the graph's store (for `store`, else None)."""
    if not database.startswith("postgresql://"):
        saver = SqliteSaver(sqlite3.connect(database, check_same_thread=False))
        yield saver, StateBackend() if kind == "state" else LocalBackend(root), None
        return
    with (
        PostgresSaver.from_conn_string(database) as saver,
        PostgresStore.from_conn_string(database) as store,
    ):
        saver.setup()
        store.setup()
        backend = StoreBackend(store, namespace=NAMESPACE)
        yield saver, backend, store


def killing_at(point: str) -> None:
    """Make the process SIGKILL itself at `point` of the merges (`before-N`, `after-N`)."""
    commit = branch._commit  # the fault hook of this test
    done = [0]

    def commit_or_die(*given: Any) -> Any:
        done[0] += 1
        if point == f"before-{done[0]}":
            os.kill(os.getpid(), signal.SIGKILL)
        yield from commit(*given)
        if point == f"after-{done[0]}":
            os.kill(os.getpid(), signal.SIGKILL)

    branch._commit = commit_or_die


class DyingModel(ScriptedChatModel):
    """A scripted model whose process SIGKILLs itself at its call number `dies_at`."""

    dies_at: int = 0

    def _take(self, messages: Any) -> Any:  # every call, sync or async, takes a turn here
        if len(self.calls) + 1 == self.dies_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return super()._take(messages)


def agent(backend: Backend, saver: Any, store: Any, *parent: Any, mid: str = "") -> Any:
    """The parent and its subagents; `mid`: subagent a only, run (dying) or resumed."""
    import deepagents  # noqa: PLC0415  # an optional dependency of the tests

    files = FilesystemMiddleware(backend=backend, branches=True)
    subagents = [
        editing("a", files, "return 1", "return 10"),
        editing("b", files, "return 2", "return 20"),
    ]
    if mid:
        turns = subagents[0]["model"].turns
        model = DyingModel(turns=turns, dies_at=len(turns), disable_streaming=True)
        if mid == "resume":  # the subagent goes on at its last turn
            model = ScriptedChatModel(turns=turns[-1:], disable_streaming=True)
        subagents = [{**subagents[0], "model": model}]
    return deepagents.create_deep_agent(
        model=ScriptedChatModel(turns=list(parent), disable_streaming=True),
        middleware=[files],
        subagents=subagents,
        checkpointer=saver,
        store=store,
    )


def start_of(kind: str, backend: Backend) -> dict[str, Any]:
    """The thread's input, the files seeded where they live."""
    start: dict[str, Any] = {"messages": [{"role": "user", "content": "Edit /m.py."}]}
    if kind == "state":
        start["files"] = StateBackend.seed({"/m.py": SOURCE})
    if kind == "store":
        backend.write_bytes("/m.py", SOURCE.encode())
    return start


def report(values: dict[str, Any], kind: str, backend: Backend) -> dict[str, Any]:
    """The `task` results (status, text) and the text of /m.py after the resume."""
    text = (
        values["files"]["/m.py"]["content"]
        if kind == "state"
        else backend.read_bytes("/m.py").decode()
    )
    tasks = {
        m.tool_call_id: [m.status, m.text]
        for m in values["messages"]
        if isinstance(m, ToolMessage) and m.tool_call_id.startswith("t-")
    }
    return {"tasks": tasks, "text": text}


def main(phase: str, database: str, kind: str, root: str, kill: str, driver: str = "sync") -> None:
    if driver == "async":
        asyncio.run(amain(phase, database, kind, root, kill))
        return
    if kill == "mid":
        mid(phase, database, kind, root)
        return
    with storage(database, kind, root) as (saver, backend, store):
        if phase == "run":
            killing_at(kill)
            agent(backend, saver, store, *launching("a", "b")).invoke(
                start_of(kind, backend), CONFIG
            )
            return
        graph = agent(backend, saver, store, *launching("a", "b")[1:])
        graph.invoke(None, CONFIG)
        json.dump(report(graph.get_state(CONFIG).values, kind, backend), sys.stdout)


def mid(phase: str, database: str, kind: str, root: str) -> None:
    """`main` for a kill mid-subagent: subagent a alone, killed after its edit's step."""
    with storage(database, kind, root) as (saver, backend, store):
        if phase == "run":
            graph = agent(backend, saver, store, *launching("a"), mid="run")
            graph.invoke(start_of(kind, backend), CONFIG, durability="sync")
            return
        graph = agent(backend, saver, store, *launching("a")[1:], mid="resume")
        graph.invoke(None, CONFIG)
        json.dump(report(graph.get_state(CONFIG).values, kind, backend), sys.stdout)


async def amain(phase: str, database: str, kind: str, root: str, kill: str) -> None:
    """`main` on the async path: `ainvoke`, an `AsyncSqliteSaver` (local or state only)."""
    backend: Backend = StateBackend() if kind == "state" else LocalBackend(root)
    async with AsyncSqliteSaver.from_conn_string(database) as saver:
        if kill == "mid":  # subagent a alone, killed after its edit's step (see `mid`)
            if phase == "run":
                graph = agent(backend, saver, None, *launching("a"), mid="run")
                await graph.ainvoke(start_of(kind, backend), CONFIG, durability="sync")
                return
            graph = agent(backend, saver, None, *launching("a")[1:], mid="resume")
            await graph.ainvoke(None, CONFIG)
            values = (await graph.aget_state(CONFIG)).values
            json.dump(report(values, kind, backend), sys.stdout)
            return
        if phase == "run":
            killing_at(kill)
            graph = agent(backend, saver, None, *launching("a", "b"))
            await graph.ainvoke(start_of(kind, backend), CONFIG)
            return
        graph = agent(backend, saver, None, *launching("a", "b")[1:])
        await graph.ainvoke(None, CONFIG)
        values = (await graph.aget_state(CONFIG)).values
        json.dump(report(values, kind, backend), sys.stdout)


if __name__ == "__main__":
    main(*sys.argv[1:])
