"""Sandbox sessions: a warm supervisor per thread, a shell that remembers, nothing outlives it."""

from __future__ import annotations

import contextvars
import dataclasses
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_fstools import LocalBackend
from langchain_fstools.core.results import LimitHit
from langchain_fstools.errors import CommandTooLarge, SandboxUnavailable
from langchain_fstools.shell.sandbox import confine
from langchain_fstools.shell.sandbox import sandbox as sandbox_module
from langchain_fstools.shell.sandbox.plan import SessionPlan, session_folder
from langchain_fstools.shell.sandbox.sandbox import Sandbox, find_bwrap, helper_command
from langchain_fstools.shell.sandbox.supervisor import MESSAGE_SIZE
from langchain_fstools.shell.session import session as session_module
from langchain_fstools.shell.session.session import (
    Session,
    SessionEnded,
    _Job,
    in_session,
    started_sessions,
)
from langchain_fstools.shell.session.shell_state import (
    STATE_LIMIT,
    ShellState,
    recorded,
    remembering,
    state_record,
)
from langchain_fstools.tools.execute import limit_note
from langchain_fstools.tools.render import render_error
from tests.e2e.agent_runs import surviving_sleepers

if TYPE_CHECKING:
    from collections.abc import Iterator

MODES = ["bwrap", "landlock", "none"]


@pytest.fixture(params=MODES)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LocalBackend]:
    sandbox = None if request.param == "none" else Sandbox(method=request.param)
    found = LocalBackend(tmp_path, execute=True, sandbox=sandbox)
    try:
        yield found
    finally:
        found.close()


def _run(backend: LocalBackend, command: str, timeout: float = 20) -> str:
    return backend.execute(command, timeout=timeout, output_limit=100_000).output


def _unique(base: int) -> str:
    return f"{base + time.monotonic_ns() % 1_000_000}.{os.getpid()}"


def test_cd_and_export_carry_to_the_next_command(backend: LocalBackend, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    first = backend.execute("cd src && export FOO=bar", timeout=20, output_limit=1000)
    second = _run(backend, "echo $FOO; pwd")
    assert first.directory == str(tmp_path / "src")
    assert second.split() == ["bar", str(tmp_path / "src")]


def test_unset_and_exported_values_with_newlines_carry(backend: LocalBackend) -> None:
    _run(backend, "export A=$'one\\ntwo' B=gone; unset B; C=local")
    assert _run(backend, 'printf \'%s|\' "$A" "${B-unset}" "${C-unset}"') == "one\ntwo|unset|unset|"


def test_the_exit_status_is_the_commands_own_after_the_trap(backend: LocalBackend) -> None:
    assert backend.execute("exit 3", timeout=20, output_limit=100).exit_code == 3
    assert backend.execute("false", timeout=20, output_limit=100).exit_code == 1


def test_a_directory_that_is_gone_falls_back_to_the_workspace(
    backend: LocalBackend, tmp_path: Path
) -> None:
    (tmp_path / "gone").mkdir()
    _run(backend, "cd gone")
    (tmp_path / "gone").rmdir()
    assert _run(backend, "pwd").strip() == str(tmp_path)


def test_sessions_are_per_key(backend: LocalBackend, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    with in_session("thread-1"):
        _run(backend, "cd a; export WHO=one")
    with in_session("thread-2"):
        other = _run(backend, "echo ${WHO-none}; pwd")
    with in_session("thread-1"):
        same = _run(backend, "echo ${WHO-none}; pwd")
    assert other.split() == ["none", str(tmp_path)]
    assert same.split() == ["one", str(tmp_path / "a")]


def test_stdin_is_empty_so_a_prompt_does_not_hang(backend: LocalBackend) -> None:
    result = backend.execute("read answer; echo got=[$answer]", timeout=10, output_limit=100)
    assert (result.output, result.timed_out) == ("got=[]\n", False)


def test_nothing_outlives_a_command_even_when_it_kills_its_parent(backend: LocalBackend) -> None:
    duration = _unique(3000)
    _run(
        backend,
        f"setsid sleep {duration} & (setsid sleep {duration} &);"
        " kill -9 $PPID 2>/dev/null; sleep 0.2; echo done",
    )
    assert not surviving_sleepers(duration)


def test_the_deadline_kills_the_whole_command(backend: LocalBackend) -> None:
    duration = _unique(4000)
    started = time.monotonic()
    result = backend.execute(
        f"setsid sleep {duration} & sleep {duration}", timeout=1, output_limit=100
    )
    assert result.timed_out
    assert time.monotonic() - started < 8
    assert not surviving_sleepers(duration)


def test_a_session_whose_supervisor_died_is_started_again(backend: LocalBackend) -> None:
    _run(backend, "export KEPT=1")
    session = backend._commands._sessions.current(lambda: pytest.fail("a session runs"))
    assert session.process is not None
    session.process.kill()
    deadline = time.monotonic() + 10
    while session.alive and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _run(backend, "echo ${KEPT-fresh}").strip() == "fresh"


def test_a_keeper_forked_just_before_its_supervisor_died_ends_at_once() -> None:
    """Its parent-death signal, asked for once the parent is gone, would never come: a
    keeper left so held the control socket, and the next command ran in it (CI)."""
    script = textwrap.dedent(
        """
        import os, sys, time
        from langchain_fstools.shell.sandbox import confine, supervisor
        parent = os.getpid()
        if os.fork() == 0:
            deadline = time.monotonic() + 10
            while os.getppid() == parent and time.monotonic() < deadline:
                time.sleep(0.01)
            supervisor._die_with(confine._libc(), parent)
            sys.stdout.write("lived on")
        """
    )
    # the forked child holds the output until it ends: read to its end
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=30, check=True
    )
    assert done.stdout == b"", done.stderr


RACED = (
    "bwrap: Can't bind mount /oldroot/ on /newroot/: Unable to apply mount flags: remount"
    ' "/newroot/var/lib/docker/overlay2/l/merged": No such file or directory'
)
"""What bubblewrap says when a host mount goes away while it binds `/` (seen in CI; also
with `Invalid argument`, a mount being taken down, and `Read-only file system`, a masked
path removed before bubblewrap mounted over it)."""


def _racing_bwrap(backend: LocalBackend, folder: Path, failures: int, error: str) -> Path:
    """Put a bubblewrap in front of `backend`'s that fails its first `failures` starts as a
    mount going away makes it fail; ends the session. The file counting the starts."""
    confinement = backend._commands._confinement
    assert confinement is not None
    assert confinement.bwrap is not None
    count = folder / "starts"
    racing = folder / "racing-bwrap"
    racing.write_text(
        textwrap.dedent(
            f"""\
            #!/bin/sh
            echo x >> {count}
            if [ "$(wc -l < {count})" -le {failures} ]; then
                echo {shlex.quote(RACED.replace("No such file or directory", error))} >&2
                exit 1
            fi
            exec {confinement.bwrap} "$@"
            """
        )
    )
    racing.chmod(0o755)
    backend._commands._confinement = dataclasses.replace(confinement, bwrap=str(racing))
    backend._commands._sessions.end("")
    return count


@pytest.mark.parametrize("failures", [1, 2, 3])
@pytest.mark.parametrize(
    "error", ["No such file or directory", "Invalid argument", "Read-only file system"]
)
def test_a_session_start_that_meets_a_mount_going_away_is_tried_again(
    tmp_path: Path, failures: int, error: str
) -> None:
    """Up to three starts: a command meets the race twice and runs; three times, it is said."""
    (tmp_path / "ws").mkdir()
    backend = LocalBackend(tmp_path / "ws", execute=True)
    try:
        assert _run(backend, "echo first").strip() == "first"
        count = _racing_bwrap(backend, tmp_path, failures, error)
        if failures < 3:
            assert _run(backend, "echo second").strip() == "second"
        else:
            with pytest.raises(SandboxUnavailable, match=error):
                _run(backend, "echo second")
        assert len(count.read_text().splitlines()) == min(failures + 1, 3)
    finally:
        backend.close()


@pytest.mark.parametrize("failures", [2, 3])
def test_a_background_start_that_meets_a_mount_going_away_is_tried_again(
    tmp_path: Path, failures: int
) -> None:
    """The session's first command started in the background gets the same three starts."""
    (tmp_path / "ws").mkdir()
    backend = LocalBackend(tmp_path / "ws", execute=True)
    try:
        assert _run(backend, "echo first").strip() == "first"
        count = _racing_bwrap(backend, tmp_path, failures, "Invalid argument")
        table = backend.processes()
        assert table is not None
        if failures < 3:
            started = table.start("echo started; sleep 30", output_limit=1000)
            assert [process.ident for process in table.all()] == [started.ident]
            started.kill()
        else:
            with pytest.raises(OSError, match="Invalid argument"):
                table.start("sleep 30", output_limit=1000)
        assert len(count.read_text().splitlines()) == min(failures + 1, 3)
    finally:
        backend.close()


def test_the_sandbox_probe_that_meets_a_mount_going_away_is_tried_again(tmp_path: Path) -> None:
    """A probe failing that way is not remembered as "no sandbox here" for the process."""
    real = find_bwrap()
    if real is None:
        pytest.skip("no bubblewrap here")
    count = tmp_path / "starts"
    racing = tmp_path / "racing-bwrap"
    racing.write_text(
        f"#!/bin/sh\necho x >> {count}\nif [ $(wc -l < {count}) -le 2 ]; then\n"
        f'  echo {shlex.quote(RACED)} >&2; exit 1\nfi\nexec {real} "$@"\n'
    )
    racing.chmod(0o755)
    assert sandbox_module._probe(str(racing)) is None
    assert len(count.read_text().splitlines()) == 3


def test_closing_ends_every_process_of_the_session(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path, execute=True)
    _run(backend, "true")
    folder = backend._commands._sessions.current(lambda: pytest.fail("a session runs")).plan.folder
    before = _processes_naming(folder)
    backend.close()
    assert before
    deadline = time.monotonic() + 5
    while _processes_naming(folder) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _processes_naming(folder)
    assert not Path(folder).exists()


def test_parallel_commands_start_from_the_same_state(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path, execute=True)
    (tmp_path / "x").mkdir()
    _run(backend, "cd x")
    seen: list[str] = []

    def one(name: str) -> None:  # running a while, so all four have started before one ends
        seen.append(_run(backend, f"pwd; cd /; export {name}=1; sleep 0.5").strip())

    threads = [threading.Thread(target=one, args=(f"V{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    backend.close()
    assert seen == [str(tmp_path / "x")] * 4


def test_an_agent_process_that_dies_leaves_nothing_behind(tmp_path: Path) -> None:
    duration = _unique(5000)
    script = textwrap.dedent(
        f"""
        import threading
        from langchain_fstools import LocalBackend
        backend = LocalBackend({str(tmp_path)!r}, execute=True)
        def run():
            backend.execute("setsid sleep {duration} & sleep {duration}", timeout=600, output_limit=100)
        threading.Thread(target=run, daemon=True).start()
        import time; time.sleep(60)
        """
    )
    agent = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 30
        while not surviving_sleepers(duration, grace=0) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert surviving_sleepers(duration, grace=0), "the command never started"
    finally:
        agent.kill()
        agent.wait()
    assert not surviving_sleepers(duration, grace=5)


def test_the_state_record_is_read_as_the_trap_writes_it() -> None:
    done = subprocess.run(
        ["/bin/bash", "-c", "exec 1023>&1\n" + remembering("cd /tmp; export X=$'a\\nb'")],
        capture_output=True,
        check=True,
    )
    state = ShellState("/").read(done.stdout)
    assert state.cwd == "/tmp"
    assert state.env is not None
    assert state.env["X"] == "a\nb"
    assert "PWD" not in state.env


@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
@settings(max_examples=150, deadline=None)
@given(
    value=st.text(
        st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=40
    )
)
def test_any_exported_value_comes_back_as_bash_held_it(locale: str, value: str) -> None:
    """Differential: bash's own quoting (`export -p`) against our reading of it."""
    done = subprocess.run(
        ["/bin/bash", "-c", "exec 1023>&1\n" + remembering('export V="$1"'), "bash", value],
        capture_output=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "LANG": locale},
    )
    state = ShellState("/").read(done.stdout)
    assert state.env is not None
    assert state.env["V"] == value


def test_a_record_without_a_directory_keeps_the_state() -> None:
    before = ShellState("/w", {"A": "1"})
    assert before.read(b"") is before
    assert before.read(b"garbage") is before


def test_the_state_record_cannot_grow_past_its_limit() -> None:
    fd = state_record()
    try:
        os.pwrite(fd, b'/w\0declare -x A="1"\n', 0)
        assert recorded(fd) == b'/w\0declare -x A="1"\n'
        with pytest.raises(PermissionError):
            os.pwrite(fd, b"x", STATE_LIMIT)  # sealed: no write makes it grow
        os.pwrite(fd, b"x" * STATE_LIMIT, 0)
        assert recorded(fd) is None  # full: too large to read
        assert os.fstat(fd).st_size == STATE_LIMIT
    finally:
        os.close(fd)


def test_an_empty_record_or_a_directory_alone_reads_as_such() -> None:
    fd = state_record()
    try:
        assert recorded(fd) == b"\0"
        os.pwrite(fd, b"/w\0", 0)
        assert ShellState("/", {"A": "1"}).read(recorded(fd) or b"") == ShellState("/w", {})
    finally:
        os.close(fd)


def test_a_state_too_large_to_carry_is_not_kept_and_the_result_says_so(
    backend: LocalBackend, tmp_path: Path
) -> None:
    (tmp_path / "sub").mkdir()
    _run(backend, "cd sub && export SMALL=1")

    big = backend.execute(
        "cd / && export BIG=$(head -c 2000000 /dev/zero | tr '\\0' x)", timeout=20, output_limit=100
    )
    after = backend.execute("echo ${BIG-none} $SMALL; pwd", timeout=20, output_limit=100)
    unset = backend.execute("unset SMALL; echo ${SMALL-gone}", timeout=20, output_limit=100)

    assert big.limit == LimitHit("shell_state", STATE_LIMIT)
    assert "passed the 32 KiB a command may leave the next" in limit_note(big.limit)
    assert after.output.split() == ["none", "1", str(tmp_path / "sub")]
    assert unset.output == "gone\n"


def test_a_command_writing_its_state_descriptor_without_end_is_bounded(
    backend: LocalBackend,
) -> None:
    flooded = backend.execute(
        "head -c 100000000 /dev/zero | tr '\\0' x >&1023; echo wrote", timeout=20, output_limit=100
    )
    assert flooded.output.endswith("wrote\n")  # tr was refused past the limit
    assert flooded.limit == LimitHit("shell_state", STATE_LIMIT)
    assert _run(backend, "echo still here") == "still here\n"


def test_a_command_too_large_for_the_sandbox_is_refused_and_the_session_lives(
    backend: LocalBackend,
) -> None:
    long_line = "echo " + "x" * 300_000
    with pytest.raises(CommandTooLarge) as refused:
        backend.execute(long_line, timeout=20, output_limit=100)
    assert refused.value.limit == MESSAGE_SIZE
    said = render_error(refused.value, tool="execute")
    assert re.match(r"Error: the command takes 30\d,\d{3} bytes with its environment, over", said)
    assert _run(backend, "echo ok") == "ok\n"


def test_at_most_max_sessions_run_and_the_one_idle_longest_ends_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session_module, "MAX_SESSIONS", 3)
    duration = _unique(6000)
    (tmp_path / "sub").mkdir()
    backend = LocalBackend(tmp_path, execute=True)
    try:
        with in_session("k0"):
            _run(backend, "cd sub")
        with in_session("k1"):  # busy: a background process runs in it
            table = backend.processes()
            assert table is not None
            table.start(f"sleep {duration}", output_limit=100)
        with in_session("k2"):
            _run(backend, "cd sub")
        with in_session("k3"):  # a fourth: k0, idle the longest, ends
            _run(backend, "true")
        with in_session("k4"):  # a fifth: k1 is busy, so k2 ends
            _run(backend, "true")
        assert sorted(backend._commands._sessions._sessions) == ["k1", "k3", "k4"]
        assert surviving_sleepers(duration, grace=0)
        with in_session("k0"):
            assert _run(backend, "pwd").strip() == str(tmp_path)  # a new session
    finally:
        backend.close()
    assert not surviving_sleepers(duration)


def test_sessions_started_inside_a_block_end_when_it_says_nested_too(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path, execute=True)

    def run_in(key: str) -> None:
        with in_session(key):
            _run(backend, "true")

    try:
        run_in("main")
        with started_sessions() as outer:
            run_in("main")  # running already: not the block's
            run_in("a")
            with started_sessions() as inner:
                thread = threading.Thread(target=contextvars.copy_context().run, args=(run_in, "b"))
                thread.start()
                thread.join()
            inner.end()
            assert sorted(backend._commands._sessions._sessions) == ["a", "main"]
        outer.end()
        assert sorted(backend._commands._sessions._sessions) == ["main"]
    finally:
        backend.close()


def _processes_naming(folder: str) -> list[int]:
    """Processes whose command line names `folder` (a session's bubblewrap and supervisor)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            line = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if folder.encode() in line:
            found.append(int(entry.name))
    return found


def test_a_background_process_gets_a_terminal_when_asked(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path, execute=True)
    table = backend.processes()
    assert table is not None
    try:
        process = table.start(
            "python3 -c 'import sys; print(sys.stdin.isatty()); print(input(\"name? \"))'",
            output_limit=10_000,
            terminal=True,
        )
        seen = ""
        deadline = time.monotonic() + 20
        while "name? " not in seen and time.monotonic() < deadline:
            time.sleep(0.05)
            seen += process.read().text
        process.write(b"ada\n")
        while process.running and time.monotonic() < deadline:
            time.sleep(0.05)
        seen += process.read().text
    finally:
        backend.close()
    assert seen.splitlines()[0] == "True"
    assert "ada" in seen.splitlines()[-1]


def test_a_pause_sent_as_the_process_starts_waits_for_its_keeper(tmp_path: Path) -> None:
    """A review right after the start pauses and resumes it; nothing ends it by mistake."""
    backend = LocalBackend(tmp_path, execute=True)
    table = backend.processes()
    assert table is not None
    try:
        started = []
        for _ in range(8):
            started.append(table.start("sleep 30", output_limit=1000))
            table.review(started[-1])
        time.sleep(0.2)
        running = [process.running for process in started]
    finally:
        backend.close()
    assert running == [True] * 8


@pytest.mark.parametrize("method", MODES)
def test_a_command_cannot_kill_the_supervisor_to_leave_a_process_behind(
    method: str, tmp_path: Path
) -> None:
    """Not its keeper, not the keeper's parent: in every mode, also without a sandbox."""
    sandbox = None if method == "none" else Sandbox(method=method)
    backend = LocalBackend(tmp_path, execute=True, sandbox=sandbox)
    duration = _unique(6000)
    try:
        output = _run(
            backend,
            f"setsid sleep {duration} & keeper=$PPID;"
            " supervisor=$(awk '{print $4}' /proc/$keeper/stat);"
            " kill -9 $supervisor $keeper 2>&1; echo tried",
        )
        after = _run(backend, "echo alive")
    finally:
        backend.close()
    assert "tried" in output
    assert "Operation not permitted" in output
    assert after == "alive\n"
    assert not surviving_sleepers(duration)


def test_a_session_folder_left_by_a_dead_process_is_removed(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    left = Path(tempfile.gettempdir()) / f"fstools-session-{dead.pid}-left"
    ours = Path(tempfile.gettempdir()) / f"fstools-session-{os.getpid()}-ours"
    for folder in (left, ours):
        folder.mkdir(exist_ok=True)
    backend = LocalBackend(tmp_path, execute=True)
    try:
        _run(backend, "true")
        kept = ours.exists()
    finally:
        backend.close()
        shutil.rmtree(ours, ignore_errors=True)
    assert not left.exists()
    assert kept  # this process runs: its folders stay


def test_a_confinement_that_fails_before_the_request_is_said_on_the_commands_stderr(
    tmp_path: Path,
) -> None:
    """A command's process confines itself ahead of its request; a failure then is told."""
    plan = SessionPlan(
        [*helper_command(), *confine.options(memory=["lots"]), "--"],
        {"PATH": os.defpath},
        session_folder(),
        str(tmp_path),
    )
    session = Session(plan)
    try:
        results = [
            session.run("echo ran", interpreter="bash", env={}, timeout=20, output_limit=1000)[0]
            for _ in range(2)
        ]
    finally:
        session.close()
    for result in results:
        assert result.exit_code == confine.FAILED
        assert "sandbox: setting RLIMIT_DATA to 'lots' failed" in result.output
        assert "ran" not in result.output


def test_a_job_told_its_end_after_it_closed_writes_nowhere() -> None:
    """The end may come just after the waiter closed the job: its descriptors are not reused."""
    job = _Job(1)
    job.close()
    reused = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)  # takes the numbers the job had
    try:
        assert sorted(reused) == sorted(job.wake)
        job.finish(0)
        with pytest.raises(BlockingIOError):
            os.read(reused[0], 1)
    finally:
        for fd in reused:
            os.close(fd)
    assert job.ended.is_set()
    assert job.status == 0


def test_a_job_ends_when_its_keeper_writes_the_status_to_its_pipe() -> None:
    """The waiting thread learns the end from the keeper's pipe, before the supervisor says it."""
    job = _Job(1)
    try:
        assert not job.exited()
        os.write(job.wake[1], b"3\n")
        assert job.exited()
    finally:
        job.close()
    assert job.status == 3


def test_a_job_whose_end_was_told_keeps_its_status_when_the_session_ends_after() -> None:
    """The supervisor dying just after a command ended does not make that command fail."""
    ended = "the sandbox session ended (exit status -9)"
    by_pipe, by_message = _Job(1), _Job(2)
    try:
        os.write(by_pipe.wake[1], b"0\n")  # its keeper said it first
        assert by_pipe.exited()
        by_message.finish(0)  # the supervisor's message
        for job in (by_pipe, by_message):
            job.finish(None, ended)  # what the session's owner tells every job it still holds
            assert (job.status, job.error) == (0, None)
    finally:
        by_pipe.close()
        by_message.close()


FORK_REFUSED = """
import json, os, socket
channel = socket.socket(
    socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=int(os.environ["FSTOOLS_SUPERVISOR_CONTROL"])
)
channel.send(json.dumps({"op": "spare", "error": "fork: Resource temporarily unavailable"}).encode())
while data := channel.recv(1 << 20):
    with open(os.environ["SEEN"], "a") as seen:
        seen.write(data.decode() + "\\n")
"""
"""A supervisor that could fork no spare: it says so, and notes what it is asked."""


def test_a_supervisor_that_could_fork_no_spare_fails_the_command_and_is_asked_again(
    tmp_path: Path,
) -> None:
    seen = tmp_path / "seen"
    plan = SessionPlan(
        [sys.executable, "-I", "-c", FORK_REFUSED],
        {"PATH": os.defpath, "SEEN": str(seen)},
        session_folder(),
        str(tmp_path),
    )
    session = Session(plan)
    try:
        with pytest.raises(SessionEnded, match=r"could not start \(fork: Resource temporarily"):
            session.run("true", interpreter="bash", env={}, timeout=20, output_limit=1000)
    finally:
        session.close()
    assert seen.read_text().splitlines() == ['{"op": "spare"}']


DESCRIPTORS = """
import json, os, sys, time
from langchain_fstools import LocalBackend
from langchain_fstools.core.changesets import removals_settled
from langchain_fstools.shell.sandbox.sandbox import Sandbox

def descriptors():
    removals_settled()  # a discarded view being removed holds descriptors while it lasts
    return len(os.listdir("/proc/self/fd"))

def settled(expected):  # the count once it is `expected`, or after 5 s (a spare arrives late)
    for _ in range(100):
        if (count := descriptors()) == expected:
            return count
        time.sleep(0.05)
    return descriptors()

mode, workspace = sys.argv[1:]
sandbox = None if mode == "none" else Sandbox(method=mode)
backend = LocalBackend(workspace, execute=True, sandbox=sandbox)
backend.execute("true", timeout=20, output_limit=1000)  # the session, its supervisor, a spare
processes = backend.processes()
before = descriptors()
for _ in range(10):
    processes.start("sleep 30", output_limit=1000).kill()
killed = settled(before)
for _ in range(3):
    processes.start("sleep 30", output_limit=1000)
backend.close()
print(json.dumps([before, killed, descriptors()]))
"""
"""Counts a backend's descriptors in a process of its own: before, after ten background
processes were killed, and once three more ran when the backend closed."""


@pytest.mark.parametrize("mode", MODES)
def test_a_background_processs_descriptors_are_closed_on_kill_and_at_close(
    mode: str, tmp_path: Path
) -> None:
    # Counted in a process of its own: in this one, what earlier tests left (a session
    # closing, a folder being removed, a commit) opens and closes descriptors meanwhile.
    done = subprocess.run(
        [sys.executable, "-c", DESCRIPTORS, mode, str(tmp_path)],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    before, killed, after = json.loads(done.stdout)
    # Each leaked two (the pipe its keeper says the end on): 20 for ten. A descriptor or
    # two of slack: the session's spare may be handed out before or after a count.
    assert killed - before <= 2, (before, killed)
    assert after < before  # the session's own are gone too


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])


def test_a_command_whose_keeper_was_killed_ends_with_nothing_of_it_left(
    backend: LocalBackend,
) -> None:
    """The supervisor tells the end only once every process the keeper left is gone."""
    duration, deep = _unique(5000), _unique(6000)
    chain = f"f() {{ if [ $1 -gt 0 ]; then f $(($1 - 1)) & wait; else exec sleep {deep}; fi; }}"
    ended: list[str] = []
    worker = threading.Thread(
        target=lambda: ended.append(
            _run(backend, f"{chain}; f 40 >/dev/null 2>&1 & sleep {duration} >/dev/null 2>&1", 30)
        )
    )
    worker.start()
    deadline = time.monotonic() + 20
    while not (found := surviving_sleepers(duration, grace=0)) or not surviving_sleepers(
        deep, grace=0
    ):
        assert time.monotonic() < deadline, "the command did not start"
        time.sleep(0.05)
    keeper = _parent(_parent(found[0]))  # sleep <- bash <- its keeper
    os.kill(keeper, 9)
    worker.join(30)
    assert ended  # the command's end was told
    assert not surviving_sleepers(duration, grace=0)
    assert not surviving_sleepers(deep, grace=0)  # 40 processes down, already gone
