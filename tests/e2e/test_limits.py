"""No command can starve the agent or reach past the sandbox's sockets (issue 36).

End to end through `create_agent` with a scripted model, as root (CI); the same as an
unprivileged user: tests/integration/test_sandbox_unprivileged.py. Each test sets small
limits so that hitting them is quick, and bounds its command with a timeout.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langchain_fstools import FileToolkit, Limits, LocalBackend, Sandbox
from langchain_fstools.search.ripgrep import find_ripgrep
from langchain_fstools.shell.sandbox.limits import MiB, cgroup_support
from langchain_fstools.testing import tool_call
from tests.e2e.agent_runs import Outcome, run_command

METHODS = ["bwrap", "landlock"]


def _call(name: str, **args: object) -> Any:
    """The tool call a model would make (for invoking a tool of a toolkit)."""
    return tool_call(name, **args).tool_calls[0]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def _run(root: Path, command: str, timeout: float = 60, **sandbox: object) -> Outcome:
    backend = LocalBackend(root, execute=True, sandbox=Sandbox(**sandbox))  # type: ignore[arg-type]
    return run_command(backend, command, timeout=timeout, mode="bypass")


def test_a_tmpfs_fill_stops_at_its_size(workspace: Path) -> None:
    outcome = _run(
        workspace,
        "for d in /tmp /dev/shm; do head -c 200M /dev/zero > $d/fill; echo $d $? $(du -m $d/fill); done",
        limits=Limits(tmp_size=64 * MiB),
    )
    assert outcome.ran, outcome.text
    assert outcome.text.count("No space left on device") == 2
    assert "/tmp 1 64 /tmp/fill" in outcome.text
    assert "/dev/shm 1 64 /dev/shm/fill" in outcome.text


def test_writing_past_what_a_command_may_change_stops_it_and_keeps_nothing(
    workspace: Path,
) -> None:
    # files of 1 MiB, one after another, into the workspace (the command's view): the
    # third takes the upper layer past 2 MiB; the loop would run until the deadline.
    # (Landlock alone gives commands no view: they write in place, bounded by file_size.)
    fill = "i=0; while true; do i=$((i+1)); head -c 1M /dev/urandom > f$i; sleep 0.05; done"
    outcome = _run(workspace, fill, timeout=30, limits=Limits(changed_bytes=2 * MiB))
    assert outcome.ran, outcome.text
    assert "nothing it changed was kept" in outcome.text
    assert "limit on what one command may write (2 MiB)" in outcome.text
    assert "Limits(changed_bytes=...)" in outcome.text
    assert list(workspace.iterdir()) == []


def test_a_command_that_writes_past_the_limit_and_ends_at_once_keeps_nothing(
    workspace: Path,
) -> None:
    # done before the next check a few times a second: the end is checked too
    outcome = _run(workspace, "head -c 3M /dev/zero > big", limits=Limits(changed_bytes=2 * MiB))
    assert "limit on what one command may write (2 MiB)" in outcome.text, outcome.text
    assert list(workspace.iterdir()) == []
    # the same in the background: read once it ended, before its reader checked again
    sandbox = Sandbox(limits=Limits(changed_bytes=2 * MiB))
    backend = LocalBackend(workspace, execute=True, sandbox=sandbox)
    tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
    try:
        command = "head -c 3M /dev/zero > big"
        tools["execute"].invoke(_call("execute", command=command, background=True))
        table = backend.processes()
        assert table is not None
        deadline = time.monotonic() + 10
        while table.get("p1").running and time.monotonic() < deadline:
            time.sleep(0.02)
        read = tools["process"].invoke(_call("process", action="read", process_id="p1"))
    finally:
        backend.close()
    assert "limit on what one command may write (2 MiB)" in str(read.content), read.content
    assert list(workspace.iterdir()) == []


def test_a_sparse_file_counts_at_its_apparent_size(workspace: Path) -> None:
    # `truncate` takes no disk here, but as much as it says wherever it is copied
    outcome = _run(workspace, "truncate -s 1G big", limits=Limits(changed_bytes=64 * MiB))
    assert "limit on what one command may write (64 MiB)" in outcome.text, outcome.text
    assert list(workspace.iterdir()) == []
    sandbox = Sandbox(limits=Limits(changed_bytes=64 * MiB))
    backend = LocalBackend(workspace, execute=True, sandbox=sandbox)
    tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
    try:
        tools["execute"].invoke(_call("execute", command="truncate -s 1G big", background=True))
        table = backend.processes()
        assert table is not None
        deadline = time.monotonic() + 10
        while table.get("p1").running and time.monotonic() < deadline:
            time.sleep(0.02)
        read = tools["process"].invoke(_call("process", action="read", process_id="p1"))
    finally:
        backend.close()
    assert "limit on what one command may write (64 MiB)" in str(read.content), read.content
    assert list(workspace.iterdir()) == []


def _until_none_runs(tools: dict[str, Any], seconds: float = 30) -> None:
    """Wait until the process tool lists no running process (at most `seconds`)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        listed = tools["process"].invoke(_call("process", action="list"))
        if "is running" not in str(listed.content):
            return
        time.sleep(0.1)


def test_a_background_process_past_what_it_may_change_is_stopped_and_keeps_nothing(
    workspace: Path,
) -> None:
    # the same loop, started in the background: its reader checks its view, and the read
    # that follows keeps what an earlier read committed, and nothing the limit stopped
    fill = "i=0; while true; do i=$((i+1)); head -c 1M /dev/urandom > f$i; sleep 0.05; done"
    sandbox = Sandbox(limits=Limits(changed_bytes=2 * MiB))
    backend = LocalBackend(workspace, execute=True, sandbox=sandbox)
    tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
    try:
        first = tools["execute"].invoke(
            _call("execute", command="echo kept > kept.txt; sleep 1; " + fill, background=True)
        )
        assert first.artifact["process_id"] == "p1"
        time.sleep(0.5)
        early = tools["process"].invoke(_call("process", action="read", process_id="p1"))
        assert "A /kept.txt" in str(early.content), early.content
        _until_none_runs(tools)
        late = tools["process"].invoke(_call("process", action="read", process_id="p1"))
    finally:
        backend.close()
    text = str(late.content)
    assert "limit on what one command may write (2 MiB)" in text, text
    assert "Limits(changed_bytes=...)" in text
    assert sorted(path.name for path in workspace.iterdir()) == ["kept.txt"]


@pytest.mark.parametrize("method", METHODS)
def test_a_memory_bomb_is_stopped_and_named(workspace: Path, method: str) -> None:
    """Several processes under the per-process limit still meet the command's own."""
    bomb = (
        "for i in 1 2 3 4 5 6; do python3 -c 'x = bytearray(90 * 2**20); import time;"
        " time.sleep(3)' & done; wait; python3 -c 'bytearray(400 * 2**20)' 2>&1 | tail -1"
    )
    outcome = _run(workspace, bomb, method=method, limits=Limits(memory=256 * MiB))
    assert outcome.ran, outcome.text
    assert "MemoryError" in outcome.text  # one process over the limit: its own error
    if cgroup_support() != "none":  # six of them: the cgroup's OOM killer, named
        assert "ran out of memory at the sandbox's memory limit (256 MiB)" in outcome.text
        assert "Limits(memory=...)" in outcome.text


FORK_LOOP = """python3 -c '
import os, time
while True:
    try:
        os.fork()
    except OSError:
        open("saturated", "a").close()
        time.sleep(0.05)
'"""


@pytest.mark.parametrize("method", METHODS)
def test_a_fork_loop_stops_at_the_process_limit_and_the_host_still_starts_rg(
    workspace: Path, method: str
) -> None:
    if cgroup_support() == "none" and method == "landlock":
        pytest.skip("without a cgroup, Landlock alone holds no process limit")
    host: list[subprocess.CompletedProcess[bytes]] = []

    rg = find_ripgrep()
    assert rg is not None

    def start_rg_once_saturated() -> None:
        until = time.monotonic() + 60
        while not (workspace / "saturated").exists() and time.monotonic() < until:
            time.sleep(0.05)
        host.append(subprocess.run([rg, "--version"], capture_output=True, check=False))

    watcher = threading.Thread(target=start_rg_once_saturated)
    watcher.start()
    outcome = _run(
        workspace,
        FORK_LOOP,
        timeout=8,
        method=method,
        workspace="direct",
        limits=Limits(processes=32),
    )
    watcher.join()
    assert (workspace / "saturated").exists()
    assert [done.returncode for done in host] == [0]
    assert "did not finish within 8 seconds" in outcome.text
    if cgroup_support() != "none":
        assert "process limit (32 processes)" in outcome.text


@pytest.fixture
def host_socket() -> Iterator[tuple[socket.socket, str]]:
    folder = Path(f"/var/tmp/fstools-dgram-{os.getpid()}")
    folder.mkdir(exist_ok=True)
    path = folder / "s"
    path.unlink(missing_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(str(path))
    server.settimeout(0)
    yield server, str(path)
    server.close()
    path.unlink(missing_ok=True)
    folder.rmdir()


SEND_DATAGRAM = (
    "python3 -c 'import socket, sys; a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM);"
    ' a.sendto(b"from-the-sandbox", sys.argv[1]); print("sent")\' '
)


@pytest.mark.parametrize("method", [*METHODS, "none"])
def test_no_datagram_reaches_a_host_socket(
    workspace: Path, host_socket: tuple[socket.socket, str], method: str
) -> None:
    server, path = host_socket
    command = SEND_DATAGRAM + path
    if method == "none":  # the control: unconfined, the datagram arrives
        backend = LocalBackend(workspace, execute=True, sandbox=None)
        outcome = run_command(backend, command, timeout=30, mode="bypass")
        assert "sent" in outcome.text
        assert server.recv(100) == b"from-the-sandbox"
        return
    outcome = _run(workspace, command, timeout=30, method=method)
    assert "PermissionError" in outcome.text
    with pytest.raises(BlockingIOError):
        server.recv(100)


@pytest.mark.parametrize("method", METHODS)
def test_a_vsock_socket_is_refused_without_the_network(workspace: Path, method: str) -> None:
    outcome = _run(
        workspace,
        "python3 -c 'import socket; socket.socket(40, socket.SOCK_STREAM); print(\"made\")'",
        timeout=30,
        method=method,
    )
    assert "PermissionError" in outcome.text
    assert "made" not in outcome.text


KEYCTL = (
    "python3 -c 'import ctypes, os; libc = ctypes.CDLL(None, use_errno=True);"
    " r = libc.syscall(250, 0, -3, 1); print(r if r >= 0 else os.strerror(ctypes.get_errno()))'"
)


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="keyctl's number here is x86-64's")
def test_landlock_alone_cannot_read_the_agents_keyring(workspace: Path) -> None:
    boxed = _run(workspace, KEYCTL, timeout=30, method="landlock")
    assert "Operation not permitted" in boxed.text
    unconfined = run_command(
        LocalBackend(workspace, execute=True, sandbox=None), KEYCTL, timeout=30, mode="bypass"
    )
    assert unconfined.text.split("\n")[0].lstrip("-").isdigit()  # the control: it answers


# ----- processes get what they expect -----------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_a_closed_pipe_ends_its_writer_quietly(workspace: Path, method: str) -> None:
    """SIGPIPE at its default (Python ignores it): `yes` ends, and says nothing."""
    outcome = _run(workspace, "yes | head -1; echo ${PIPESTATUS[0]}", method=method)
    assert outcome.ran, outcome.text
    assert outcome.text.split("\n")[:2] == ["y", "141"], outcome.text  # 128 + SIGPIPE
    assert "Broken pipe" not in outcome.text


LIMITED = [
    (
        "head -c 2M /dev/zero > big.bin; echo went on",
        Limits(file_size=MiB),
        "A write was stopped at the sandbox's file size limit (1 MiB)",
    ),
    (
        "python3 -c 'bytearray(300 * 2**20)'; echo went on",
        Limits(memory=256 * MiB),
        "the sandbox's memory limit (256 MiB)",
    ),
    (
        "python3 -c 'fs = [open(\"/dev/null\") for _ in range(100)]'; echo went on",
        Limits(open_files=64),
        "A file was refused at the sandbox's limit of open files per process (64 files)",
    ),
]


@pytest.mark.parametrize(("command", "limits", "said"), LIMITED)
def test_a_limit_hit_by_a_process_of_the_shell_is_named(
    workspace: Path, command: str, limits: Limits, said: str
) -> None:
    """The shell went on (exit 0): the limit is still named, with how to raise it."""
    outcome = _run(workspace, command, limits=limits)
    assert outcome.ran, outcome.text
    assert "went on" in outcome.text
    assert said in outcome.text, outcome.text
    assert "the user can raise it with Sandbox(limits=Limits(" in outcome.text


def test_a_file_cut_at_the_file_size_limit_is_named_with_its_change(workspace: Path) -> None:
    """SIGXFSZ at its default: the writer is killed at the limit, not cut unseen."""
    outcome = _run(workspace, "head -c 2M /dev/zero > big.bin", limits=Limits(file_size=MiB))
    assert "Exit code: 153" in outcome.text, outcome.text  # 128 + SIGXFSZ
    assert "file size limit (1 MiB)" in outcome.text


def test_a_limits_words_on_standard_output_name_no_limit(workspace: Path) -> None:
    """Output that quotes the words (a search, a log) is not a process that hit a limit."""
    (workspace / "notes.txt").write_text("MemoryError\nToo many open files\nfork: retry\n")
    outcome = _run(workspace, "cat notes.txt", limits=Limits(memory=256 * MiB))
    assert outcome.ran, outcome.text
    assert "sandbox's" not in outcome.text, outcome.text


@pytest.mark.parametrize(
    ("command", "limits", "said"),
    [
        ("sleep 0.3; head -c 2M /dev/zero > big.bin", Limits(file_size=MiB), "file size limit"),
        *LIMITED,
    ],
)
def test_a_limit_hit_in_the_background_is_named_when_the_process_is_read(
    workspace: Path, command: str, limits: Limits, said: str
) -> None:
    """A background process that ended at a limit says which, as a command's result does."""
    backend = LocalBackend(workspace, execute=True, sandbox=Sandbox(limits=limits))
    tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
    try:
        started = tools["execute"].invoke(_call("execute", command=command, background=True))
        ident = started.artifact["process_id"]
        _until_none_runs(tools)
        read = tools["process"].invoke(_call("process", action="read", process_id=ident))
    finally:
        backend.close()
    assert said in str(read.content), read.content
    assert "the user can raise it with Sandbox(limits=Limits(" in str(read.content)
