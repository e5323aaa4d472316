"""One worker of a thread whose sandbox outlives it: start the thread, or resume it.

    python -m tests.integration.docker.thread_process start|resume FOLDER DOCKER_HOST IMAGE

Both phases build the same agent (`FilesystemMiddleware` in the default mode over
`SandboxBackend` on the thread's `DockerSandbox`, found through `ThreadSandboxes`) and
share only FOLDER's SQLite files (the store of sandbox ids and the checkpoints) and the
Docker Engine. `start` writes a file (approved here) and runs a command, which waits
for approval; `resume` approves that command and reads what it made. Each prints the
sandbox id it used, its thread's tool results, what still waits and the workspace's
files, as JSON.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import docker
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.sqlite import SqliteStore
from langgraph.types import Command

from langchain_fstools import FilesystemMiddleware
from langchain_fstools.backends.sandbox import SandboxBackend, ThreadSandboxes
from langchain_fstools.sandboxes.docker import DockerSandbox
from langchain_fstools.testing import ScriptedChatModel
from tests.integration.docker.engine import TEST_LIMITS

THREAD = "thread-1"
CONFIG: Any = {"configurable": {"thread_id": THREAD}}
APPROVE = Command(resume={"decisions": [{"type": "approve"}]})


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


SCRIPTS = {
    "start": [
        call("write_file", {"file_path": "/note.txt", "content": "from the first worker\n"}, "w"),
        call("execute", {"command": "cp note.txt copy.txt && echo copied"}, "x"),
    ],
    "resume": [call("read_file", {"file_path": "/copy.txt"}, "r"), AIMessage(content="done")],
}


def main(phase: str, folder: str, host: str, image: str) -> None:
    client = docker.DockerClient(base_url=host)
    store = SqliteStore(
        sqlite3.connect(
            Path(folder) / "store.sqlite", check_same_thread=False, isolation_level=None
        )
    )
    store.setup()
    sandboxes = ThreadSandboxes(
        create=lambda: DockerSandbox.create(
            image=image, limits=TEST_LIMITS, idle_timeout=600, client=client
        ),
        attach=lambda sandbox_id: DockerSandbox.attach(sandbox_id, client=client),
        store=store,
    )
    sandbox = sandboxes.get_or_create(THREAD)
    saver = SqliteSaver(
        sqlite3.connect(Path(folder) / "checkpoints.sqlite", check_same_thread=False)
    )
    middleware = FilesystemMiddleware(backend=SandboxBackend(sandbox), mode="default")
    graph = create_agent(
        ScriptedChatModel(turns=SCRIPTS[phase]), middleware=[middleware], checkpointer=saver
    )
    if phase == "start":
        graph.invoke({"messages": [("user", "go")]}, CONFIG)
        graph.invoke(APPROVE, CONFIG)  # the write; the command then waits
    else:
        graph.invoke(APPROVE, CONFIG)  # the command, asked in the other process
    state = graph.get_state(CONFIG)
    results = {
        m.tool_call_id: [m.status, m.content]
        for m in state.values["messages"]
        if isinstance(m, ToolMessage)
    }
    waiting = [i.value["action_requests"][0]["name"] for i in state.interrupts]
    files = sandbox.execute("ls").output.split()
    report = {"sandbox": sandbox.id, "results": results, "waiting": waiting, "files": files}
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main(*sys.argv[1:])
