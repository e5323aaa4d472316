"""Background processes and a shell that remembers, on the SSH host (a real sshd).

The host's supervisor runs the processes: a loopback web server answers a later command
of the same thread, its log is read, input reaches an interactive program, kill ends it;
`cd` and `export` carry from one command to the next of a session and not to another;
closing the backend leaves no process on the host; a host without Python 3 refuses.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

import langchain_fstools
from langchain_fstools import FilesystemMiddleware
from langchain_fstools.backends.ssh import SSHBackend, remote_processes
from langchain_fstools.backends.ssh.remote_processes import RemoteProcess, SSHProcesses
from langchain_fstools.errors import InvalidArgument, ProcessLimit
from langchain_fstools.shell.session.session import MAX_PROCESSES, in_session
from langchain_fstools.testing import ScriptedChatModel, tool_call
from tests.integration.ssh.conftest import connect
from tests.integration.ssh.sshd import Sshd

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

PORT = 19000 + os.getpid() % 1000
"""The port the remote web server listens on (127.0.0.1 of the host, here this machine)."""

LIMIT = 10_000
SUPERVISOR_LINE = "A supervisor of background processes on another machine"
"""The first line of `backends.host_supervisor`'s docstring, in its command line (`-c SOURCE`)."""


def _table(backend: SSHBackend) -> SSHProcesses:
    return backend.processes()


def _until_output(process: RemoteProcess, wanted: str, seconds: float = 20) -> str:
    """Read `process` until its output holds `wanted` (or `seconds` passed)."""
    seen = ""
    deadline = time.monotonic() + seconds
    while wanted not in seen and time.monotonic() < deadline:
        seen += process.read().text
        time.sleep(0.05)
    return seen


def _host_process_table(sshd: Sshd, root: Path) -> str:
    """The host's process table, as seen over a fresh connection.

    The supervisors of other hosts are left out (other tests' sshd, Docker sandboxes'
    keepers run the same program on this machine): a supervisor counts only when this
    sshd serves it. Every other process counts wherever it is (one that left its
    parent is still a leak).
    """
    assert sshd.process is not None
    with connect(sshd, root) as fresh:
        table = fresh.execute(
            "ps -eww -o pid=,ppid=,args=", timeout=20, output_limit=1_000_000
        ).output
    rows = [[*row.split(None, 2), ""] for row in table.splitlines()]
    parents = {pid: ppid for pid, ppid, *_ in rows}
    served = {str(sshd.process.pid)}
    while grown := {pid for pid, ppid in parents.items() if ppid in served} - served:
        served |= grown
    return "\n".join(
        args for pid, _, args, *_ in rows if pid in served or SUPERVISOR_LINE not in args
    )


def _started(table: SSHProcesses, command: str, **options: Any) -> RemoteProcess:
    started = table.start(command, output_limit=LIMIT, **options)
    assert isinstance(started, RemoteProcess)
    return started


def test_cd_and_export_carry_within_a_session_and_not_to_another(
    ssh_backend: SSHBackend, ssh_root: Path
) -> None:
    (ssh_root / "sub").mkdir()
    moved = ssh_backend.execute(
        "cd sub && export GREETING='hi there'", timeout=20, output_limit=LIMIT
    )
    assert moved.directory is not None
    assert moved.directory.endswith("/remote/sub")
    after = ssh_backend.execute('echo "$GREETING"; pwd', timeout=20, output_limit=LIMIT)
    assert after.output == f"hi there\n{moved.directory}\n"
    assert after.directory is None  # it stayed where it started
    with in_session("another thread"):
        other = ssh_backend.execute('echo "[$GREETING]"; pwd', timeout=20, output_limit=LIMIT)
    assert other.output == f"[]\n{ssh_root.resolve()}\n"


def test_a_removed_directory_sends_the_next_command_to_the_root(
    ssh_backend: SSHBackend, ssh_root: Path
) -> None:
    (ssh_root / "gone").mkdir()
    ssh_backend.execute("cd gone", timeout=20, output_limit=LIMIT)
    (ssh_root / "gone").rmdir()
    result = ssh_backend.execute("pwd", timeout=20, output_limit=LIMIT)
    assert result.output == f"{ssh_root.resolve()}\n"


def test_a_background_server_answers_a_later_command_and_logs_it(
    ssh_backend: SSHBackend,
) -> None:
    table = _table(ssh_backend)
    server = _started(table, f"python3 -u -m http.server {PORT} --bind 127.0.0.1")
    assert f"port {PORT}" in _until_output(server, f"port {PORT}")
    ask = (
        'python3 -c "import urllib.request, time\n'
        "for _ in range(100):\n"
        "    try:\n"
        f"        print(urllib.request.urlopen('http://127.0.0.1:{PORT}/').status); break\n"
        '    except OSError: time.sleep(0.1)"'
    )
    assert ssh_backend.execute(ask, timeout=30, output_limit=LIMIT).output == "200\n"
    assert '"GET / HTTP/1.1" 200' in _until_output(server, "GET /")
    assert [p.ident for p in table.all()] == [server.ident]
    server.kill()
    assert (server.running, server.ended_by, server.exit_code) == (False, "kill", None)
    assert table.get(server.ident).running is False


def test_input_reaches_the_program_through_a_pipe_and_a_terminal(
    ssh_backend: SSHBackend,
) -> None:
    table = _table(ssh_backend)
    reverser = _started(table, "python3 -c 'print(input()[::-1])'")
    reverser.write(b"hello\n")
    assert reverser.wait(20)
    output = reverser.read()
    assert (output.text, output.running, output.exit_code) == ("olleh\n", False, 0)
    with pytest.raises(BrokenPipeError):
        reverser.write(b"late\n")
    terminal = _started(
        table, "python3 -c 'import sys; print(sys.stdin.isatty(), input())'", terminal=True
    )
    terminal.write(b"typed\n")
    assert terminal.wait(20)
    assert "True typed" in terminal.read().text


def test_output_is_kept_as_a_bounded_window_on_the_host(ssh_backend: SSHBackend) -> None:
    table = _table(ssh_backend)
    chatty = table.start(
        "python3 -c \"print('a' * 50000 + 'END')\"", output_limit=1000, terminal=False
    )
    assert isinstance(chatty, RemoteProcess)
    assert chatty.wait(20)
    output = chatty.read()
    assert output.skipped > 45_000
    assert output.text.startswith("aaaa")
    assert output.text.endswith("aEND\n")
    assert len(output.text) < 1200
    assert chatty.read().text == ""  # the window starts again empty


def test_a_command_past_yield_after_moves_to_the_background(
    ssh_backend: SSHBackend, ssh_root: Path
) -> None:
    (ssh_root / "sub").mkdir()
    table = _table(ssh_backend)
    quick = table.run("cd sub; echo quick", timeout=30, output_limit=LIMIT, yield_after=20)
    assert (quick.output, quick.exit_code, quick.process_id) == ("quick\n", 0, None)
    assert quick.directory is not None
    assert quick.directory.endswith("/sub")
    assert table.all() == []  # it ended in time: no background process
    slow = table.run("echo started; sleep 600", timeout=900, output_limit=LIMIT, yield_after=1)
    assert slow.process_id == "p2"
    assert slow.output == "started\n"
    moved = table.get("p2")
    assert moved.running
    moved.kill()
    assert not moved.running
    pwd = ssh_backend.execute("pwd", timeout=20, output_limit=LIMIT)
    assert pwd.output.rstrip("\n").endswith("/sub")


def test_sessions_have_tables_of_their_own_and_a_limit(ssh_backend: SSHBackend) -> None:
    with in_session("one"):
        ones = _table(ssh_backend)
        first = _started(ones, "sleep 600")
    with in_session("two"):
        twos = _table(ssh_backend)
        with pytest.raises(InvalidArgument, match="not a process of this thread"):
            twos.get(first.ident)
        sleepers = [_started(twos, "sleep 600") for _ in range(MAX_PROCESSES)]
        with pytest.raises(ProcessLimit):
            twos.start("sleep 600", output_limit=LIMIT)
    assert [p.ident for p in sleepers][:2] == ["p1", "p2"]
    assert ones.get("p1") is first


def test_a_process_that_ends_as_it_starts_is_seen_to_end(sshd: Sshd, ssh_root: Path) -> None:
    # its end can reach the agent in the same chunk as the answer to its start
    with connect(sshd, ssh_root) as backend:
        table = _table(backend)
        for _ in range(3):
            quick = [_started(table, "true") for _ in range(MAX_PROCESSES)]
            assert all(process.wait(10) for process in quick), [p.ident for p in quick]
            assert {process.exit_code for process in quick} == {0}


def test_an_unread_process_ends_at_the_idle_limit(
    sshd: Sshd, ssh_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote_processes, "IDLE_LIMIT", 0.5)
    with connect(sshd, ssh_root) as backend:
        table = _table(backend)
        sleeper = _started(table, "sleep 600")
        assert sleeper.wait(30)
        assert (sleeper.ended_by, sleeper.exit_code) == ("idle", None)
        time.sleep(2)  # the supervisor, idle too, gives its channel back; a start opens one
        again = _started(table, "echo again")
        assert again.wait(30)
        time.sleep(2)  # idle again, but holding output nobody read: it stays for the read
        assert (again.ident, again.read().text) == ("p2", "again\n")


def test_closing_the_backend_leaves_no_process_on_the_host(sshd: Sshd, ssh_root: Path) -> None:
    backend = connect(sshd, ssh_root)
    mark = f"{os.getpid() % 1000 + 7000}.5"
    table = _table(backend)
    _started(table, f"sleep {mark}1 & sleep {mark}2")
    with in_session("another thread"):
        _started(_table(backend), f"sleep {mark}3", terminal=True)
    before = _host_process_table(sshd, ssh_root)
    assert all(f"sleep {mark}{n}" in before for n in (1, 2, 3)), before
    assert "A supervisor of background processes on another machine" in before
    backend.close()
    after = _host_process_table(sshd, ssh_root)
    assert f"sleep {mark}" not in after
    assert "A supervisor of background processes on another machine" not in after
    assert all(not p.running and p.ended_by == "session" for p in table.all())


def test_an_agent_process_that_exits_leaves_no_process_on_the_host(
    sshd: Sshd, ssh_root: Path
) -> None:
    mark = f"{os.getpid() % 1000 + 8000}.25"
    agent = f"""
import os
from langchain_fstools.backends.ssh import SSHBackend
backend = SSHBackend(
    "127.0.0.1", root_dir={str(ssh_root)!r}, port={sshd.port}, username={sshd.username!r},
    client_keys=[{str(sshd.client_key)!r}], use_agent=False, known_hosts={str(sshd.known_hosts)!r},
)
backend.processes().start("sleep {mark}1 & sleep {mark}2", output_limit=1000)
print(backend.execute("ps -eww -o args=", timeout=20, output_limit=1_000_000).output, flush=True)
os._exit(0)  # no close(): the connection just ends with the process
"""
    source = str(Path(langchain_fstools.__file__).parents[1])
    ran = subprocess.run(
        [sys.executable, "-c", agent],
        env={**os.environ, "PYTHONPATH": source},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert f"sleep {mark}1" in ran.stdout, ran.stderr
    for _ in range(100):  # sshd sees the connection close; the supervisor then kills all
        table = _host_process_table(sshd, ssh_root)
        if f"sleep {mark}" not in table:
            break
        time.sleep(0.2)
    assert f"sleep {mark}" not in table


def test_a_host_without_python_refuses_background_processes(sshd: Sshd, ssh_root: Path) -> None:
    with connect(sshd, ssh_root, python_path="/nonexistent/python3") as backend:
        table = _table(backend)
        with pytest.raises(InvalidArgument, match="no Python 3 at '/nonexistent/python3'"):
            table.start("sleep 1", output_limit=LIMIT)
        with pytest.raises(InvalidArgument) as refused:
            table.run("true", timeout=10, output_limit=LIMIT, yield_after=1)
        assert refused.value.argument == "yield_after"
        assert backend.execute("echo fine", timeout=20, output_limit=LIMIT).output == "fine\n"


def _messages(backend: SSHBackend, *turns: Any) -> list[ToolMessage]:
    agent = create_agent(
        ScriptedChatModel(turns=[*turns, "done"]),
        middleware=[FilesystemMiddleware(backend=backend)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "ssh-processes"}}
    result = agent.invoke({"messages": [("user", "go")]}, config)
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


def test_through_an_agent_the_tools_start_read_write_and_kill(
    ssh_backend: SSHBackend, ssh_root: Path
) -> None:
    (ssh_root / "sub").mkdir()
    started, wrote, moved, carried, read, killed = _messages(
        ssh_backend,
        tool_call("execute", command="cat", background=True),
        tool_call("process", action="write", process_id="p1", input="ping\n"),
        tool_call("execute", command="cd sub && export SEEN=yes"),
        tool_call("execute", command='echo "$SEEN"; pwd'),
        tool_call("process", action="read", process_id="p1"),
        tool_call("process", action="kill", process_id="p1"),
    )
    assert started.artifact["process_id"] == "p1"
    assert "Wrote 5 bytes to p1" in str(wrote.content)
    assert "The shell is now in" in str(moved.content)
    assert str(carried.content).startswith("yes\n")
    assert "/sub\n" in str(carried.content)
    assert "ping" in str(read.content)
    assert "p1 killed" in str(killed.content)


def test_through_an_agent_a_host_without_python_answers_with_an_error(
    sshd: Sshd, ssh_root: Path
) -> None:
    with connect(sshd, ssh_root, python_path="/nonexistent/python3") as backend:
        (refused,) = _messages(backend, tool_call("execute", command="sleep 1", background=True))
    assert refused.status == "error"
    assert "no Python 3" in str(refused.content)


READY_PORT = PORT + 1
"""The port a server started with `ready=` listens on (apart from the web server's)."""

SLOW_SERVER = (
    "python3 -c 'import socket, time\n"
    "time.sleep(1)\n"
    f'server = socket.create_server(("127.0.0.1", {READY_PORT}))\n'
    "while True:\n"
    "    client, _ = server.accept()\n"
    '    client.sendall(b"hello\\n")\n'
    "    client.close()'"
)
"""Listens on `READY_PORT` of the host a second after it starts; says hello to each client."""

ASK = (
    "python3 -c 'import socket\n"
    f'print(socket.create_connection(("127.0.0.1", {READY_PORT})).recv(16).decode())\''
)
"""One connection, no retry: it fails unless the server listens already."""


def test_through_an_agent_ready_port_waits_until_the_host_port_listens(
    ssh_backend: SSHBackend,
) -> None:
    started, asked = _messages(
        ssh_backend,
        tool_call("execute", command=SLOW_SERVER, background=True, ready=READY_PORT, timeout=10),
        tool_call("execute", command=ASK),
    )
    assert started.status == "success", started.content
    assert f"it is ready: port {READY_PORT} accepts connections" in str(started.content)
    assert started.artifact["ready"] is True
    assert str(asked.content).startswith("hello"), asked.content


def test_through_an_agent_ready_regex_waits_for_a_line_printed_later(
    ssh_backend: SSHBackend,
) -> None:
    command = "echo starting; sleep 1; echo 'listening on 8000' >&2; sleep 30"
    started, read = _messages(
        ssh_backend,
        tool_call("execute", command=command, background=True, ready="listening on \\d+"),
        tool_call("process", action="read", process_id="p1"),
    )
    assert started.status == "success", started.content
    assert "it is ready: it printed a line matching 'listening on \\\\d+'" in str(started.content)
    assert "listening on 8000" in str(read.content)  # the output stays for the model


def test_a_line_already_in_the_hosts_window_is_ready_at_once(ssh_backend: SSHBackend) -> None:
    table = _table(ssh_backend)
    process = _started(table, "echo 'serving on 9'; sleep 30")
    time.sleep(0.5)  # the line reaches the host's window; nobody read it
    began = time.monotonic()
    assert process.wait_for_line(re.compile(r"^serving on \d$"), 20)
    assert time.monotonic() - began < 10
    assert "serving on 9" in process.read().text  # the window is left to read
    process.kill()


def test_the_end_of_the_output_on_the_host_stops_the_wait(ssh_backend: SSHBackend) -> None:
    table = _table(ssh_backend)
    process = _started(table, "sleep 0.5; echo 'address already in use' >&2; exit 3")
    began = time.monotonic()
    assert not process.wait_for_line(re.compile("listening"), 30)
    assert time.monotonic() - began < 20  # the end, not the 30 s bound, stopped it


def test_through_an_agent_a_process_never_ready_runs_on_past_the_bound(
    ssh_backend: SSHBackend,
) -> None:
    started, listed = _messages(
        ssh_backend,
        tool_call("execute", command="sleep 30", background=True, ready=READY_PORT, timeout=1),
        tool_call("process", action="list"),
    )
    assert started.status == "success", started.content
    assert (
        f"after 1 s it is not ready yet (port {READY_PORT} does not accept connections)"
        " and still runs"
    ) in str(started.content)
    assert "p1 is running" in str(listed.content)


def test_through_an_agent_a_process_that_exits_before_ready_is_an_error(
    ssh_backend: SSHBackend,
) -> None:
    command = "echo 'address already in use' >&2; exit 3"
    (started,) = _messages(
        ssh_backend,
        tool_call("execute", command=command, background=True, ready="listening", timeout=10),
    )
    assert started.status == "error"
    assert "address already in use" in str(started.content)
    assert "process p1 exited with code 3 before it was ready" in str(started.content)
