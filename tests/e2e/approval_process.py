"""One process of an approval that spans two: start threads up to their interrupt, or resume.

    python -m tests.e2e.approval_process start|resume DATABASE ROOT

Each scenario is its own thread of one agent (`FilesystemMiddleware` in the default mode
over `LocalBackend(ROOT, execute=True)`, a SQLite checkpointer at DATABASE). `start`
runs each thread until it asks for approval and prints the action requests shown;
`resume` approves every pending ask and prints each thread's tool results, as JSON.
Nothing is shared between the two processes but the database and the files.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from langchain_fstools import FilesystemMiddleware, LocalBackend
from langchain_fstools.testing import ScriptedChatModel

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


def agent(script: list[AIMessage], root: str, saver: SqliteSaver) -> Any:
    middleware = FilesystemMiddleware(backend=LocalBackend(root, execute=True), mode="default")
    return create_agent(
        ScriptedChatModel(turns=script), middleware=[middleware], checkpointer=saver
    )


def main(phase: str, database: str, root: str) -> None:
    saver = SqliteSaver(sqlite3.connect(database, check_same_thread=False))
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
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main(*sys.argv[1:])
