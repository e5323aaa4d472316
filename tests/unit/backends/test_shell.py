"""Local commands: process groups, deadlines, output, exit codes, and the sandbox.

Every test of process handling runs twice: in the default sandbox and with
`sandbox=None` (unconfined, reaped by the helper). Processes are found on the host by a
unique `sleep` duration, since pids inside the sandbox's PID namespace differ.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from langchain_fstools import LocalBackend
from langchain_fstools.shell.sandbox.sandbox import DEFAULT_SANDBOX, Sandbox
from langchain_fstools.shell.session import process
from langchain_fstools.shell.session.process import run_process


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in {"Z", "X"}


def _gone(pid: int, within: float = 2.0) -> bool:
    deadline = time.monotonic() + within
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture(params=["sandboxed", "unconfined"])
def backend(tmp_path: Path, request: pytest.FixtureRequest) -> LocalBackend:
    root = tmp_path / "workspace"
    root.mkdir()
    if request.param == "unconfined":
        return LocalBackend(root, execute=True, sandbox=None)
    return LocalBackend(root, execute=True)


def _duration() -> str:
    """A `sleep` duration no other process uses, to find the sleeper on the host."""
    return f"{1000 + time.monotonic_ns() % 1_000_000}.{os.getpid()}"


def _sleeping(duration: str) -> list[int]:
    """Host pids of live `sleep DURATION` processes."""
    found = []
    wanted = f"sleep\0{duration}\0".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if cmdline == wanted and _alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def _none_left(duration: str, within: float = 2.0) -> bool:
    deadline = time.monotonic() + within
    while _sleeping(duration):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_timeout_kills_a_grandchild_holding_the_pipe_and_returns_promptly(
    backend: LocalBackend,
) -> None:
    started = time.monotonic()
    sleep = _duration()
    result = backend.execute(
        f"sleep {sleep} & echo grandchild; sleep 1000", timeout=1, output_limit=10_000
    )
    elapsed = time.monotonic() - started
    assert result.timed_out
    assert result.exit_code is None
    assert result.output == "grandchild\n"
    assert 1 <= elapsed < 3
    assert _none_left(sleep), "the grandchild survived the timeout"


def test_background_process_left_by_a_finished_command_does_not_hold_the_call(
    backend: LocalBackend,
) -> None:
    started = time.monotonic()
    sleep = _duration()
    result = backend.execute(f"sleep {sleep} & echo bg", timeout=30, output_limit=10_000)
    assert time.monotonic() - started < 3
    assert not result.timed_out
    assert result.exit_code == 0
    assert _none_left(sleep)


@pytest.mark.parametrize(
    "spelling",
    [
        "setsid sleep {d} &",
        "(setsid sleep {d} &)",
        "nohup setsid sleep {d} >/dev/null 2>&1 &",
        (
            "python3 -c 'import os\nif os.fork() == 0:\n os.setsid()\n"
            ' if os.fork() == 0: os.execvp("sleep", ["sleep", "{d}"])\''
        ),
        "setsid -f sleep {d}",
    ],
)
def test_no_process_outlives_the_call_however_it_detached(
    backend: LocalBackend, spelling: str
) -> None:
    sleep = _duration()
    result = backend.execute(
        spelling.format(d=sleep) + "\nsleep 0.3; echo started", timeout=30, output_limit=1000
    )
    assert result.output.endswith("started\n"), result.output
    assert _none_left(sleep), f"{spelling!r} left a process behind"


def test_no_process_outlives_a_timeout_however_it_detached(backend: LocalBackend) -> None:
    sleep = _duration()
    result = backend.execute(
        f"(setsid sleep {sleep} &); nohup setsid sleep {sleep} >/dev/null 2>&1 & sleep 1000",
        timeout=1,
        output_limit=1000,
    )
    assert result.timed_out
    assert _none_left(sleep)


def test_a_command_that_closes_its_pipes_still_meets_its_deadline(backend: LocalBackend) -> None:
    started = time.monotonic()
    result = backend.execute("exec >&- 2>&-; sleep 1000", timeout=1, output_limit=100)
    assert result.timed_out
    assert time.monotonic() - started < 3


@pytest.mark.parametrize(("command", "code"), [("true", 0), ("exit 3", 3), ("false", 1)])
def test_exit_codes(backend: LocalBackend, command: str, code: int) -> None:
    assert backend.execute(command, timeout=10, output_limit=100).exit_code == code


def test_a_command_killed_by_a_signal_reports_128_plus_the_signal(backend: LocalBackend) -> None:
    result = backend.execute("kill -TERM $$", timeout=10, output_limit=100)
    assert result.exit_code == 128 + signal.SIGTERM
    assert not result.timed_out


def test_stderr_is_marked_and_interleaved_in_order(backend: LocalBackend) -> None:
    result = backend.execute(
        "echo one; sleep 0.1; echo two >&2; sleep 0.1; echo three", timeout=10, output_limit=1000
    )
    assert result.output == "one\n[stderr] two\nthree\n"


def test_output_cap_keeps_head_and_tail_and_counts_the_rest(backend: LocalBackend) -> None:
    result = backend.execute(
        "printf 'HEAD'; head -c 100000 /dev/zero | tr '\\0' x; printf 'TAIL'",
        timeout=10,
        output_limit=1000,
    )
    assert result.dropped_bytes == 100_008 - 1000
    assert result.output.startswith("HEAD" + "x" * 496 + "\n[... 99,008 bytes of output omitted")
    assert result.output.endswith("x" * 496 + "TAIL")


def test_the_working_directory_is_the_workspace_at_its_real_path(backend: LocalBackend) -> None:
    root = backend.command_root()
    result = backend.execute("touch made-here && pwd && ls", timeout=10, output_limit=1000)
    assert result.output == f"{root}\nmade-here\n"
    assert (backend.host_path("/made-here")).is_file()


@pytest.mark.parametrize("sandbox", [DEFAULT_SANDBOX, None])
def test_one_set_of_paths_a_printed_path_works_in_the_next_command(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    root = tmp_path / "workspace"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("print(1)\n")
    backend = LocalBackend(root, execute=True, sandbox=sandbox)
    printed = backend.execute("cd src && pwd", timeout=10, output_limit=1000).output.strip()

    again = backend.execute(f"cat {printed}/a.py && ls /", timeout=10, output_limit=1000)

    assert printed == f"{backend.command_root()}/src"  # the file tools' /src
    assert again.output.startswith("print(1)\n")
    assert "\nusr\n" in again.output  # `/` is the machine's root, as the tool says


def test_stdin_is_empty(backend: LocalBackend) -> None:
    result = backend.execute("cat; echo done", timeout=5, output_limit=100)
    assert result.output == "done\n"
    assert not result.timed_out


def test_async_execute_gives_the_same_result(backend: LocalBackend) -> None:
    result = asyncio.run(backend.aexecute("echo hi; exit 4", timeout=10, output_limit=100))
    assert (result.output, result.exit_code) == ("hi\n", 4)


def test_run_process_runs_an_argv_without_a_shell(tmp_path: Path) -> None:
    result = run_process(["printf", "%s", "a b"], cwd=str(tmp_path), timeout=5, output_limit=100)
    assert (result.output, result.exit_code) == ("a b", 0)


@pytest.mark.parametrize("pidfd", [True, False])
def test_a_command_that_closes_its_pipes_then_exits_reports_its_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pidfd: bool
) -> None:
    if not pidfd:  # a kernel or platform without pidfds: the exit is polled for
        monkeypatch.delattr(os, "pidfd_open")
    command = ["/bin/sh", "-c", "echo out; exec >&- 2>&-; sleep 0.2; exit 5"]
    result = run_process(command, cwd=str(tmp_path), timeout=20, output_limit=100)
    assert (result.output, result.exit_code, result.timed_out) == ("out\n", 5, False)


def test_the_exit_wakes_the_wait_without_polling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process, "_POLL", 60.0)  # a poll would hold the call for a minute
    started = time.monotonic()
    command = ["/bin/sh", "-c", "exec >&- 2>&-; sleep 0.2"]
    result = run_process(command, cwd=str(tmp_path), timeout=120, output_limit=100)
    assert result.exit_code == 0
    assert time.monotonic() - started < 30


def test_a_missing_program_raises_without_host_paths(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        run_process(["/no/such/program"], cwd=str(tmp_path), timeout=5, output_limit=100)


# ----- the bwrap sandbox -------------------------------------------------------------


def test_an_unknown_sandbox_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown sandbox"):
        LocalBackend(tmp_path, execute=True, sandbox="docker")  # type: ignore[arg-type]


@pytest.fixture
def sandboxed(tmp_path: Path) -> LocalBackend:
    root = tmp_path / "workspace"
    root.mkdir()
    return LocalBackend(root, execute=True, sandbox="bwrap")


def test_sandbox_lets_the_workspace_be_written(sandboxed: LocalBackend) -> None:
    result = sandboxed.execute(
        "echo hi > inside.txt && cat inside.txt", timeout=20, output_limit=1000
    )
    assert (result.output, result.exit_code) == ("hi\n", 0)
    assert sandboxed.host_path("/inside.txt").read_text() == "hi\n"
    assert sandboxed.sandbox == Sandbox(method="bwrap")


def test_sandbox_refuses_writes_outside_the_workspace(sandboxed: LocalBackend) -> None:
    outside = Path(f"/var/tmp/fstools-sandbox-{os.getpid()}.txt")
    result = sandboxed.execute(f"echo hi > {outside}", timeout=20, output_limit=1000)
    assert result.exit_code != 0
    assert "Read-only file system" in result.output
    assert not outside.exists()


def test_sandbox_hides_the_hosts_tmp_so_writes_there_stay_inside(
    sandboxed: LocalBackend, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    sandboxed.execute(f"echo hi > {outside}", timeout=20, output_limit=1000)
    assert not outside.exists()


def test_sandbox_has_a_private_tmp(sandboxed: LocalBackend) -> None:
    marker = f"/tmp/fstools-sandbox-{os.getpid()}"
    result = sandboxed.execute(f"echo x > {marker} && cat {marker}", timeout=20, output_limit=100)
    assert result.output == "x\n"
    assert not Path(marker).exists()


def test_sandbox_timeout_kills_everything_inside(sandboxed: LocalBackend) -> None:
    started = time.monotonic()
    result = sandboxed.execute("setsid sleep 1000 & sleep 1000", timeout=1, output_limit=100)
    assert result.timed_out
    assert time.monotonic() - started < 3
    deadline = time.monotonic() + 2
    while _sleepers_of(sandboxed) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _sleepers_of(sandboxed)


def _sleepers_of(backend: LocalBackend) -> list[int]:
    """Pids of live `sleep 1000` processes whose working directory is the workspace."""
    root = str(backend.host_path("/"))
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            cwd = str((entry / "cwd").readlink())
        except OSError:
            continue
        if cmdline == b"sleep\x001000\x00" and cwd == root and _alive(int(entry.name)):
            found.append(int(entry.name))
    return found
