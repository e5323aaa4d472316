"""A command on a copy-on-write view changes the workspace exactly as it would in place.

Differential: each command of a corpus runs once directly in a copy of a workspace
(`bash -c` there) and once through `LocalBackend.execute_changes` + `commit` on another
copy; the two trees must then be identical (types, bytes, permission bits, link targets).
Before the commit, the workspace must not have changed at all.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path

import pytest

from langchain_fstools import LocalBackend
from langchain_fstools.core.changesets import Change, ChangeKind, ChangeSet
from langchain_fstools.errors import ChangesNotCommitted, VersionConflict
from langchain_fstools.shell.sandbox.overlay import host_umask
from langchain_fstools.shell.sandbox.sandbox import Sandbox, find_bwrap

pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="needs bubblewrap")

GIT = "GIT_AUTHOR_DATE=2000-01-01T00:00Z GIT_COMMITTER_DATE=2000-01-01T00:00Z git -c user.name=t -c user.email=t@e -c init.defaultBranch=main -c commit.gpgsign=false"

WHEEL = "tinypkg-1.0-py3-none-any.whl"


def write_wheel(path: Path) -> None:
    """A minimal pure-Python wheel of the package `tinypkg`, made here (no network)."""
    files = {
        "tinypkg/__init__.py": b"VALUE = 42\n",
        "tinypkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n",
        "tinypkg-1.0.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = [f"{name},sha256={_digest(data)},{len(data)}" for name, data in files.items()] + [
        "tinypkg-1.0.dist-info/RECORD,,"
    ]
    files["tinypkg-1.0.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():  # a fixed time: every workspace's wheel is the same
            wheel.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data)


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


CORPUS = {
    "new file": "echo x > new.txt",
    "append": "echo more >> a.txt",
    "truncate": ": > a.txt",
    "same bytes rewritten": "cat a.txt > b && cat b > a.txt && rm b",
    "opened for writing, unchanged": 'python3 -c \'open("a.txt", "r+").close()\'',
    "touch": "touch a.txt",
    "chmod": "chmod 755 a.txt",
    "delete file": "rm a.txt",
    "delete tree": "rm -rf tree",
    "tree replaced": "rm -rf tree && mkdir tree && echo t > tree/t",
    "file becomes folder": "rm a.txt && mkdir a.txt && echo in > a.txt/in",
    "folder becomes file": "rm -rf tree && echo now-a-file > tree",
    "new nested folders": "mkdir -p d/e/f && echo deep > d/e/f/g",
    "empty folder": "mkdir empty",
    "folder mode": "chmod 700 tree",
    "link inside": "ln -s a.txt link-in",
    "link outside": "ln -s /etc/hostname link-out",
    "dangling link": "ln -s nowhere dangling",
    "link retargeted": "ln -sfn tree link",
    "link replaced by file": "rm link && echo f > link",
    "hard link": "ln a.txt hard.txt",
    "newline in name": "printf x > \"$(printf 'new\\nline')\"",
    "non-UTF-8 name": "printf x > \"$(printf 'bad\\377name')\"",
    "folder moved": "mv tree moved",
    "file moved": "mv a.txt tree/a.txt",
    "tar extraction": (
        't=$(mktemp -d) && mkdir "$t/src" && echo one > "$t/src/one" && chmod 600 "$t/src/one"'
        ' && ln -s one "$t/src/ln" && tar -C "$t" -cf "$t/t.tar" src && tar -xf "$t/t.tar"'
        ' && rm -r "$t"'
    ),
    "git init and commit": f"{GIT} init -q repo && echo c > repo/c && cd repo && {GIT} add c"
    f" && {GIT} commit -qm c",
    "commit in an existing repository": f"cd git && echo more > f && {GIT} commit -qam more",
    "nothing": "true",
    "a virtualenv and a package installed into it from a local wheel": (
        "python3 -m venv env && PIP_NO_CACHE_DIR=1 env/bin/pip install -q --no-index"
        f" --no-deps {WHEEL} && env/bin/python -c 'import tinypkg; print(tinypkg.VALUE)'"
    ),
}


def workspace(folder: Path) -> Path:
    """A small workspace: files, a tree, a link, an executable and a git repository."""
    folder.mkdir()
    (folder / "a.txt").write_text("a\n")
    (folder / "tree" / "x").mkdir(parents=True)
    (folder / "tree" / "x" / "y").write_text("y\n")
    (folder / "tree" / "z").write_bytes(b"\x00\x01binary")
    (folder / "link").symlink_to("a.txt")
    (folder / "run.sh").write_text("#!/bin/sh\n")
    (folder / "run.sh").chmod(0o755)
    (folder / "git").mkdir()
    (folder / "git" / "f").write_text("f\n")
    commands = f"{GIT} init -q && {GIT} add f && {GIT} commit -qm f"
    subprocess.run(["bash", "-c", commands], cwd=folder / "git", check=True)
    write_wheel(folder / WHEEL)
    return folder


def snapshot(folder: Path) -> dict[bytes, tuple[str, int, bytes]]:
    """Every entry below `folder` (by its name's bytes): type, permission bits, content.

    A link's content is its target; a directory's is empty. The folder's own path in a
    file or link (a virtualenv's scripts) reads `<root>`. Times are left out, and so is
    what holds them (git's index, compiled Python caches) or hashes the folder's path
    (an installed package's `RECORD`).
    """
    found: dict[bytes, tuple[str, int, bytes]] = {}
    base = os.fsencode(folder)
    for directory, names, files in os.walk(base):
        for name in names + files:
            path = directory + b"/" + name
            relative = path[len(base) + 1 :]
            if (
                relative.endswith((b".git/index", b".dist-info/RECORD"))
                or b"__pycache__" in relative
            ):
                continue  # times and inodes; hashes of the scripts that name the folder
            result = os.lstat(path)
            mode = stat.S_IMODE(result.st_mode)
            if stat.S_ISLNK(result.st_mode):
                target = os.readlink(path)  # noqa: PTH115 - bytes
                found[relative] = ("link", 0, target.replace(base, b"<root>"))
            elif stat.S_ISDIR(result.st_mode):
                found[relative] = ("directory", mode, b"")
            else:
                with open(path, "rb") as file:  # noqa: PTH123 - a bytes path
                    found[relative] = ("file", mode, file.read().replace(base, b"<root>"))
    return found


@pytest.fixture(params=["same filesystem", "another filesystem"])
def views_folder(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Where views are made: beside the workspace (files moved in) or on /dev/shm (copied)."""
    del tmp_path  # made first, on the usual temporary folder
    if request.param == "another filesystem":
        if not Path("/dev/shm").is_dir():
            pytest.skip("no /dev/shm")
        monkeypatch.setattr(tempfile, "tempdir", "/dev/shm")


@pytest.mark.usefixtures("views_folder")
@pytest.mark.parametrize("command", CORPUS.values(), ids=CORPUS.keys())
def test_a_committed_change_set_leaves_the_tree_a_direct_run_leaves(
    tmp_path: Path, command: str
) -> None:
    direct, viewed = workspace(tmp_path / "direct"), workspace(tmp_path / "viewed")
    same = Path(tempfile.gettempdir()).stat().st_dev == tmp_path.stat().st_dev
    assert same == (tempfile.gettempdir() != "/dev/shm")
    subprocess.run(["bash", "-c", command], cwd=direct, check=True, capture_output=True)
    before = snapshot(viewed)
    backend = LocalBackend(viewed, execute=True, sandbox=Sandbox(method="bwrap"))

    result = backend.execute_changes(command, timeout=60, output_limit=10_000)

    assert result.exit_code == 0, result.output
    assert result.changes is not None
    assert snapshot(viewed) == before  # nothing changes before the commit
    backend.commit(result.changes)
    result.changes.discard()
    assert snapshot(viewed) == snapshot(direct)
    assert not Path(result.changes.source).exists()


def test_the_change_set_says_what_changed(tmp_path: Path) -> None:
    root = workspace(tmp_path / "root")
    backend = LocalBackend(root, execute=True)

    result = backend.execute_changes(
        "echo n > new.txt; echo m >> a.txt; rm -rf tree; ln -s a.txt l; touch run.sh",
        timeout=30,
        output_limit=1000,
    )

    assert result.changes is not None
    found = [(c.kind, c.path, c.entry) for c in result.changes.changes]
    assert found == [
        (ChangeKind.MODIFIED, "/a.txt", "file"),
        (ChangeKind.ADDED, "/l", "link"),
        (ChangeKind.ADDED, "/new.txt", "file"),
        (ChangeKind.DELETED, "/tree", "directory"),
        (ChangeKind.DELETED, "/tree/x", "directory"),
        (ChangeKind.DELETED, "/tree/x/y", "file"),
        (ChangeKind.DELETED, "/tree/z", "file"),
    ]
    assert not any(change.stale for change in result.changes.changes)
    result.changes.discard()


def test_a_path_changed_in_the_workspace_while_the_command_ran_is_stale(tmp_path: Path) -> None:
    root = workspace(tmp_path / "root")
    backend = LocalBackend(root, execute=True)
    backend.execute("true", timeout=30, output_limit=10)  # the sandbox is probed first
    theirs = threading.Timer(0.5, lambda: (root / "a.txt").write_text("theirs\n"))

    theirs.start()
    result = backend.execute_changes(
        "sleep 1.5; echo mine >> a.txt; echo n > new.txt", timeout=30, output_limit=1000
    )
    theirs.join()

    assert result.changes is not None
    assert {c.path for c in result.changes.changes if c.stale} == {"/a.txt"}
    result.changes.discard()


def test_a_file_written_just_before_the_command_is_not_stale(tmp_path: Path) -> None:
    # Kernels with multigrain timestamps stamp a change ahead of the coarse clock: a
    # write a millisecond before the command must not look like one made while it ran.
    root = workspace(tmp_path / "root")
    backend = LocalBackend(root, execute=True)
    backend.execute("true", timeout=30, output_limit=10)  # a warm session: no delay
    for attempt in range(20):
        (root / "a.txt").write_text(f"written {attempt}\n")
        (root / "a.txt").stat()  # a queried inode gets a fine-grained stamp next
        (root / "a.txt").write_text(f"again {attempt}\n")
        result = backend.execute_changes("echo mine >> a.txt", timeout=30, output_limit=10)
        assert result.changes is not None
        assert [c.stale for c in result.changes.changes] == [False], attempt
        result.changes.discard()


def test_a_commit_after_the_workspace_changed_commits_nothing(tmp_path: Path) -> None:
    root = workspace(tmp_path / "root")
    backend = LocalBackend(root, execute=True)
    result = backend.execute_changes(
        "echo n > new.txt; echo m >> a.txt", timeout=30, output_limit=99
    )
    assert result.changes is not None
    (root / "a.txt").write_text("theirs\n")

    with pytest.raises(VersionConflict) as raised:
        backend.commit(result.changes)

    assert raised.value.path == "/a.txt"
    assert (root / "a.txt").read_text() == "theirs\n"
    assert not (root / "new.txt").exists()
    result.changes.discard()


def test_direct_mode_writes_in_place_and_has_no_change_set(tmp_path: Path) -> None:
    root = workspace(tmp_path / "root")
    backend = LocalBackend(root, execute=True, sandbox=Sandbox(workspace="direct"))

    result = backend.execute_changes("echo n > new.txt", timeout=30, output_limit=99)

    assert result.changes is None
    assert (root / "new.txt").read_text() == "n\n"


def test_execute_commits_what_the_command_changed(tmp_path: Path) -> None:
    root = workspace(tmp_path / "root")
    backend = LocalBackend(root, execute=True)
    views_before = views()

    result = backend.execute("echo n > new.txt && rm -rf tree", timeout=30, output_limit=99)

    assert result.changes is None
    assert (root / "new.txt").read_text() == "n\n"
    assert not (root / "tree").exists()
    assert views() == views_before


def test_execute_commits_nothing_that_plants_what_git_runs(tmp_path: Path) -> None:
    root = workspace(tmp_path / "root")
    backend = LocalBackend(root, execute=True)
    hooks = sorted(p.name for p in (root / "git" / ".git" / "hooks").iterdir())

    with pytest.raises(ChangesNotCommitted) as raised:
        backend.execute(
            "echo n > new.txt && echo evil > git/.git/hooks/post-checkout",
            timeout=30,
            output_limit=99,
        )

    assert raised.value.path == "/git/.git/hooks/post-checkout"
    assert sorted(p.name for p in (root / "git" / ".git" / "hooks").iterdir()) == hooks
    assert not (root / "new.txt").exists()


def changes_of(root: Path, command: str) -> dict[str, Change]:
    backend = LocalBackend(root, execute=True)
    result = backend.execute_changes(command, timeout=30, output_limit=1000)
    assert result.changes is not None, result.output
    backend.commit(result.changes)
    result.changes.discard()
    return {change.path: change for change in result.changes.changes}


def test_set_uid_and_set_gid_bits_are_never_committed(tmp_path: Path) -> None:
    root = workspace(tmp_path / "root")

    found = changes_of(root, "cp run.sh su && chmod 6755 su run.sh && mkdir -m 2755 g")

    assert (found["/su"].mode, found["/su"].dropped) == (0o755, 0o6000)
    assert (found["/g"].mode, found["/g"].dropped) == (0o755, 0o2000)
    assert "/run.sh" not in found  # only the set-uid bit changed: nothing is kept
    assert stat.S_IMODE((root / "su").stat().st_mode) == 0o755
    assert stat.S_IMODE((root / "g").stat().st_mode) == 0o755
    assert stat.S_IMODE((root / "run.sh").stat().st_mode) == 0o755


def test_new_entries_lose_the_write_bits_the_umask_drops(tmp_path: Path) -> None:
    root = workspace(tmp_path / "root")
    umask = host_umask()

    found = changes_of(root, "mkdir -m 777 d && echo x > d/f && chmod 666 d/f && chmod 664 a.txt")

    assert found["/d"].mode == 0o777 & ~(umask & 0o022)
    assert found["/d/f"].mode == 0o666 & ~(umask & 0o022)
    assert found["/d"].dropped == umask & 0o022
    assert stat.S_IMODE((root / "d" / "f").stat().st_mode) == 0o666 & ~(umask & 0o022)
    assert (found["/a.txt"].old_mode, found["/a.txt"].mode) == (0o644, 0o664)  # not new: kept


def test_a_mode_change_is_part_of_the_change(tmp_path: Path) -> None:
    root = workspace(tmp_path / "root")

    found = changes_of(root, "chmod +x a.txt")

    assert (found["/a.txt"].old_mode, found["/a.txt"].mode) == (0o644, 0o755)


def test_an_empty_folder_with_a_masks_mode_never_enters_a_change_set_and_is_named(
    tmp_path: Path,
) -> None:
    root = workspace(tmp_path / "root")
    backend = LocalBackend(root, execute=True)
    command = "mkdir -m 1777 mask && mkdir -m 1777 kept && touch kept/f"

    result = backend.execute_changes(command, timeout=30, output_limit=1000)

    assert result.changes is not None, result.output
    found = {change.path for change in result.changes.changes}
    backend.commit(result.changes)
    result.changes.discard()
    assert "/mask" not in found
    assert result.changes.left_out == ("/mask",)
    assert not (root / "mask").exists()
    assert "/kept/f" in found


def test_fifos_a_command_made_are_named_and_not_committed(tmp_path: Path) -> None:
    root = workspace(tmp_path / "root")
    backend = LocalBackend(root, execute=True)
    command = "mkfifo pipe && mkdir d && mkfifo d/pipe && rm a.txt && mkfifo a.txt"

    result = backend.execute_changes(command, timeout=30, output_limit=1000)

    assert result.changes is not None, result.output
    assert result.changes.special == ("/a.txt", "/d/pipe", "/pipe"), result.output
    assert {change.path for change in result.changes.changes} == {"/d"}
    assert ChangeSet.from_record(result.changes.to_record()) == result.changes
    result.changes.discard()


def test_an_empty_new_file_named_as_a_masked_file_never_enters_a_change_set(
    tmp_path: Path,
) -> None:
    """What a copy of a masked file leaves when it made its output before its read failed."""
    root = workspace(tmp_path / "root")
    outside = tmp_path / "outside"
    (outside / "folder").mkdir(parents=True)
    (outside / "key").write_text("SECRET\n")
    hidden = Sandbox(hidden=[str(outside / "key"), str(outside / "folder")])
    backend = LocalBackend(root, execute=True, sandbox=hidden)
    command = (
        f"cat {outside}/key > key; mkdir copy && cat {outside}/key > copy/key;"
        " printf x > kept/key 2>/dev/null || (mkdir kept && printf x > kept/key);"
        " touch folder other"
    )

    result = backend.execute_changes(command, timeout=30, output_limit=1000)

    assert result.changes is not None, result.output
    found = {change.path for change in result.changes.changes}
    result.changes.discard()
    assert "Permission denied" in result.output
    assert "/key" not in found
    assert "/copy/key" not in found
    assert {"/copy", "/kept/key", "/folder", "/other"} <= found  # content, or no masked file
    assert result.changes.left_out == ("/copy/key", "/key")
    assert ChangeSet.from_record(result.changes.to_record()) == result.changes


def test_an_unknown_workspace_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown workspace mode"):
        Sandbox(workspace="shared")  # type: ignore[arg-type]


def test_copies_of_the_view_are_removed(tmp_path: Path) -> None:
    root = workspace(tmp_path / "root")
    backend = LocalBackend(root, execute=True)
    result = backend.execute_changes("echo n > new.txt", timeout=30, output_limit=99)
    assert result.changes is not None
    source = result.changes.source
    assert Path(source).is_dir()

    result.changes.discard()

    assert not Path(source).exists()


def views() -> set[str]:
    """The private folders of copy-on-write views in the temporary folder."""
    return {p.name for p in Path(tempfile.gettempdir()).glob("fstools-cow-*")}


_CLOSED_FOLDERS = """
import os, stat, sys
from langchain_fstools.core.changesets import remove_folder
from langchain_fstools.shell.sandbox.overlay import Overlay
from langchain_fstools.shell.session.pending import digest

class Empty:  # a workspace with nothing in it
    def lstat(self, virtual): return None
    def names(self, virtual): return []

overlay = Overlay.create(sys.argv[1])
locked = os.path.join(overlay.upper, "locked")
os.makedirs(os.path.join(locked, "inner"))
secret = os.path.join(locked, "inner", "f.txt")
open(secret, "w").write("x")
os.chmod(secret, 0)
os.chmod(os.path.join(locked, "inner"), 0)
os.chmod(locked, 0)
changes = overlay.read_changes(Empty())
print(sorted((c.path, c.entry, c.mode) for c in changes.changes))
print(len(digest(changes)), stat.S_IMODE(os.stat(secret).st_mode))
os.chmod(os.path.join(locked, "inner"), 0)  # closed again, for the removal
remove_folder(overlay.folder)
print(os.path.exists(overlay.folder))
"""


_WITHOUT_OVERRIDES = [
    "setpriv",
    "--bounding-set=-dac_override,-dac_read_search",
    "--inh-caps=-dac_override,-dac_read_search",
]
"""Run as an agent that permission bits hold (root keeps only its ownership)."""


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv")
def test_folders_a_command_closed_are_read_as_they_were_and_removed_whole(
    tmp_path: Path,
) -> None:
    # what a non-root agent meets when a command ran `chmod 000` on folders it made
    done = subprocess.run(
        [*_WITHOUT_OVERRIDES, sys.executable, "-c", _CLOSED_FOLDERS, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    listed, hashed, exists = done.stdout.splitlines()
    expected = [
        ("/locked", "directory", 0),
        ("/locked/inner", "directory", 0),
        ("/locked/inner/f.txt", "file", 0),
    ]
    assert listed == str(expected)
    assert hashed == "64 0"  # read for its digest, its mode put back
    assert exists == "False"
    assert list(tmp_path.iterdir()) == []
