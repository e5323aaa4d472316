"""One process of an approval that spans two: start threads up to their interrupt, or resume.

    python -m tests.e2e.approval_process start|resume DATABASE ROOT

Each scenario is its own thread of one agent (`FilesystemMiddleware` in the default mode
over `LocalBackend(ROOT, execute=True)`; the checkpointer is SQLite at the file
DATABASE, or PostgreSQL when DATABASE is a `postgresql://` URL). `start`
runs each thread until it asks for approval and prints the action requests shown;
`resume` approves every pending ask and prints each thread's tool results, as JSON.
Nothing is shared between the two processes but the database and the files.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from langchain_fstools import FilesystemMiddleware, LocalBackend
from langchain_fstools.testing import ScriptedChatModel

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from langgraph.checkpoint.base import BaseCheckpointSaver

PATCH_COMMAND = (
    "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: app.py\n@@\n-x = 1\n+x = 2\n"
    "*** End Patch\nEOF"
)

SCENARIOS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "delete-changed": [
        ("read_file", {"file_path": "/note.txt"}),
        ("apply_patch", {"patch": "*** Begin Patch\n*** Delete File: note.txt\n*** End Patch"}),
    ],
    "delete-unchanged": [
        ("read_file", {"file_path": "/note2.txt"}),
        ("apply_patch", {"patch": "*** Begin Patch\n*** Delete File: note2.txt\n*** End Patch"}),
    ],
    "new-file-changed": [("write_file", {"file_path": "/new.txt", "content": "hello\n"})],
    "new-file-unchanged": [("write_file", {"file_path": "/new2.txt", "content": "hello\n"})],
    "execute-patch-changed": [("execute", {"command": PATCH_COMMAND})],
    "execute-unchanged": [("execute", {"command": "echo ran > ran.txt"})],
}
"""Thread id → its turns, one tool call each (ids c1, c2, ...); the last one asks."""


def turns(calls: list[tuple[str, dict[str, Any]]]) -> list[AIMessage]:
    return [
        AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"c{n}"}])
        for n, (name, args) in enumerate(calls, 1)
    ]


EXPECTED = {
    "delete-changed": ("stale", "note.txt", "important, keep\n"),
    "delete-unchanged": ("success", "note2.txt", None),
    "new-file-changed": ("stale", "new.txt", "someone else's\n"),
    "new-file-unchanged": ("success", "new2.txt", "hello\n"),
    "execute-patch-changed": ("stale", "app.py", "x = 1\ny = 1\n"),
    "execute-unchanged": ("success", "ran.txt", "ran\n"),
}
"""Thread id → how its approved call ends, and the file it touched (None: removed)."""


def prepare(root: Path) -> None:
    """The workspace before the first process."""
    (root / "note.txt").write_text("tmp note\n")
    (root / "note2.txt").write_text("tmp note\n")
    (root / "app.py").write_text("x = 1\n")


def change_in_between(root: Path) -> None:
    """Other hands, between the interrupt and the answer: three of the files change."""
    (root / "note.txt").write_text("important, keep\n")
    (root / "new.txt").write_text("someone else's\n")
    (root / "app.py").write_text("x = 1\ny = 1\n")


def outcome(root: Path, results: dict[str, Any]) -> dict[str, tuple[str, str, str | None]]:
    """Per thread, as EXPECTED: the asking call's end (`stale` or its status) and the file."""
    ends = {}
    for thread, (_, name, _) in EXPECTED.items():
        status, content = results[thread][max(results[thread])]
        end = "stale" if "changed after the change was approved" in content else status
        path = root / name
        ends[thread] = (end, name, path.read_text() if path.exists() else None)
    return ends


@contextmanager
def checkpointer(database: str) -> Iterator[BaseCheckpointSaver[Any]]:
    """SQLite at a file, or PostgreSQL at a `postgresql://` URL (its tables set up)."""
    if database.startswith("postgresql://"):
        with PostgresSaver.from_conn_string(database) as saver:
            saver.setup()
            yield saver
    else:
        yield SqliteSaver(sqlite3.connect(database, check_same_thread=False))


def agent(script: list[AIMessage], root: str, saver: BaseCheckpointSaver[Any]) -> Any:
    middleware = FilesystemMiddleware(backend=LocalBackend(root, execute=True), mode="default")
    return create_agent(
        ScriptedChatModel(turns=script), middleware=[middleware], checkpointer=saver
    )


def main(phase: str, database: str, root: str) -> None:
    with checkpointer(database) as saver:
        json.dump(run_phase(phase, saver, root), sys.stdout)


def run_phase(phase: str, saver: BaseCheckpointSaver[Any], root: str) -> dict[str, Any]:
    """Start every scenario's thread, or resume it approving; the report."""
    report: dict[str, Any] = {}
    for thread, calls in SCENARIOS.items():
        config: Any = {"configurable": {"thread_id": thread}}
        if phase == "start":
            result = agent(turns(calls), root, saver).invoke(
                {"messages": [("user", "go")]}, config, version="v2"
            )
            report[thread] = [i.value["action_requests"] for i in result.interrupts]
        else:
            graph = agent([AIMessage(content="done")], root, saver)
            graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
            messages = graph.get_state(config).values["messages"]
            report[thread] = {
                m.tool_call_id: [m.status, m.content]
                for m in messages
                if isinstance(m, ToolMessage)
            }
    return report


if __name__ == "__main__":
    main(*sys.argv[1:])
