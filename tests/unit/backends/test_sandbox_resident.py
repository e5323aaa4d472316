"""The resident helper (`backends.sandbox.resident`) on the `sh -c` double.

The double's `python3` is a wrapper that counts its starts, so a test sees which calls
started a Python and which the resident server answered.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import stat
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from langchain_fstools.backends.sandbox import SandboxBackend, resident
from langchain_fstools.backends.sandbox.transport import STARTS
from langchain_fstools.errors import StoreUnavailable
from tests.unit.backends.sandbox_double import ENV, ShellSandbox

if TYPE_CHECKING:
    from deepagents.backends.protocol import ExecuteResponse


class Setup:
    """A workspace, a helper folder, and a sandbox whose `python3` counts its starts."""

    def __init__(self, tmp_path: Path, sandbox: type[ShellSandbox] = ShellSandbox) -> None:
        python = shutil.which("python3", path=ENV["PATH"])
        assert python is not None
        self.starts = tmp_path / "python-starts"
        folder = tmp_path / "bin"
        folder.mkdir()
        (folder / "python3").write_text(f'#!/bin/sh\necho >> {self.starts}\nexec {python} "$@"\n')
        (folder / "python3").chmod(0o755)
        self.root = tmp_path / "workspace"
        self.root.mkdir()
        self.folder = tmp_path / "helper"
        self.sandbox = sandbox(path=f"{folder}:{ENV['PATH']}")
        self.backend = SandboxBackend(self.sandbox, str(self.root), helper_folder=str(self.folder))

    def python_starts(self) -> int:
        return len(self.starts.read_text()) if self.starts.exists() else 0

    def server(self) -> int | None:
        """The pid of the live resident server, from its pid file."""
        try:
            (pid_file,) = self.folder.glob("run-*/pid")
            pid = int(pid_file.read_text())
            fields = Path(f"/proc/{pid}/stat").read_text().split()
        except (OSError, ValueError):
            return None
        return pid if fields[1].startswith("(fstools-") and fields[2] != "Z" else None


def test_the_first_call_starts_the_server_and_later_calls_start_no_python(
    tmp_path: Path,
) -> None:
    setup = Setup(tmp_path)
    setup.backend.write_bytes("/a.txt", b"one")
    started = setup.python_starts()
    server = setup.server()
    assert server is not None  # ready when the call that started it returned
    for number in range(5):
        setup.backend.write_bytes(f"/{number}.txt", b"%d" % number)
        assert setup.backend.read_bytes(f"/{number}.txt") == b"%d" % number
    assert setup.backend.list_dir("/")
    assert asyncio.run(setup.backend.aread_bytes("/a.txt")) == b"one"  # `arun`, the same
    assert setup.python_starts() == started
    assert setup.server() == server


def test_a_killed_server_is_replaced_by_the_next_call_which_still_answers(
    tmp_path: Path,
) -> None:
    setup = Setup(tmp_path)
    setup.backend.write_bytes("/a.txt", b"one")
    first = setup.server()
    assert first is not None
    os.kill(first, signal.SIGKILL)
    _until(lambda: setup.server() is None)
    started = setup.python_starts()
    assert setup.backend.read_bytes("/a.txt") == b"one"  # the loader answers, and starts one
    assert setup.python_starts() == started + 1
    second = setup.server()
    assert second not in {None, first}
    assert setup.backend.read_bytes("/a.txt") == b"one"
    assert setup.python_starts() == started + 1


def each_thread_reads_what_it_wrote(
    backend: SandboxBackend, threads: int, turns: int, padding: bytes
) -> list[BaseException]:
    """Each thread writes its own file `turns` times and reads it back; what failed.

    `padding` makes each write longer than a FIFO line (through a private file).
    """
    failures: list[BaseException] = []

    def work(number: int) -> None:
        try:
            for turn in range(turns):
                content = b"%d-%d" % (number, turn) + padding
                backend.write_bytes(f"/t{number}.bin", content)
                assert backend.read_bytes(f"/t{number}.bin") == content
        except BaseException as error:  # noqa: BLE001 - reported by the caller
            failures.append(error)

    started = [threading.Thread(target=work, args=(number,)) for number in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join(timeout=120)
    return failures


def test_requests_from_many_threads_are_all_answered_right(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    setup.backend.write_bytes("/start.txt", b"")
    assert each_thread_reads_what_it_wrote(setup.backend, 8, 4, os.urandom(6000)) == []
    assert (
        sorted(path.name for path in setup.folder.iterdir() if path.name[:2] in {"q-", "r-"}) == []
    )


@pytest.mark.parametrize("spoil", ["not a FIFO", "a link to the FIFO", "a link to the run folder"])
def test_a_run_folder_or_fifo_that_is_spoiled_is_not_used_and_the_loader_answers(
    tmp_path: Path, spoil: str
) -> None:
    setup = Setup(tmp_path)
    setup.backend.write_bytes("/a.txt", b"one")
    (place,) = (path for path in setup.folder.glob("run-*") if path.is_dir())
    fifo = place / "in"
    if spoil == "not a FIFO":
        fifo.unlink()
        fifo.write_text("")
    elif spoil == "a link to the FIFO":
        fifo.rename(place / "elsewhere")
        fifo.symlink_to(place / "elsewhere")
    else:
        place.rename(tmp_path / "elsewhere")
        place.symlink_to(tmp_path / "elsewhere")
    started = setup.python_starts()
    assert setup.backend.read_bytes("/a.txt") == b"one"
    assert setup.python_starts() == started + 1  # not asked of the server: the loader ran


def test_a_folder_made_public_makes_the_server_end_and_the_call_fail_closed(
    tmp_path: Path,
) -> None:
    setup = Setup(tmp_path)
    setup.backend.write_bytes("/a.txt", b"one")
    server = setup.server()
    setup.folder.chmod(0o755)
    with pytest.raises(StoreUnavailable) as caught:
        setup.backend.write_bytes("/a.txt", b"two")
    assert caught.value.cause == "the helper's folder in the sandbox is not private to its user"
    assert (setup.root / "a.txt").read_bytes() == b"one"
    _until(lambda: setup.server() is None)
    assert server is not None
    assert not any(path.is_dir() for path in setup.folder.glob("run-*"))


def test_a_server_idle_for_its_limit_ends_and_leaves_no_fifo(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    setup.backend.transport.resident_idle = 0.5
    setup.backend.write_bytes("/a.txt", b"one")
    server = setup.server()
    assert server is not None
    _until(
        lambda: not any(path.is_dir() for path in setup.folder.glob("run-*")),  # lock file left
        seconds=0.5 + resident.GRACE + 10,
    )
    _until(lambda: _ended(server))
    assert setup.backend.read_bytes("/a.txt") == b"one"  # the next call starts another
    assert setup.server() not in {None, server}


def _ended(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except FileNotFoundError:
        return True


class _WorkerGone(ShellSandbox):
    """The first command the server answers prints nothing, as when its worker was killed."""

    served = 0

    def execute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:
        response = super().execute(command, timeout=timeout)
        if "exec cat" in command and resident.NO_SERVER not in response.output:
            self.served += 1
            if self.served == 1:
                response.output = ""
        return response


def test_a_read_whose_worker_ended_without_a_reply_is_asked_again(tmp_path: Path) -> None:
    setup = Setup(tmp_path, _WorkerGone)
    setup.backend.write_bytes("/a.txt", b"one")  # the loader answers, and starts the server
    assert setup.backend.read_bytes("/a.txt") == b"one"
    assert isinstance(setup.sandbox, _WorkerGone)
    assert setup.sandbox.served == 1  # dropped, then asked of the loader


class _Unkept(ShellSandbox):
    """A provider that ends what its commands leave behind: the server never survives."""

    folder = ""

    def execute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:
        response = super().execute(command, timeout=timeout)
        for pid_file in Path(self.folder).glob("run-*/pid"):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
            pid_file.unlink()
        return response


def test_a_provider_that_ends_the_server_is_asked_for_one_only_a_few_times(
    tmp_path: Path,
) -> None:
    _Unkept.folder = str(tmp_path / "helper")
    setup = Setup(tmp_path, _Unkept)
    commands: list[str] = []
    execute = setup.sandbox.execute

    def recorded(command: str, *, timeout: int | None = None) -> Any:
        commands.append(command)
        return execute(command, timeout=timeout)

    setup.sandbox.execute = recorded  # type: ignore[method-assign]
    for number in range(STARTS + 3):
        setup.backend.write_bytes("/a.txt", b"%d" % number)
    clients = [command for command in commands if resident.NO_SERVER in command]
    assert len(clients) == STARTS + 1  # the first is asked twice (the program is uploaded)
    assert (setup.root / "a.txt").read_bytes() == b"%d" % (STARTS + 2)


def _until(condition: Any, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.02)


def test_the_request_fifo_and_the_folders_are_private(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    setup.backend.stat("/")
    (place,) = (path for path in setup.folder.glob("run-*") if path.is_dir())
    assert stat.S_IMODE(place.stat().st_mode) == 0o700
    assert stat.S_ISFIFO((place / "in").stat().st_mode)
    assert stat.S_IMODE((place / "in").stat().st_mode) == 0o600


@pytest.mark.parametrize("idle", [-1.0, float("nan")])
def test_an_idle_limit_below_zero_is_refused_at_construction(idle: float) -> None:
    with pytest.raises(ValueError, match="resident_idle"):
        SandboxBackend(ShellSandbox(), "/workspace", resident_idle=idle)
