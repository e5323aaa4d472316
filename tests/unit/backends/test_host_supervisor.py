"""The SSH host's supervisor, run here as the host runs it: JSON lines over its stdin and stdout.

Its window keeps the head and tail of what came since the last read; it starts, feeds,
reads, lists and kills processes, watches for a line of output (`ready=`), sends back a
remembering command's shell state, and kills every process when its input ends.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langchain_fstools.backends import host_supervisor
from langchain_fstools.backends.host_supervisor import Window
from langchain_fstools.shell.session.shell_state import ShellState, remembering

SOURCE = Path(host_supervisor.__file__).read_text(encoding="utf-8")


class Host:
    """The supervisor in a child process, and the events it sent between answers."""

    def __init__(self, idle: float = 1800) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", SOURCE, str(idle)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.events: list[dict[str, Any]] = []
        self.ready = self._line()
        self._next = 0

    def _line(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the supervisor ended"
        return json.loads(line)

    def ask(self, op: str, **fields: Any) -> dict[str, Any]:
        assert self.process.stdin is not None
        self._next += 1
        self.process.stdin.write(
            (json.dumps({"id": self._next, "op": op, **fields}) + "\n").encode()
        )
        self.process.stdin.flush()
        while True:
            message = self._line()
            if message.get("event"):
                self.events.append(message)
            elif message.get("id") == self._next:
                return message

    def end_of(self, proc: str) -> dict[str, Any]:
        """Wait for the exit event of `proc`."""
        return self.event_of("exit", proc)

    def event_of(self, kind: str, proc: str) -> dict[str, Any]:
        """Wait for the first event `kind` of `proc`."""

        def found() -> dict[str, Any] | None:
            wanted = (e for e in self.events if e["event"] == kind and e["proc"] == proc)
            return next(wanted, None)

        while (event := found()) is None:
            message = self._line()
            assert message.get("event"), message
            self.events.append(message)
        return event

    def start(self, proc: str, command: str, **fields: Any) -> dict[str, Any]:
        request = {"proc": proc, "command": command, "cwd": "/", "limit": 1000, **fields}
        return self.ask("start", **request)


def _text(chunks: list[list[str]]) -> bytes:
    return b"".join(base64.b64decode(data) for _, data in chunks)


@pytest.fixture
def host() -> Iterator[Host]:
    supervisor = Host()
    yield supervisor
    if supervisor.process.poll() is None:
        supervisor.process.kill()
        supervisor.process.wait()


def test_the_window_keeps_head_and_tail_and_counts_the_middle() -> None:
    window = Window(10)
    window.add(b"abc", "out")
    window.add(b"defghijklmnop", "err")
    taken = window.take()
    assert _text(taken["head"]) == b"abcde"  # type: ignore[arg-type]
    assert _text(taken["tail"]) == b"lmnop"  # type: ignore[arg-type]
    assert taken["dropped"] == 6
    assert [stream for stream, _ in taken["tail"]] == ["err"]  # type: ignore[union-attr]
    assert window.take() == {"head": [], "dropped": 0, "tail": []}


def test_input_reaches_a_process_and_its_output_and_end_come_back(host: Host) -> None:
    assert host.ready["ready"] is True
    assert "pid" in host.start("p1", 'read line; echo "got $line"; echo oops >&2; exit 3')
    assert host.ask("write", proc="p1", data=base64.b64encode(b"hello\n").decode()) == {"id": 2}
    end = host.end_of("p1")
    assert (end["status"], end["ended_by"]) == (3, None)
    read = host.ask("read", proc="p1")
    streams = {stream: base64.b64decode(data) for stream, data in read["head"]}
    assert streams == {"out": b"got hello\n", "err": b"oops\n"}
    assert (read["running"], read["status"]) == (False, 3)
    assert host.ask("write", proc="p1", data="")["error"] == "ended"


def test_kill_ends_the_group_and_says_so(host: Host) -> None:
    host.start("p1", "sleep 600 & sleep 600")
    assert host.ask("list")["processes"][0]["running"] is True
    host.ask("kill", proc="p1")
    end = host.end_of("p1")
    assert (end["status"], end["ended_by"]) == (137, "kill")
    assert host.ask("list")["processes"] == [
        {"proc": "p1", "running": False, "status": 137, "ended_by": "kill"}
    ]


def test_a_line_already_in_the_window_matches_at_once_and_stays_to_read(host: Host) -> None:
    host.start("p1", "echo 'serving on 9000' >&2; sleep 600")
    if not host.ask("watch", proc="p1", pattern="^serving", watch=1)["matched"]:
        assert host.event_of("line", "p1")["matched"] is True  # now it is in the window
    answer = host.ask("watch", proc="p1", pattern=r"^serving on \d+$", watch=2)
    assert answer["matched"] is True
    assert _text(host.ask("read", proc="p1")["head"]) == b"serving on 9000\n"


def test_a_line_that_comes_later_is_told_as_an_event(host: Host) -> None:
    host.start("p1", "printf 'start\\nlisten'; sleep 0.3; echo 'ing on 8000'; sleep 600")
    assert host.ask("watch", proc="p1", pattern=r"^listening on \d+$", watch=7)["matched"] is False
    event = host.event_of("line", "p1")
    assert (event["watch"], event["matched"]) == (7, True)


def test_the_end_of_the_output_ends_the_watch_unmatched(host: Host) -> None:
    host.start("p1", "sleep 0.3; echo 'address in use' >&2; exit 3")
    assert host.ask("watch", proc="p1", pattern="listening", watch=1)["matched"] is False
    assert host.event_of("line", "p1")["matched"] is False
    host.end_of("p1")
    answer = host.ask("watch", proc="p1", pattern="listening", watch=2)
    assert (answer["matched"], answer["ended"]) == (False, True)


def test_a_pattern_the_host_cannot_compile_is_an_error(host: Host) -> None:
    host.start("p1", "sleep 600")
    assert "not a regex here" in host.ask("watch", proc="p1", pattern="(", watch=1)["error"]


def test_a_remembering_command_sends_its_shell_state_back(host: Host, tmp_path: Path) -> None:
    if not host.ready["bash"]:
        pytest.skip("needs bash")
    command = remembering(f"cd {tmp_path} && export SEEN='a b'")
    host.start("p1", command, remember=True)
    record = base64.b64decode(host.end_of("p1")["record"])
    state = ShellState("/").read(record)
    assert state.cwd == str(tmp_path)
    assert state.env is not None
    assert state.env["SEEN"] == "a b"


def test_a_missing_directory_starts_the_process_in_the_fallback(host: Host, tmp_path: Path) -> None:
    host.start("p1", "pwd", cwd=str(tmp_path / "gone"), fallback_cwd=str(tmp_path))
    host.end_of("p1")
    assert _text(host.ask("read", proc="p1")["head"]) == f"{tmp_path}\n".encode()


def test_an_unknown_process_or_request_is_an_error(host: Host) -> None:
    assert "error" in host.ask("read", proc="p9")
    assert "error" in host.ask("jump", proc="p9")


def test_a_terminal_is_given_when_asked(host: Host) -> None:
    host.start("p1", "test -t 0 && echo terminal", terminal=True)
    host.end_of("p1")
    assert _text(host.ask("read", proc="p1")["head"]) == b"terminal\r\n"


def test_the_end_of_its_input_kills_every_process(host: Host) -> None:
    pid = host.start("p1", "sleep 600")["pid"]
    assert host.process.stdin is not None
    host.process.stdin.close()
    assert host.process.wait(30) == 0
    assert not Path(f"/proc/{pid}").exists()


def test_an_idle_process_is_ended_and_says_why() -> None:
    idle = Host(idle=0.2)
    try:
        idle.start("p1", "sleep 600")
        end = idle.end_of("p1")
        assert (end["status"], end["ended_by"]) == (137, "idle")
    finally:
        idle.process.kill()
        idle.process.wait()


def test_an_idle_supervisor_with_nothing_running_exits() -> None:
    idle = Host(idle=0.2)
    try:
        assert idle.process.wait(30) == 0
    finally:
        if idle.process.poll() is None:
            idle.process.kill()
            idle.process.wait()
