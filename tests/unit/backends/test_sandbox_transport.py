"""How `SandboxBackend` reaches its sandbox: round trips, the helper's upload, odd providers."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import stat
import subprocess
import sys
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from deepagents.backends.protocol import ExecuteResponse

from langchain_fstools.backends.protocol import Write
from langchain_fstools.backends.sandbox import SandboxBackend, helper, transport
from langchain_fstools.backends.sandbox.transport import INLINE_REQUEST
from langchain_fstools.errors import OutsideRoot, SpecialFile, StoreUnavailable, VersionConflict
from langchain_fstools.tools.render import render_error
from tests.unit.backends.sandbox_double import ENV, ShellSandbox


class Setup:
    def __init__(
        self, tmp_path: Path, shell: ShellSandbox | None = None, *, resident_idle: float = 600
    ) -> None:
        self.root = tmp_path / "workspace"
        self.root.mkdir(exist_ok=True)
        self.folder = tmp_path / "helper"
        self.shell = shell or ShellSandbox()
        self.backend = SandboxBackend(
            self.shell,
            str(self.root),
            helper_folder=str(self.folder),
            resident_idle=resident_idle,
        )


def test_the_first_call_uploads_the_helper_once_then_each_call_is_one_execute(
    tmp_path: Path,
) -> None:
    setup = Setup(tmp_path)
    setup.backend.write_bytes("/a.txt", b"one")
    assert setup.shell.calls == {"execute": 2, "upload": 1}  # asked, uploaded, asked again
    setup.shell.calls.clear()
    assert setup.backend.read_bytes("/a.txt") == b"one"
    setup.backend.stat("/a.txt")
    setup.backend.list_dir("/")
    assert setup.shell.calls == {"execute": 3}
    other = SandboxBackend(setup.shell, str(setup.root), helper_folder=str(setup.folder))
    setup.shell.calls.clear()
    assert other.read_bytes("/a.txt") == b"one"
    assert setup.shell.calls == {"execute": 1}  # the program is kept in the sandbox


def test_the_helper_folder_is_private_and_holds_the_program_and_its_compiled_code(
    tmp_path: Path,
) -> None:
    setup = Setup(tmp_path)
    setup.backend.stat("/")
    assert stat.S_IMODE(setup.folder.stat().st_mode) == 0o700
    names = sorted(path.name for path in setup.folder.iterdir())
    assert len(names) == 4
    assert names[1].startswith(names[0] + ".")  # the program, then its code for this Python
    # the resident helper's run folder and lock (`backends.sandbox.resident`)
    assert names[2:] == [f"run-{names[0]}", f"run-{names[0]}.lock"]
    assert stat.S_IMODE((setup.folder / names[2]).stat().st_mode) == 0o700


def test_a_folder_others_can_write_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    setup.folder.mkdir()
    setup.folder.chmod(0o777)
    with pytest.raises(StoreUnavailable) as caught:
        setup.backend.write_bytes("/a.txt", b"x")
    assert caught.value.cause == "the helper's folder in the sandbox is not private to its user"
    assert caught.value.lasting
    assert setup.shell.calls["upload"] == 0
    assert list(setup.root.iterdir()) == []


def test_a_planted_program_is_replaced_by_ours(tmp_path: Path) -> None:
    setup = Setup(tmp_path, resident_idle=0)  # the loader's check (a server runs its own copy)
    setup.backend.stat("/")
    program = next(p for p in setup.folder.iterdir() if "." not in p.name)
    for path in setup.folder.iterdir():
        path.unlink()
    program.write_bytes(b"import os; os.system('touch /tmp/pwned')")
    setup.backend.write_bytes("/a.txt", b"safe")
    assert (setup.root / "a.txt").read_bytes() == b"safe"
    assert program.read_bytes() != b"import os; os.system('touch /tmp/pwned')"


def test_a_sandbox_without_python3_gets_one_sentence(tmp_path: Path) -> None:
    setup = Setup(tmp_path, ShellSandbox(path=str(tmp_path / "empty-bin")))
    with pytest.raises(StoreUnavailable) as caught:
        setup.backend.write_bytes("/a.txt", b"x")
    assert caught.value.cause == "the sandbox has no python3, which the file tools need there"
    assert caught.value.lasting
    assert list(setup.root.iterdir()) == []


def test_a_missing_root_is_a_setup_problem(tmp_path: Path) -> None:
    backend = SandboxBackend(
        ShellSandbox(), str(tmp_path / "nowhere"), helper_folder=str(tmp_path / "h")
    )
    with pytest.raises(StoreUnavailable) as caught:
        backend.stat("/")
    assert (
        caught.value.cause
        == f"the workspace root {tmp_path}/nowhere is not a directory in the sandbox"
    )


def test_a_provider_that_fails_is_a_store_failure() -> None:
    class Gone(ShellSandbox):
        def execute(self, command: str, *, timeout: int | None = None) -> object:
            raise ConnectionError("sandbox 42 was stopped")

    backend = SandboxBackend(Gone(), "/workspace")
    with pytest.raises(StoreUnavailable) as caught:
        backend.stat("/")
    assert (
        caught.value.cause == "the sandbox did not answer (ConnectionError: sandbox 42 was stopped)"
    )
    assert not caught.value.lasting


def test_a_provider_that_says_it_failed_is_that_sentence_not_a_helper_failure() -> None:
    """deepagents' providers answer a call they could not run with `Error: ...` and no code."""

    class Gone(ShellSandbox):
        def execute(self, command: str, *, timeout: int | None = None) -> object:
            return ExecuteResponse(
                output="Error: the sandbox is gone (its container 42 was removed); start a new"
                " sandbox.",
                exit_code=None,
            )

    backend = SandboxBackend(Gone(), "/workspace")
    with pytest.raises(StoreUnavailable) as caught:
        backend.stat("/")
    assert caught.value.cause == (
        "the sandbox is gone (its container 42 was removed); start a new sandbox"
    )
    message = render_error(caught.value, tool="read_file")
    assert message.count("Error:") == 1
    assert "helper" not in message


def test_text_a_provider_adds_around_the_output_is_ignored(tmp_path: Path) -> None:
    setup = Setup(
        tmp_path, ShellSandbox(banner="Welcome! <fstools: :fstools>\r\n<fstools:AAAA:fstools>\n")
    )
    setup.backend.write_bytes("/a.txt", b"data")
    assert setup.backend.read_bytes("/a.txt") == b"data"


@pytest.mark.parametrize("use_async", [False, True])
def test_a_reply_cut_short_is_downloaded_then_removed(tmp_path: Path, use_async: bool) -> None:
    setup = Setup(tmp_path, ShellSandbox(output_limit=2000))
    data = os.urandom(64_000)
    (setup.root / "big.bin").write_bytes(data)
    if use_async:
        got = asyncio.run(setup.backend.aread_bytes("/big.bin"))
    else:
        got = setup.backend.read_bytes("/big.bin")
    assert got == data
    assert setup.shell.calls["download"] == 1
    spilled = [p.name for p in setup.folder.iterdir() if p.name.startswith("out-")]
    assert len(spilled) == 1
    setup.backend.stat("/big.bin")  # the next call removes it
    assert [p.name for p in setup.folder.iterdir() if p.name.startswith("out-")] == []


def test_a_large_write_travels_as_an_uploaded_request(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    setup.backend.stat("/")
    setup.shell.calls.clear()
    data = os.urandom(INLINE_REQUEST)  # incompressible: longer than a command line takes
    info = setup.backend.write_bytes("/big.bin", data)
    assert (setup.root / "big.bin").read_bytes() == data
    assert info.size == len(data)
    assert setup.shell.calls == {"upload": 1, "execute": 1}
    assert [p.name for p in setup.folder.iterdir() if p.name.startswith("in-")] == []


def test_write_many_changes_nothing_when_one_write_cannot_be_made(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    first = setup.backend.write_bytes("/a.txt", b"old a")
    setup.backend.mkdir("/dir")
    with pytest.raises(IsADirectoryError):
        setup.backend.write_many([Write("/a.txt", b"new a", first.version), Write("/dir", b"x")])
    stale = Write("/a.txt", b"new a", "0-0-0")
    with pytest.raises(VersionConflict):
        setup.backend.write_many([Write("/b.txt", b"b"), stale])
    assert (setup.root / "a.txt").read_bytes() == b"old a"
    assert sorted(p.name for p in setup.root.iterdir()) == ["a.txt", "dir"]  # no temporaries


def test_links_inside_the_root_are_followed_and_links_out_refused(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"secret")
    (setup.root / "real.txt").write_bytes(b"real")
    (setup.root / "alias.txt").symlink_to(setup.root / "real.txt")
    (setup.root / "out.txt").symlink_to(outside / "secret.txt")
    (setup.root / "out-dir").symlink_to(outside)
    backend = setup.backend
    assert backend.read_bytes("/alias.txt") == b"real"
    assert backend.resolve("/alias.txt") == "/real.txt"
    backend.write_bytes("/alias.txt", b"through the link")
    assert (setup.root / "alias.txt").is_symlink()
    assert (setup.root / "real.txt").read_bytes() == b"through the link"
    for call in (
        lambda: backend.read_bytes("/out.txt"),
        lambda: backend.write_bytes("/out.txt", b"x"),
        lambda: backend.stat("/out-dir/secret.txt"),
        lambda: backend.write_bytes("/out-dir/new.txt", b"x"),
        lambda: backend.list_dir("/out-dir"),
    ):
        with pytest.raises(OutsideRoot):
            call()
    assert (outside / "secret.txt").read_bytes() == b"secret"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    listed = {info.name: (info.kind, info.link) for info in backend.list_dir("/")}
    assert listed["out.txt"] == ("special", True)


def test_execute_runs_in_the_root_with_bounded_output(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    (setup.root / "marker").write_bytes(b"")
    result = setup.backend.execute("ls; echo done; exit 3", timeout=10, output_limit=1000)
    assert (result.exit_code, result.output) == (3, "marker\ndone\n")
    flood = setup.backend.execute("yes | head -c 100000", timeout=10, output_limit=100)
    assert len(flood.output.encode()) < 200
    assert flood.dropped_bytes > 99_000


@pytest.mark.parametrize(
    ("root", "options"),
    [("workspace", {}), ("/w", {"helper_folder": "tmp/x"}), ("/w", {"timeout": 0})],
)
def test_bad_configuration_fails_at_construction(root: str, options: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"absolute|positive"):
        SandboxBackend(ShellSandbox(), root, **options)  # type: ignore[arg-type]


def test_a_provider_whose_transfers_miss_the_folder_is_served_through_execute(
    tmp_path: Path,
) -> None:
    setup = Setup(tmp_path, ShellSandbox(transfers_reach=False, output_limit=50_000))
    big = os.urandom(3 * INLINE_REQUEST)
    setup.backend.write_bytes("/big.bin", big)
    assert (setup.root / "big.bin").read_bytes() == big
    assert setup.backend.read_bytes("/big.bin") == big
    assert (
        asyncio.run(setup.backend.aread_bytes("/big.bin", 1000, 2 * INLINE_REQUEST))
        == (big[1000 : 1000 + 2 * INLINE_REQUEST])
    )
    setup.backend.stat("/")
    leftovers = [p.name for p in setup.folder.iterdir() if p.name.startswith(("in-", "out-"))]
    assert leftovers == []


def test_a_view_bound_to_a_call_reads_what_its_stat_brought_at_that_version(
    tmp_path: Path,
) -> None:
    setup = Setup(tmp_path)
    setup.backend.write_bytes("/a.txt", b"0123456789")
    view = setup.backend.bind(None)
    setup.shell.calls.clear()
    info = view.stat("/a.txt")
    assert view.read_bytes("/a.txt") == b"0123456789"
    assert view.read_bytes("/a.txt", 2, 3) == b"234"
    assert view.read_checked("/a.txt", 8, 5, expected_version=info.version) == b"89"
    assert setup.shell.calls == {"execute": 1}
    with pytest.raises(VersionConflict):  # another version is asked of the sandbox
        view.read_checked("/a.txt", expected_version="0-0-0")
    view.write_bytes("/a.txt", b"new")  # a change forgets what was peeked
    assert view.read_bytes("/a.txt") == b"new"
    assert setup.backend.read_bytes("/a.txt") == b"new"
    assert setup.backend._peeked is None  # the unbound backend keeps nothing


def test_a_view_keeps_what_a_checked_read_from_the_start_brought_at_that_version(
    tmp_path: Path,
) -> None:
    """A read of a known version (no stat) is one round trip for its window's passes."""
    setup = Setup(tmp_path)
    version = setup.backend.write_bytes("/a.txt", b"0123456789").version
    view = setup.backend.bind(None)
    setup.shell.calls.clear()
    assert view.read_checked("/a.txt", 0, 4, expected_version=version) == b"0123"
    assert view.read_checked("/a.txt", 1, 2, expected_version=version) == b"12"
    assert setup.shell.calls == {"execute": 1}  # the first 4 bytes, not the file's end
    assert view.read_checked("/a.txt", 2, 100, expected_version=version) == b"23456789"
    assert view.read_checked("/a.txt", 0, 100, expected_version=version) == b"0123456789"
    assert view.read_checked("/a.txt", 0, 0, expected_version=version) == b""
    assert view.read_bytes("/a.txt") == b"0123456789"  # fewer bytes than asked: the whole file
    assert setup.shell.calls == {"execute": 3}
    (setup.root / "a.txt").write_bytes(b"changed")
    with pytest.raises(VersionConflict):  # a read at another version asks the sandbox
        view.read_checked("/a.txt", 0, 100, expected_version="0-0-0")


def test_of_writers_that_read_one_version_exactly_one_wins(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    version = setup.backend.write_bytes("/a.txt", b"start").version

    def write(n: int) -> str:
        try:
            setup.backend.write_bytes("/a.txt", b"writer %d" % n, expected_version=version)
        except VersionConflict:
            return "conflict"
        return "written"

    with ThreadPoolExecutor(6) as pool:
        outcomes = list(pool.map(write, range(6)))
    assert sorted(outcomes) == ["conflict"] * 5 + ["written"]
    winner = outcomes.index("written")
    assert (setup.root / "a.txt").read_bytes() == b"writer %d" % winner


def test_backends_on_one_sandbox_and_root_share_their_storage() -> None:
    one, other = ShellSandbox("box-1"), ShellSandbox("box-1")
    assert SandboxBackend(one, "/w").storage_key() == SandboxBackend(other, "/w/").storage_key()
    assert SandboxBackend(one, "/w").storage_key() != SandboxBackend(one, "/v").storage_key()
    assert (
        SandboxBackend(one, "/w").storage_key()
        != SandboxBackend(ShellSandbox("box-2"), "/w").storage_key()
    )


class RecordingShell(ShellSandbox):
    """Keeps the commands it ran."""

    def __init__(self) -> None:
        super().__init__()
        self.commands: list[str] = []

    def execute(self, command: str, *, timeout: int | None = None) -> Any:
        self.commands.append(command)
        return super().execute(command, timeout=timeout)


def imports_of_the_last_run(shell: RecordingShell) -> tuple[set[str], str]:
    """The modules the sandbox's last run imported (run again, listed), and its output."""
    python, *arguments = shlex.split(shell.commands[-1])
    done = subprocess.run(
        [python, "-X", "importtime", *arguments],
        capture_output=True,
        text=True,
        env=ENV,
        check=True,
        timeout=60,
    )
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    return imported, done.stdout


def test_a_read_in_the_sandbox_imports_neither_typing_nor_json(tmp_path: Path) -> None:
    """A Python started for an operation (no resident helper) pays for every module imported."""
    shell = RecordingShell()
    setup = Setup(tmp_path, shell, resident_idle=0)
    setup.backend.write_bytes("/a.txt", b"one")
    assert setup.backend.read_bytes("/a.txt") == b"one"
    imported, output = imports_of_the_last_run(shell)
    assert helper.OPEN in output
    assert "langchain_fstools.backends.beneath" in imported  # what the helper imports
    assert "langchain_fstools.backends.disk_operations" in imported  # its operations
    assert not imported & {"typing", "json"}


def test_a_recorded_command_in_the_sandbox_does_not_import_typing(tmp_path: Path) -> None:
    shell = RecordingShell()
    setup = Setup(tmp_path, shell, resident_idle=0)
    assert setup.backend.execute("true", timeout=30, output_limit=1000).exit_code == 0
    imported, output = imports_of_the_last_run(shell)
    assert helper.OPEN in output
    assert "langchain_fstools.backends.sandbox.command_helper" in imported
    assert "typing" not in imported


WIRE_VALUES = [
    {"ok": [1, -2.5, 1e300, 10**30, None, True, False, 'é\n\u2028"', {"": []}]},
    {"error": ["os", 2, "/a b"]},
]


@pytest.mark.parametrize("value", WIRE_VALUES)
def test_the_wire_carries_what_json_would(value: dict[str, Any]) -> None:
    packed = helper.pack(value, b"data")
    header = zlib.decompress(packed).partition(b"\n")[0]
    assert header == json.dumps(value, separators=(",", ":")).encode()
    assert helper.unpack(packed) == (value, b"data")


@pytest.mark.parametrize("header", [b"", b"{", b"{}x", b"nul", b"[1,]"])
def test_a_header_that_is_not_json_is_a_value_error(header: bytes) -> None:
    with pytest.raises(ValueError):
        helper.unpack(zlib.compress(header + b"\n"))


def test_without_the_c_codec_the_wire_is_json_module_s(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "_json", None)  # importing it raises ImportError
    dumps, loads = helper._json_codec()
    assert dumps(WIRE_VALUES[0]) == json.dumps(WIRE_VALUES[0], separators=(",", ":"))
    assert loads(dumps(WIRE_VALUES[0])) == WIRE_VALUES[0]


def test_a_write_over_a_fifo_in_the_sandbox_is_refused_as_on_local_disk(tmp_path: Path) -> None:
    """The helper writes with the local backend's steps (`backends.disk_operations`)."""
    setup = Setup(tmp_path)
    os.mkfifo(setup.root / "pipe")
    with pytest.raises(SpecialFile) as caught:
        setup.backend.write_bytes("/pipe", b"x")
    assert caught.value == SpecialFile("/pipe", "FIFO")
    assert stat.S_ISFIFO(os.lstat(setup.root / "pipe").st_mode)


async def test_the_first_async_call_of_a_process_reads_the_helpers_sources_off_the_loop(
    tmp_path: Path,
) -> None:
    """The helper's program is read from the package once per process: not on the event
    loop (blockbuster, as `langgraph dev` runs it, fails a blocking read there)."""
    transport._digest.cache_clear()
    transport._program.cache_clear()
    (tmp_path / "workspace").mkdir()
    backend = SandboxBackend(
        ShellSandbox(), str(tmp_path / "workspace"), helper_folder=str(tmp_path / "helper")
    )
    await backend.awrite_bytes("/a.txt", b"one\n")
    assert await backend.aread_bytes("/a.txt") == b"one\n"
