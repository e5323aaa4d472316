"""Relays: the transport's commands run by a process kept in the sandbox (`backends.sandbox.relay`).

The relay program runs for real, here, behind `StreamingShellSandbox.open_stream` (a
process whose standard input the test writes), as it runs in a Docker sandbox behind
`docker exec -i`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_fstools.backends.sandbox import SandboxBackend, relay
from langchain_fstools.backends.sandbox.relay import UNANSWERED, Relayed, Relays
from langchain_fstools.errors import StoreUnavailable
from tests.unit.backends.sandbox_double import ShellSandbox, StreamingShellSandbox


@pytest.fixture
def sandbox() -> Iterator[StreamingShellSandbox]:
    sandbox = StreamingShellSandbox()
    yield sandbox
    sandbox.close()


@pytest.fixture
def relays(sandbox: StreamingShellSandbox) -> Iterator[Relays]:
    relays = Relays(sandbox, "python3")
    yield relays
    relays.close()


def _run(relays: Relays, command: str, timeout: int = 30, *, repeatable: bool = False) -> Relayed:
    response = relays.execute(command, timeout, repeatable=repeatable)
    assert response is not None
    return response


def _gone(pid: int, within: float = 5.0) -> bool:
    until = time.monotonic() + within
    while time.monotonic() < until:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


# ----- a relay answers as the provider's `execute` does ---------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "echo out; echo err >&2; echo out again",
        "exit 3",
        "printf 'no newline'",
        "kill -9 $$",
        "cat /no/such/file",
        "printf '\\377\\376 not utf-8\\n'",
        "",
    ],
)
def test_a_relayed_command_answers_as_execute_does(
    relays: Relays, sandbox: StreamingShellSandbox, command: str
) -> None:
    relayed = _run(relays, command)
    executed = ShellSandbox().execute(command, timeout=30)
    code = executed.exit_code
    assert code is not None
    shell_status = 128 - code if code < 0 else code  # killed by a signal: as sh and Docker say
    assert (relayed.output, relayed.exit_code) == (executed.output, shell_status)
    assert not relayed.truncated


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=3000), code=st.integers(0, 255))
def test_any_output_and_status_come_back_whole(relays: Relays, data: bytes, code: int) -> None:
    """Output is bytes on the wire: NULs, newlines and a header-like line pass through."""
    octal = "".join(f"\\{byte:03o}" for byte in data)
    relayed = _run(relays, f"printf '{octal}'; exit {code}")
    assert relayed.output == data.decode("utf-8", "replace")
    assert relayed.exit_code == code


def test_one_relay_serves_command_after_command(
    relays: Relays, sandbox: StreamingShellSandbox
) -> None:
    for number in range(20):
        assert _run(relays, f"echo {number}").output == f"{number}\n"
    assert sandbox.calls["open_stream"] == 1
    assert sandbox.calls["execute"] == 0


def test_overlapping_commands_each_get_their_own_answer(
    relays: Relays, sandbox: StreamingShellSandbox
) -> None:
    answers: dict[int, str] = {}

    def ask(number: int) -> None:
        answers[number] = _run(relays, f"sleep 0.2; echo {number}").output

    threads = [threading.Thread(target=ask, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert answers == {number: f"{number}\n" for number in range(8)}
    assert sandbox.calls["open_stream"] <= 8
    assert len(relays._idle) <= relay.KEPT


# ----- deadlines and what a command leaves -----------------------------------------------------


def test_a_command_past_its_timeout_is_killed_with_its_group(
    relays: Relays, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    started = time.monotonic()
    relayed = _run(relays, f"sleep 300 & echo $! > {pid_file}; wait", timeout=1)
    assert time.monotonic() - started < 10
    assert relayed.exit_code == 124
    assert "timed out after 1 seconds" in relayed.output
    assert _gone(int(pid_file.read_text()))


@pytest.mark.parametrize(("start", "in_group"), [("", True), ("setsid ", False)])
def test_what_a_command_leaves_does_not_hold_its_answer(
    relays: Relays, tmp_path: Path, start: str, *, in_group: bool
) -> None:
    """`sleep &` holds the output open: the answer still comes when the shell ends, and
    what is left in the command's group is killed (a process that left it is not)."""
    pid_file = tmp_path / "pid"
    started = time.monotonic()
    relayed = _run(relays, f"{start}sleep 300 & echo $! > {pid_file}; echo done", timeout=60)
    pid = int(pid_file.read_text())
    try:
        assert time.monotonic() - started < 10
        assert (relayed.output, relayed.exit_code) == ("done\n", 0)
        assert _gone(pid, within=1.0 if not in_group else 5.0) == in_group
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)


def test_output_beyond_the_limit_is_left_out_and_said(
    sandbox: StreamingShellSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(relay, "OUTPUT_LIMIT", 1000)
    relays = Relays(sandbox, "python3")
    try:
        relayed = _run(relays, "head -c 5000000 /dev/zero | tr '\\0' x")
        assert relayed.truncated
        assert relayed.output == "x" * 1000 or len(relayed.output) <= 1000
        assert _run(relays, "echo next").output == "next\n"  # the relay kept its place
    finally:
        relays.close()


# ----- failures: nothing run twice, nothing reported done that was not --------------------------


def test_a_relay_that_cannot_start_hands_its_commands_to_execute(tmp_path: Path) -> None:
    no_python = tmp_path / "bin"
    no_python.mkdir()
    for tool in ("sh", "cat", "mkfifo"):
        (no_python / tool).symlink_to(f"/bin/{tool}")
    sandbox = StreamingShellSandbox(path=str(no_python))
    relays = Relays(sandbox, "python3")
    assert relays.execute("echo hi", 30, repeatable=False) is None
    assert relays.execute("echo hi", 30, repeatable=False) is None
    assert not relays.usable
    assert relays.execute("echo hi", 30, repeatable=False) is None
    assert sandbox.calls["open_stream"] == relay.STARTS
    sandbox.close()


def test_a_sandbox_that_refuses_streams_keeps_execute(tmp_path: Path) -> None:
    sandbox = StreamingShellSandbox(refuse_streams=True)
    (tmp_path / "workspace").mkdir()
    backend = SandboxBackend(
        sandbox, str(tmp_path / "workspace"), helper_folder=str(tmp_path / "helper")
    )
    for number in range(4):
        backend.write_bytes(f"/f{number}.txt", b"x")
    assert backend.read_bytes("/f3.txt") == b"x"
    assert sandbox.calls["open_stream"] == relay.STARTS
    backend.close()


def test_a_relay_that_ended_while_idle_ran_nothing_and_execute_runs_it(
    relays: Relays, sandbox: StreamingShellSandbox, tmp_path: Path
) -> None:
    assert _run(relays, "true").exit_code == 0
    os.killpg(sandbox.streams[0].process.pid, 9)
    sandbox.streams[0].process.wait(10)
    marker = tmp_path / "ran"
    assert relays.execute(f"echo x >> {marker}", 30, repeatable=False) is None
    assert not marker.exists()
    assert _run(relays, "echo again").output == "again\n"  # a new relay


def test_a_relay_that_ends_after_it_took_a_change_says_so(relays: Relays, tmp_path: Path) -> None:
    """The relay is the command's shell's parent: killing it ends the stream after the `+`."""
    relayed = relays.execute("kill -9 $PPID; sleep 5", 30, repeatable=False)
    assert relayed == Relayed(UNANSWERED, None)


def test_a_read_whose_relay_ended_after_it_took_it_goes_to_execute(relays: Relays) -> None:
    assert relays.execute("kill -9 $PPID; sleep 5", 30, repeatable=True) is None


@pytest.mark.parametrize(
    ("padding", "repeatable", "expected"),
    [
        (0, False, Relayed(UNANSWERED, None)),
        (0, True, None),
        (300_000, False, None),
    ],
    ids=["silent-change", "silent-read", "not-taken-whole"],
)
def test_a_stopped_relay_is_let_go_at_the_commands_deadline(
    sandbox: StreamingShellSandbox,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    padding: int,
    *,
    repeatable: bool,
    expected: Relayed | None,
) -> None:
    """Stopped (a frozen sandbox): one that took the command may run it later, so a change
    is not sent to `execute` again; a command longer than the pipe holds is bounded by
    the deadline in its sending too, and a relay that never had it whole never runs it;
    and none runs once let go."""
    monkeypatch.setattr(relay, "REPLY_GRACE", 0.5)
    relays = Relays(sandbox, "python3")
    assert _run(relays, "true").exit_code == 0
    group = sandbox.streams[0].process.pid
    os.killpg(group, signal.SIGSTOP)
    marker = tmp_path / "ran"
    started = time.monotonic()
    answer = relays.execute(f"echo x > {marker} # {'.' * padding}", 1, repeatable=repeatable)
    assert time.monotonic() - started < 5
    assert answer == expected
    os.killpg(group, signal.SIGCONT)
    sandbox.streams[0].process.wait(10)  # it finds its input or output gone and ends
    assert not marker.exists()
    relays.close()


def test_a_command_without_a_timeout_is_waited_for(relays: Relays) -> None:
    assert _run(relays, "sleep 0.3; echo late", timeout=0).output == "late\n"


def test_closing_the_stream_kills_the_running_command(
    relays: Relays, sandbox: StreamingShellSandbox, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    result: list[Relayed | None] = []
    runner = threading.Thread(
        target=lambda: result.append(
            relays.execute(f"echo $$ > {pid_file}; exec sleep 300", 300, repeatable=False)
        )
    )
    runner.start()
    until = time.monotonic() + 10
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < until
        time.sleep(0.02)
    sandbox.streams[0].process.stdin.close()  # type: ignore[union-attr] - this side's end
    assert _gone(int(pid_file.read_text()))
    runner.join(30)
    assert result == [Relayed(UNANSWERED, None)]


def test_an_unused_relay_is_let_go_before_it_would_end_itself(
    sandbox: StreamingShellSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(relay, "KEPT_IDLE", 0.0)
    relays = Relays(sandbox, "python3")
    try:
        assert _run(relays, "echo 1").output == "1\n"
        assert _run(relays, "echo 2").output == "2\n"
        assert sandbox.calls["open_stream"] == 2
        assert sandbox.streams[0].process.wait(10) == 0  # the first, let go, ended
    finally:
        relays.close()


def test_a_relay_ends_itself_when_idle(
    sandbox: StreamingShellSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(relay, "RELAY_IDLE", 0.3)
    relays = Relays(sandbox, "python3")
    try:
        assert _run(relays, "true").exit_code == 0
        assert sandbox.streams[0].process.wait(10) == 0
    finally:
        relays.close()


# ----- through the backend ------------------------------------------------------------------------


@pytest.fixture
def backend(sandbox: StreamingShellSandbox, tmp_path: Path) -> Iterator[SandboxBackend]:
    (tmp_path / "workspace").mkdir()
    backend = SandboxBackend(
        sandbox, str(tmp_path / "workspace"), helper_folder=str(tmp_path / "helper")
    )
    yield backend
    backend.close()


def test_file_operations_use_no_execute_once_a_relay_runs(
    backend: SandboxBackend, sandbox: StreamingShellSandbox
) -> None:
    backend.write_bytes("/a.txt", b"one\n")
    warm = sandbox.calls["execute"]
    for number in range(5):
        backend.write_bytes(f"/b{number}.txt", b"two\n")
        assert backend.read_bytes(f"/b{number}.txt") == b"two\n"
    assert sandbox.calls["execute"] == warm
    assert sandbox.calls["open_stream"] == 1


def test_the_agents_command_keeps_the_providers_execute(
    backend: SandboxBackend, sandbox: StreamingShellSandbox
) -> None:
    backend.write_bytes("/a.txt", b"one\n")
    before = sandbox.calls["execute"]
    result = backend.execute("echo hello", timeout=30, output_limit=1000)
    assert result.output.strip() == "hello"
    assert sandbox.calls["execute"] > before


async def test_async_operations_use_the_relays_too(
    backend: SandboxBackend, sandbox: StreamingShellSandbox
) -> None:
    await backend.awrite_bytes("/a.txt", b"one\n")
    warm = sandbox.calls["execute"]
    results = await asyncio.gather(*(backend.aread_bytes("/a.txt") for _ in range(6)))
    assert results == [b"one\n"] * 6
    assert sandbox.calls["execute"] == warm


def test_a_change_whose_answer_was_lost_is_one_sentence_and_the_file_is_whole(
    backend: SandboxBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stream breaks after the relay took the change: it may have run (or been cut
    short by the relay's end), so it is not run again; the model is told to check."""
    backend.write_bytes("/a.txt", b"old\n")
    line = relay._Relay.line
    broken: list[bool] = []

    def lost(self: relay._Relay, until: float) -> bytes:
        if not broken:
            broken.append(True)
            raise relay._Ended
        return line(self, until)

    monkeypatch.setattr(relay._Relay, "line", lost)
    with pytest.raises(StoreUnavailable, match="check the file, then try again"):
        backend.write_bytes("/a.txt", b"new\n" * 1000)
    monkeypatch.setattr(relay._Relay, "line", line)
    assert backend.read_bytes("/a.txt") in {b"old\n", b"new\n" * 1000}


def test_a_forked_process_starts_its_own_relay_and_leaves_the_parents_alone(
    backend: SandboxBackend, sandbox: StreamingShellSandbox
) -> None:
    """Two processes writing one stream would mix their commands: a fork starts its own."""
    backend.write_bytes("/a.txt", b"parent\n")
    relays = backend._transport._relays
    assert relays is not None
    reading, writing = os.pipe()
    relays._lock.acquire()  # as another thread of the parent might hold it at the fork
    child = os.fork()
    if child != 0:
        relays._lock.release()
    if child == 0:  # pragma: no cover - the child's report is its exit status and the pipe
        status = 1
        try:
            backend.write_bytes("/b.txt", b"child\n")
            opened = sandbox.calls["open_stream"]  # the parent's one, and its own
            os.write(writing, backend.read_bytes("/a.txt") + b"%d" % opened)
            backend.close()
            status = 0
        finally:
            os._exit(status)
    os.close(writing)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert os.read(reading, 100) == b"parent\n2"
    os.close(reading)
    assert sandbox.calls["open_stream"] == 1  # counted here: the child's start is its own
    assert backend.read_bytes("/b.txt") == b"child\n"  # the parent's relay still serves
    assert sandbox.calls["open_stream"] == 1
