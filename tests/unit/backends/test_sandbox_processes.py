"""Background processes of a deepagents sandbox, kept there by the helper (sh -c double)."""

from __future__ import annotations

import subprocess
import time
import uuid
from typing import TYPE_CHECKING

import pytest

from langchain_fstools.backends.sandbox import SandboxBackend
from langchain_fstools.errors import InvalidArgument
from tests.unit.backends.sandbox_double import ShellSandbox

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from langchain_fstools.backends.sandbox.kept_processes import SandboxProcesses
    from langchain_fstools.shell.session.background import Background


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[SandboxBackend]:
    (tmp_path / "ws").mkdir()
    backend = SandboxBackend(
        ShellSandbox(), str(tmp_path / "ws"), helper_folder=str(tmp_path / "helper")
    )
    yield backend
    backend.close()


def _table(backend: SandboxBackend) -> SandboxProcesses:
    table = backend.processes()
    assert table is not None
    return table


def _running(marker: str) -> int:
    """How many processes of this machine carry `marker` in their command line."""
    found = subprocess.run(
        ["pgrep", "-f", marker], capture_output=True, text=True, check=False
    ).stdout.split()
    return len(found)


def _read_until(process: Background, text: str, seconds: float = 10.0) -> str:
    seen = ""
    until = time.monotonic() + seconds
    while text not in seen and time.monotonic() < until:
        seen += process.read().text
        time.sleep(0.1)
    return seen


def test_a_background_process_s_output_is_read_then_it_is_killed(
    backend: SandboxBackend,
) -> None:
    marker = uuid.uuid4().hex
    table = _table(backend)
    process = table.start(f"while :; do echo tick; sleep 0.1; done # {marker}", output_limit=10_000)
    assert process.ident == "p1"
    assert process.running
    assert "tick\n" in _read_until(process, "tick\n")
    assert _running(marker) >= 1
    process.kill()
    assert not process.running
    assert process.ended_by == "kill"
    assert process.exit_code is None
    assert _running(marker) == 0


def test_a_process_that_ends_reports_its_exit_code_and_last_output(
    backend: SandboxBackend,
) -> None:
    process = _table(backend).start("echo first; echo second >&2; exit 3", output_limit=1000)
    assert process.wait(10)
    output = process.read()
    assert "first\n" in output.text
    assert "second" in output.text
    assert (output.running, output.exit_code, output.ended_by) == (False, 3, None)


def test_the_list_names_every_process_with_its_command_and_standing(
    backend: SandboxBackend,
) -> None:
    table = _table(backend)
    sleeper = table.start("sleep 30", output_limit=1000)
    quick = table.start("true", output_limit=1000)
    assert quick.wait(10)
    listed = {p.ident: (p.command, p.running, p.exit_code) for p in table.all()}
    assert listed == {sleeper.ident: ("sleep 30", True, None), quick.ident: ("true", False, 0)}


def test_input_written_to_a_process_reaches_it(backend: SandboxBackend) -> None:
    process = _table(backend).start("read line; echo got $line", output_limit=1000)
    process.write(b"hello\n")
    assert process.wait(10)
    assert process.read().text == "got hello\n"
    with pytest.raises(BrokenPipeError):
        process.write(b"late\n")


def test_closing_the_backend_ends_its_processes(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    (tmp_path / "ws").mkdir()
    backend = SandboxBackend(
        ShellSandbox(), str(tmp_path / "ws"), helper_folder=str(tmp_path / "helper")
    )
    process = _table(backend).start(f"sleep 300; echo {marker}", output_limit=1000)
    assert _running(marker) >= 1
    backend.close()
    assert not process.running
    assert process.ended_by == "session"
    until = time.monotonic() + 10
    while _running(marker) and time.monotonic() < until:
        time.sleep(0.1)
    assert _running(marker) == 0
    assert _table(backend).all() == []  # the keeper went with them


def test_a_flooding_process_keeps_a_bounded_window(backend: SandboxBackend) -> None:
    process = _table(backend).start("yes flood", output_limit=2000)
    time.sleep(1.0)
    output = process.read()
    process.kill()
    assert len(output.text) <= 2100  # the head and tail kept, with the mark between
    assert output.skipped > 100_000  # the middle only counted


def test_another_worker_on_the_same_sandbox_finds_the_process(
    backend: SandboxBackend, tmp_path: Path
) -> None:
    process = _table(backend).start("echo from the first; sleep 30", output_limit=1000)
    other = SandboxBackend(
        ShellSandbox(), str(tmp_path / "ws"), helper_folder=str(tmp_path / "helper")
    )
    found = _table(other).get(process.ident)
    assert found.command == "echo from the first; sleep 30"
    assert "from the first" in _read_until(found, "from the first")
    found.kill()
    assert _table(backend).all()[0].running is False


def test_an_unknown_process_is_one_sentence(backend: SandboxBackend) -> None:
    with pytest.raises(InvalidArgument, match="not a process of this sandbox"):
        _table(backend).get("p9")


def test_a_command_moves_to_the_background_past_yield_after(backend: SandboxBackend) -> None:
    table = _table(backend)
    quick = table.run("echo done", timeout=30, output_limit=1000, yield_after=5)
    assert (quick.output, quick.exit_code, quick.process_id) == ("done\n", 0, None)
    assert table.all() == []  # it ended in time: a command, not a process
    slow = table.run("echo started; sleep 30", timeout=60, output_limit=1000, yield_after=0.5)
    assert slow.process_id is not None
    assert slow.output == "started\n"
    table.get(slow.process_id).kill()


def test_background_processes_run_in_place_so_they_are_not_contained(
    backend: SandboxBackend, tmp_path: Path
) -> None:
    assert backend.contains_commands()
    assert not backend.contains_background()
    process = _table(backend).start("echo made > made.txt", output_limit=1000)
    assert process.wait(10)
    assert (tmp_path / "ws" / "made.txt").read_text() == "made\n"  # at once, in place
    assert _table(backend).review(process) is None


def test_a_sandbox_without_python_has_no_background_processes(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    backend = SandboxBackend(
        ShellSandbox(path=str(tmp_path / "empty-bin")),
        str(tmp_path / "ws"),
        helper_folder=str(tmp_path / "helper"),
    )
    assert backend.processes() is None
