"""Run one scripted `execute` call through `create_agent` and report what came back."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_fstools import FilesystemMiddleware
from langchain_fstools.testing import ScriptedChatModel

if TYPE_CHECKING:
    from langchain_fstools.backends.protocol import Backend


@dataclass(frozen=True)
class Outcome:
    """What one `execute` call did: the tool's message, or the question it asked."""

    message: ToolMessage | None
    asked: bool

    @property
    def text(self) -> str:
        return "" if self.message is None else str(self.message.content)

    @property
    def ran(self) -> bool:
        """Whether the command ran to an answer (not refused, not waiting for a person)."""
        return self.message is not None and self.message.status != "error"


def run_command(
    backend: Backend, command: str, *, timeout: float | None = None, **middleware: Any
) -> Outcome:
    """Let a scripted model call `execute` with `command`; the agent runs end to end."""
    args: dict[str, Any] = {"command": command}
    if timeout is not None:
        args["timeout"] = timeout
    call = AIMessage(content="", tool_calls=[{"name": "execute", "args": args, "id": "attack"}])
    agent = create_agent(
        ScriptedChatModel(turns=[call, AIMessage(content="done")]),
        middleware=[FilesystemMiddleware(backend=backend, **middleware)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    result = agent.invoke({"messages": [("user", "go")]}, config, version="v2")
    messages = [m for m in result.value["messages"] if isinstance(m, ToolMessage)]
    asked = bool(result.interrupts)
    return Outcome(messages[-1] if messages else None, asked)


def surviving_sleepers(duration: str, *, grace: float = 2.0) -> list[int]:
    """Live `sleep <duration>` processes left after waiting up to `grace` seconds.

    A test starts sleepers with a duration no other process uses, so any found are its own.
    """
    deadline = time.monotonic() + grace
    while (found := _sleepers(duration)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def _sleepers(duration: str) -> list[int]:
    wanted = f"sleep\0{duration}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == wanted:
                    state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                    if state not in {"Z", "X"}:
                        found.append(int(entry.name))
            except OSError:
                continue
    return found
