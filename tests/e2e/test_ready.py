"""`execute(background=True, ready=...)`: a start that waits until the process is ready.

Through `create_agent` with a scripted model on a `LocalBackend` with the default
sandbox: a server that listens only after a second is asked by the very next command
(its port probed inside the session's own network namespace); a line of output, a
bound that passes and a process that ends first.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_fstools import FilesystemMiddleware, LocalBackend
from langchain_fstools.shell.sandbox.sandbox import find_bwrap
from langchain_fstools.testing import ScriptedChatModel, tool_call

pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="needs bubblewrap")

PORT = 19000 + os.getpid() % 1000
"""A port inside the sandbox's own network namespace (no host port is used)."""

SLOW_SERVER = (
    "python3 -c 'import socket, time\n"
    "time.sleep(1)\n"
    f'server = socket.create_server(("127.0.0.1", {PORT}))\n'
    "while True:\n"
    "    client, _ = server.accept()\n"
    '    client.sendall(b"hello\\n")\n'
    "    client.close()'"
)
"""Listens on `PORT` a second after it starts; says hello to each client."""

ASK = (
    "python3 -c 'import socket\n"
    f'print(socket.create_connection(("127.0.0.1", {PORT})).recv(16).decode())\''
)
"""One connection, no retry: it fails unless the server listens already."""


def _messages(backend: LocalBackend, *turns: Any) -> list[ToolMessage]:
    agent = create_agent(
        ScriptedChatModel(turns=[*turns, "done"]),
        middleware=[FilesystemMiddleware(backend=backend)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "ready"}}
    result = agent.invoke({"messages": [("user", "go")]}, config)
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


def test_a_server_started_with_ready_port_answers_the_next_command(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path, execute=True)
    try:
        started, asked = _messages(
            backend,
            tool_call("execute", command=SLOW_SERVER, background=True, ready=PORT, timeout=10),
            tool_call("execute", command=ASK),
        )
    finally:
        backend.close()
    assert started.status == "success", started.content
    assert f"it is ready: port {PORT} accepts connections" in str(started.content)
    assert started.artifact["ready"] is True
    assert str(asked.content).startswith("hello"), asked.content


def test_ready_regex_waits_for_the_line_printed_after_a_delay(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path, execute=True)
    command = "echo starting; sleep 1; echo 'listening on 8000' >&2; sleep 30"
    try:
        started, read = _messages(
            backend,
            tool_call("execute", command=command, background=True, ready="listening on \\d+"),
            tool_call("process", action="read", process_id="p1"),
        )
    finally:
        backend.close()
    assert started.status == "success", started.content
    assert "it is ready: it printed a line matching 'listening on \\\\d+'" in str(started.content)
    assert "listening on 8000" in str(read.content)  # the output stays for the model


def test_a_process_never_ready_is_reported_running_past_the_bound(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path, execute=True)
    try:
        started, listed = _messages(
            backend,
            tool_call("execute", command="sleep 30", background=True, ready=PORT, timeout=1),
            tool_call("process", action="list"),
        )
    finally:
        backend.close()
    assert started.status == "success", started.content
    assert (
        f"after 1 s it is not ready yet (port {PORT} does not accept connections) and still runs"
    ) in str(started.content)
    assert started.artifact["ready"] is False
    assert "p1 is running" in str(listed.content)


def test_a_process_that_exits_before_ready_is_an_error_with_its_output(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path, execute=True)
    command = "echo 'address already in use' >&2; exit 3"
    try:
        (started,) = _messages(
            backend,
            tool_call("execute", command=command, background=True, ready="listening", timeout=10),
        )
    finally:
        backend.close()
    assert started.status == "error"
    assert "[stderr] address already in use" in str(started.content)
    assert "process p1 exited with code 3 before it was ready" in str(started.content)


def test_ready_without_background_is_refused_with_a_sentence(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path, execute=True)
    try:
        (started,) = _messages(backend, tool_call("execute", command="true", ready=8000))
    finally:
        backend.close()
    assert started.status == "error"
    assert "add background=true" in str(started.content)


@pytest.mark.parametrize(
    ("ready", "sentence"), [("(", "'(' is not a regex"), (70000, "70000 is not a TCP port")]
)
def test_a_bad_ready_is_refused_before_anything_starts(
    tmp_path: Path, ready: object, sentence: str
) -> None:
    backend = LocalBackend(tmp_path, execute=True)
    try:
        started, listed = _messages(
            backend,
            tool_call("execute", command="sleep 30", background=True, ready=ready),
            tool_call("process", action="list"),
        )
    finally:
        backend.close()
    assert started.status == "error"
    assert sentence in str(started.content)
    assert "p1" not in str(listed.content)
