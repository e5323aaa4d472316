"""A batch with deletions on a deepagents sandbox: one helper run, all or nothing."""

from __future__ import annotations

import asyncio
import errno
import stat
from typing import TYPE_CHECKING

import pytest

from langchain_fstools.backends.protocol import ABSENT
from langchain_fstools.backends.sandbox import SandboxBackend
from langchain_fstools.core.results import Deletion, Write
from langchain_fstools.errors import VersionConflict
from tests.unit.backends.sandbox_double import ShellSandbox

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / "src" / "b.py").write_text("b = 1\n")
    (root / "old.txt").write_text("old\n")
    (root / "empty").mkdir()
    (root / "full").mkdir()
    (root / "full" / "kept.txt").write_text("kept\n")
    (root / "link").symlink_to("src/a.py")
    return root


@pytest.fixture
def sandbox() -> ShellSandbox:
    return ShellSandbox()


@pytest.fixture
def backend(workspace: Path, sandbox: ShellSandbox) -> SandboxBackend:
    return SandboxBackend(sandbox, str(workspace), helper_folder=str(workspace.parent / "helper"))


def _tree(root: Path) -> dict[str, tuple[str, int, bytes | str]]:
    found: dict[str, tuple[str, int, bytes | str]] = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        info = path.lstat()
        if path.is_symlink():
            found[key] = ("link", int(info.st_ino), str(path.readlink()))
        elif path.is_dir():
            found[key] = ("dir", stat.S_IMODE(info.st_mode), "")
        else:
            found[key] = ("file", int(info.st_ino), path.read_bytes())
    return found


def test_writes_and_deletions_are_one_helper_run(
    backend: SandboxBackend, workspace: Path, sandbox: ShellSandbox
) -> None:
    backend.stat("/")  # the helper is installed
    before = sandbox.calls["execute"]
    old = backend.stat("/old.txt").version
    infos = backend.write_many(
        [Write("/src/a.py", b"a = 2\n"), Write("/new/c.py", b"c = 1\n", ABSENT)],
        [Deletion("/old.txt", old), Deletion("/empty"), Deletion("/link")],
    )
    assert sandbox.calls["execute"] - before == 2  # the stat, then the batch
    assert [info.path for info in infos] == ["/src/a.py", "/new/c.py"]
    assert (workspace / "src" / "a.py").read_text() == "a = 2\n"
    assert (workspace / "new" / "c.py").read_text() == "c = 1\n"
    assert not (workspace / "old.txt").exists()
    assert not (workspace / "empty").exists()
    assert not (workspace / "link").is_symlink()
    assert (workspace / "src" / "a.py").exists()  # a link's target stays
    assert sorted(p.name for p in (workspace / "src").iterdir()) == ["a.py", "b.py"]


def test_a_failure_in_the_middle_puts_back_every_step_before_it(
    backend: SandboxBackend, workspace: Path
) -> None:
    """The writes are renamed in and two entries removed before `full` fails (not empty)."""
    before = _tree(workspace)
    with pytest.raises(OSError, match="full") as caught:
        backend.write_many(
            [Write("/src/a.py", b"a = 2\n"), Write("/src/b.py", b"b = 2\n")],
            [Deletion("/old.txt"), Deletion("/empty"), Deletion("/full"), Deletion("/link")],
        )
    assert caught.value.errno == errno.ENOTEMPTY
    assert _tree(workspace) == before  # the same files, by inode, and the same modes
    assert sorted(p.name for p in workspace.iterdir()) == sorted(
        ["src", "old.txt", "empty", "full", "link"]
    )


def test_a_stale_deletion_changes_nothing(backend: SandboxBackend, workspace: Path) -> None:
    stale = backend.stat("/old.txt").version
    (workspace / "old.txt").write_text("changed since\n")
    before = _tree(workspace)
    with pytest.raises(VersionConflict):
        backend.write_many([Write("/src/a.py", b"a = 2\n")], [Deletion("/old.txt", stale)])
    assert _tree(workspace) == before


def test_a_missing_deletion_changes_nothing(backend: SandboxBackend, workspace: Path) -> None:
    before = _tree(workspace)
    with pytest.raises(FileNotFoundError):
        backend.write_many([Write("/src/a.py", b"a = 2\n")], [Deletion("/nowhere.txt")])
    assert _tree(workspace) == before


def test_the_async_batch_is_the_same(backend: SandboxBackend, workspace: Path) -> None:
    asyncio.run(backend.awrite_many([Write("/src/b.py", b"b = 3\n")], [Deletion("/old.txt")]))
    assert (workspace / "src" / "b.py").read_text() == "b = 3\n"
    assert not (workspace / "old.txt").exists()
