"""Commands in a deepagents sandbox are recorded as change sets, and nothing lasts until commit."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from langchain_fstools.backends.sandbox import SandboxBackend, transport
from langchain_fstools.core.changesets import ChangeKind
from langchain_fstools.core.paths import ROOT
from langchain_fstools.core.results import ExecutionResult
from langchain_fstools.errors import DiskFull, OutsideRoot, VersionConflict
from langchain_fstools.shell.sandbox.overlay import upper_path
from tests.unit.backends.sandbox_double import ShellSandbox

pytestmark = pytest.mark.usefixtures("host_copies_in_tmp_path")

if TYPE_CHECKING:
    from collections.abc import Iterator

    from langchain_fstools.core.changesets import ChangeSet


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "notes.txt").write_text("one\n")
    (root / "old").mkdir()
    (root / "old" / "gone.txt").write_text("bye\n")
    return root


def _backend(root: Path, sandbox: ShellSandbox | None = None, **settings: Any) -> SandboxBackend:
    helper = root.parent / f"helper-{root.name}"
    return SandboxBackend(
        sandbox or ShellSandbox(), str(root), helper_folder=str(helper), **settings
    )


@pytest.fixture
def backend(workspace: Path) -> SandboxBackend:
    return _backend(workspace)


def _tree(root: Path) -> dict[str, tuple[str, int, bytes | str]]:
    found: dict[str, tuple[str, int, bytes | str]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        key = str(path.relative_to(root))
        if path.is_symlink():
            found[key] = ("link", 0, str(path.readlink()))
        elif path.is_dir():
            found[key] = ("dir", stat.S_IMODE(info.st_mode), "")
        else:
            found[key] = ("file", stat.S_IMODE(info.st_mode), path.read_bytes())
    return found


def _listed(changes: ChangeSet) -> list[tuple[str, str, str]]:
    return [(c.kind.value, c.path, c.entry) for c in changes.changes]


SCRIPT = (
    "echo more >> notes.txt; rm -r old; mkdir -p build;"
    " printf '\\000\\001\\377' > build/blob.bin; ln -s ../notes.txt build/notes;"
    " chmod 755 src/app.py; echo done"
)


def test_a_commands_changes_are_listed_and_the_workspace_is_unchanged(
    backend: SandboxBackend, workspace: Path
) -> None:
    before = _tree(workspace)
    result = backend.execute_changes(SCRIPT, timeout=20, output_limit=10_000)
    assert result.output == "done\n"
    assert result.exit_code == 0
    changes = result.changes
    assert changes is not None
    try:
        assert _listed(changes) == [
            ("A", "/build", "directory"),
            ("A", "/build/blob.bin", "file"),
            ("A", "/build/notes", "link"),
            ("M", "/notes.txt", "file"),
            ("D", "/old", "directory"),
            ("D", "/old/gone.txt", "file"),
            ("M", "/src/app.py", "file"),
        ]
        by_path = {c.path: c for c in changes.changes}
        assert Path(upper_path(changes, "/build/blob.bin")).read_bytes() == b"\x00\x01\xff"
        assert Path(upper_path(changes, "/notes.txt")).read_bytes() == b"one\nmore\n"
        assert by_path["/build/notes"].target == "../notes.txt"
        assert by_path["/src/app.py"].mode == 0o755
        assert by_path["/src/app.py"].old_mode == 0o644
        assert by_path["/notes.txt"].before == backend.stat("/notes.txt").version
        assert by_path["/build/blob.bin"].before is None
        assert _tree(workspace) == before
    finally:
        changes.discard()


def test_a_committed_set_is_the_workspace_after_the_command(
    backend: SandboxBackend, workspace: Path, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    shutil.copytree(workspace, plain, symlinks=True)
    os.system(f"cd {plain} && {SCRIPT} >/dev/null")  # noqa: S605 - the same script, run plainly
    result = backend.execute_changes(SCRIPT, timeout=20, output_limit=10_000)
    assert result.changes is not None
    infos = backend.commit(result.changes)
    result.changes.discard()
    assert _tree(workspace) == _tree(plain)
    assert {info.path: info.version for info in infos}["/notes.txt"] == backend.stat(
        "/notes.txt"
    ).version


def test_a_second_command_sees_what_the_file_tools_wrote_since(
    backend: SandboxBackend, workspace: Path
) -> None:
    first = backend.execute_changes("true", timeout=20, output_limit=1000)
    assert first.changes is not None
    assert not first.changes
    backend.write_bytes("/notes.txt", b"edited\n")
    result = backend.execute_changes("echo x >> notes.txt", timeout=20, output_limit=1000)
    assert result.changes is not None
    assert Path(upper_path(result.changes, "/notes.txt")).read_bytes() == b"edited\nx\n"
    result.changes.discard()
    assert (workspace / "notes.txt").read_bytes() == b"edited\n"


def test_a_rejected_modification_keeps_the_files_version(
    backend: SandboxBackend, workspace: Path
) -> None:
    version = backend.stat("/notes.txt").version
    result = backend.execute_changes("echo x >> notes.txt", timeout=20, output_limit=1000)
    assert result.changes is not None
    result.changes.discard()
    assert backend.stat("/notes.txt").version == version
    assert (workspace / "notes.txt").read_text() == "one\n"


def test_a_set_whose_path_changed_meanwhile_is_refused_whole(
    backend: SandboxBackend, workspace: Path
) -> None:
    result = backend.execute_changes(
        "echo new > fresh.txt; echo x >> notes.txt", timeout=20, output_limit=1000
    )
    assert result.changes is not None
    backend.write_bytes("/notes.txt", b"someone else\n")
    with pytest.raises(VersionConflict) as raised:
        backend.commit(result.changes)
    result.changes.discard()
    assert raised.value.path == "/notes.txt"
    assert not (workspace / "fresh.txt").exists()
    assert (workspace / "notes.txt").read_text() == "someone else\n"


def test_a_link_put_on_the_way_before_the_commit_is_refused(
    backend: SandboxBackend, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    result = backend.execute_changes("echo x > src/new.txt", timeout=20, output_limit=1000)
    assert result.changes is not None
    shutil.rmtree(workspace / "src")
    (workspace / "src").symlink_to(outside)  # a process left running, say
    with pytest.raises(OutsideRoot):
        backend.commit(result.changes)
    result.changes.discard()
    assert list(outside.iterdir()) == []


def test_a_write_while_a_command_runs_waits_for_it_and_is_not_undone(
    backend: SandboxBackend, workspace: Path
) -> None:
    assert backend.contains_commands()
    results: list[ExecutionResult] = []
    command = threading.Thread(
        target=lambda: results.append(
            backend.execute_changes("sleep 2; cat notes.txt", timeout=20, output_limit=100)
        )
    )
    command.start()
    time.sleep(1)
    backend.write_bytes("/notes.txt", b"mine\n")
    command.join()
    (result,) = results
    assert result.output == "one\n"  # the write waited for the command's end
    assert result.changes is not None
    assert not result.changes
    assert (workspace / "notes.txt").read_text() == "mine\n"


def test_a_bound_view_reads_what_a_commit_wrote_not_what_it_peeked_before(
    backend: SandboxBackend,
) -> None:
    view = backend.bind(None)
    assert view.stat("/notes.txt").size == 4  # peeks the first bytes
    result = view.execute_changes("echo x >> notes.txt", timeout=20, output_limit=100)
    assert result.changes is not None
    view.commit(result.changes)
    result.changes.discard()
    assert view.read_bytes("/notes.txt") == b"one\nx\n"


def test_set_uid_bits_are_dropped(backend: SandboxBackend, workspace: Path) -> None:
    result = backend.execute_changes("chmod 4755 src/app.py", timeout=20, output_limit=1000)
    assert result.changes is not None
    (change,) = result.changes.changes
    assert change.mode == 0o755
    assert change.dropped == stat.S_ISUID
    backend.commit(result.changes)
    result.changes.discard()
    assert stat.S_IMODE((workspace / "src" / "app.py").stat().st_mode) == 0o755


def test_a_file_replacing_a_folder_is_a_deletion_and_an_addition(
    backend: SandboxBackend, workspace: Path
) -> None:
    result = backend.execute_changes("rm -r old && echo f > old", timeout=20, output_limit=1000)
    assert result.changes is not None
    assert _listed(result.changes) == [
        ("D", "/old", "directory"),
        ("D", "/old/gone.txt", "file"),
        ("A", "/old", "file"),
    ]
    backend.commit(result.changes)
    result.changes.discard()
    assert (workspace / "old").read_text() == "f\n"


def test_output_floods_keep_head_and_tail(backend: SandboxBackend) -> None:
    result = backend.execute_changes(
        "yes line | head -c 10000000; echo; echo end", timeout=30, output_limit=2000
    )
    assert result.dropped_bytes > 9_000_000
    assert result.output.startswith("line\n")
    assert result.output.endswith("end\n")
    assert "bytes of output omitted" in result.output


def test_stderr_lines_are_marked(backend: SandboxBackend) -> None:
    result = backend.execute_changes("echo a; echo b >&2", timeout=20, output_limit=1000)
    assert result.output == "a\n[stderr] b\n"


def test_a_command_past_its_deadline_is_killed_with_what_it_started(
    backend: SandboxBackend, workspace: Path
) -> None:
    result = backend.execute_changes(
        "echo started; (sleep 30; echo late > late.txt) & sleep 30", timeout=1, output_limit=1000
    )
    assert result.timed_out
    assert result.exit_code is None
    assert result.output == "started\n"
    assert result.changes is not None
    assert not result.changes
    assert not (workspace / "late.txt").exists()


def test_a_set_over_the_changed_bytes_limit_keeps_nothing(workspace: Path) -> None:
    backend = _backend(workspace, changed_bytes=1000)
    result = backend.execute_changes(
        "head -c 5000 /dev/zero > big; echo x >> notes.txt", timeout=20, output_limit=1000
    )
    assert result.changes is None
    assert result.limit is not None
    assert (result.limit.name, result.limit.value) == ("changed_bytes", 1000)
    assert not (workspace / "big").exists()
    assert (workspace / "notes.txt").read_text() == "one\n"


def test_large_contents_travel_as_files(
    backend: SandboxBackend, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert backend.contains_commands()  # the private folder exists before a request file
    monkeypatch.setattr(transport, "INLINE_REQUEST", 100)
    monkeypatch.setattr(transport, "INLINE_REPLY", 100)
    data = os.urandom(50_000).hex()
    (workspace / "data.txt").write_text(data)
    result = backend.execute_changes("rev data.txt > reversed.txt", timeout=20, output_limit=100)
    assert result.changes is not None
    backend.commit(result.changes)
    result.changes.discard()
    assert (workspace / "reversed.txt").read_text() == data[::-1]


def test_without_python3_commands_run_plainly(workspace: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "echo", "cat", "mkdir", "mv"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    backend = _backend(workspace, ShellSandbox(path=str(bin_dir)))
    assert not backend.contains_commands()
    result = backend.execute_changes("echo hi > made.txt; echo ok", timeout=20, output_limit=100)
    assert result.changes is None
    assert result.output == "ok\n"
    assert (workspace / "made.txt").read_text() == "hi\n"


def test_one_round_trip_per_command(workspace: Path) -> None:
    sandbox = ShellSandbox()
    backend = _backend(workspace, sandbox)
    assert backend.contains_commands()
    result = backend.execute_changes("echo x > y.txt", timeout=20, output_limit=100)
    assert sandbox.calls == {"execute": 3, "upload": 1}  # the probe sent the helper once
    assert result.changes is not None
    backend.commit(result.changes)
    result.changes.discard()
    assert sandbox.calls == {"execute": 4, "upload": 1}


def test_async_twins_give_the_same_set(backend: SandboxBackend) -> None:
    async def both() -> tuple[list[tuple[str, str, str]], list[str]]:
        result = await backend.aexecute_changes("echo z > z.txt", timeout=20, output_limit=100)
        assert result.changes is not None
        infos = await backend.acommit(result.changes)
        result.changes.discard()
        return _listed(result.changes), [info.path for info in infos]

    listed, written = asyncio.run(both())
    assert listed == [("A", "/z.txt", "file")]
    assert written == ["/z.txt"]


def test_a_helper_that_cannot_keep_its_copy_changes_nothing(
    backend: SandboxBackend, workspace: Path
) -> None:
    backend.execute_changes("true", timeout=20, output_limit=100)
    objects = workspace.parent / "helper-ws" / "commands" / "objects"
    shutil.rmtree(objects)
    objects.write_text("not a folder")
    with pytest.raises(OSError) as raised:
        backend.execute_changes("echo x >> notes.txt", timeout=20, output_limit=100)
    assert raised.value.filename == "/"  # no path of the sandbox's private folder
    assert (workspace / "notes.txt").read_text() == "one\n"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB file system (tmpfs), where this test may mount one (as root)."""
    folder = tmp_path / "small"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "none", str(folder)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_a_command_filling_the_disk_keeps_nothing_until_commit_and_the_commit_fits_or_not(
    small_disk: Path,
) -> None:
    (small_disk / "notes.txt").write_text("one\n")
    backend = _backend(small_disk)
    result = backend.execute_changes(
        "echo x >> notes.txt; head -c 5000000 /dev/urandom > big", timeout=20, output_limit=1000
    )
    assert result.exit_code != 0
    assert "No space left" in result.output
    assert sorted(p.name for p in small_disk.iterdir()) == ["notes.txt"]
    assert (small_disk / "notes.txt").read_text() == "one\n"
    assert result.changes is not None
    with pytest.raises(DiskFull):
        backend.commit(result.changes)
    result.changes.discard()
    assert sorted(p.name for p in small_disk.iterdir()) == ["notes.txt"]
    assert (small_disk / "notes.txt").read_text() == "one\n"


def test_kinds_are_the_change_kinds() -> None:
    assert {kind.value for kind in ChangeKind} == {"A", "M", "D"}
    assert ROOT == "/"


def test_a_provider_s_kill_at_the_deadline_is_a_timeout_as_locally(tmp_path: Path) -> None:
    """Without python3 commands are the provider's; its exit 124 at the deadline is ours."""
    (tmp_path / "ws").mkdir()
    sandbox = ShellSandbox(path=str(tmp_path / "empty-bin"), timeout_exit=124)
    backend = _backend(tmp_path / "ws", sandbox)
    result = backend.execute_changes(
        "echo started; exec /bin/sleep 30", timeout=1, output_limit=100
    )
    assert (result.timed_out, result.exit_code) == (True, None)
    assert result.output == "started\n"


def test_exit_124_before_the_deadline_is_the_command_s_own(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    sandbox = ShellSandbox(path=str(tmp_path / "empty-bin"), timeout_exit=124)
    backend = _backend(tmp_path / "ws", sandbox)
    result = backend.execute_changes("exit 124", timeout=30, output_limit=100)
    assert (result.timed_out, result.exit_code) == (False, 124)
