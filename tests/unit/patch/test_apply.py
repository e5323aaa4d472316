"""apply: the library entry points, planning as a dry run, and the all-or-nothing commit."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from obstore.store import MemoryStore

from langchain_fstools import LocalBackend, ObjectStoreBackend
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.core import calls
from langchain_fstools.errors import ContextNotFound, OutsideRoot, PatchNotUndone, VersionConflict
from langchain_fstools.patch import aapply_patch, apply_patch, parse_patch
from langchain_fstools.patch.apply import (
    KEPT_CHANGED,
    apply_chunks,
    commit,
    plan,
    resolve_path,
)
from tests.unit.patch.failing import FailingWrites, InterferingWrites


def workspace(tmp_path: Path, **files: str) -> LocalBackend:
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    return LocalBackend(tmp_path)


TWO_FILES = (
    "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Update File: b.txt\n-b\n+B\n"
    "*** End Patch\n"
)


def test_apply_patch_sync_and_async(tmp_path: Path) -> None:
    backend = workspace(tmp_path, **{"a.txt": "a\n", "b.txt": "b\n"})
    result = apply_patch(TWO_FILES, backend)
    assert result.summary() == "Success. Updated the following files:\nM /a.txt\nM /b.txt"
    assert result.versions["/a.txt"] == backend.stat("/a.txt").version
    assert (tmp_path / "a.txt").read_text() == "A\n"
    undo = TWO_FILES.replace("-a\n+A", "-A\n+a").replace("-b\n+B", "-B\n+b")
    asyncio.run(aapply_patch(undo, backend))
    assert (tmp_path / "b.txt").read_text() == "b\n"


def test_plan_is_a_dry_run(tmp_path: Path) -> None:
    backend = workspace(tmp_path, **{"a.txt": "a\n", "b.txt": "b\n"})
    changes = calls.run(plan(parse_patch(TWO_FILES)), backend)
    assert [(c.kind, c.path, c.new_text) for c in changes] == [
        ("update", "/a.txt", "A\n"),
        ("update", "/b.txt", "B\n"),
    ]
    assert (tmp_path / "a.txt").read_text() == "a\n"


def test_a_file_changed_between_plan_and_commit_undoes_everything(tmp_path: Path) -> None:
    backend = workspace(tmp_path, **{"a.txt": "a\n", "b.txt": "b\n"})
    changes = calls.run(plan(parse_patch(TWO_FILES)), backend)
    (tmp_path / "b.txt").write_text("b, changed by someone else\n")
    with pytest.raises(VersionConflict):
        calls.run(commit(changes), backend)
    assert (tmp_path / "a.txt").read_text() == "a\n"
    assert (tmp_path / "b.txt").read_text() == "b, changed by someone else\n"


@pytest.mark.parametrize("fail_on", [1, 2, 3])
def test_a_failed_write_rolls_back_adds_moves_and_deletes(tmp_path: Path, fail_on: int) -> None:
    backend = workspace(tmp_path, **{"d.txt": "d\n", "m.txt": "m\n", "u.txt": "u\n"})
    text = (
        "*** Begin Patch\n*** Update File: u.txt\n-u\n+U\n*** Delete File: d.txt\n"
        "*** Update File: m.txt\n*** Move to: moved/deep/n.txt\n*** Add File: new/z.txt\n+z\n"
        "*** End Patch\n"
    )
    with pytest.raises(PermissionError):
        apply_patch(text, FailingWrites(backend, fail_on))
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["d.txt", "m.txt", "u.txt"]
    assert (tmp_path / "u.txt").read_text() == "u\n"


THREE_FILES = (
    "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Update File: b.txt\n-b\n+B\n"
    "*** Update File: c.txt\n-c\n+C\n*** End Patch\n"
)


def refused_third_write(backend: Backend) -> PatchNotUndone:
    """Commit THREE_FILES while another writer changes c.txt (so the third write is
    refused) and a.txt (so its restore is refused) just before the third write."""
    for name in "abc":
        backend.write_bytes(f"/{name}.txt", f"{name}\n".encode())
    changes = calls.run(plan(parse_patch(THREE_FILES)), backend)

    def another_writer() -> None:
        backend.write_bytes("/c.txt", b"c, theirs\n")
        backend.write_bytes("/a.txt", b"a, theirs\n")

    with pytest.raises(PatchNotUndone) as caught:
        calls.run(commit(changes), InterferingWrites(backend, 3, another_writer))
    return caught.value


def test_a_refused_write_undoes_only_what_no_one_changed_and_says_who_holds_what() -> None:
    backend = ObjectStoreBackend(MemoryStore())
    error = refused_third_write(backend)
    assert isinstance(error.cause, VersionConflict)
    assert error.cause.path == "/c.txt"
    assert error.restored == ("/b.txt",)
    assert error.kept == (("/a.txt", KEPT_CHANGED),)
    assert backend.read_bytes("/a.txt") == b"a, theirs\n"  # their work survives
    assert backend.read_bytes("/b.txt") == b"b\n"
    assert backend.read_bytes("/c.txt") == b"c, theirs\n"


def test_context_not_found_names_the_chunk_and_the_closest_lines() -> None:
    text = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
    update = parse_patch(
        "*** Begin Patch\n*** Update File: m.py\n@@\n-    return 1\n+    return 0\n"
        "@@ def g():\n-    retrun 2\n+    return 3\n*** End Patch"
    ).hunks[0]
    with pytest.raises(ContextNotFound) as caught:
        apply_chunks("/m.py", text, update.chunks)  # type: ignore[union-attr]
    assert caught.value == ContextNotFound("/m.py", 2, ("    retrun 2",), ("    return 2",), 6)


def test_context_lines_keep_the_file_text_and_new_lines_take_its_line_ending() -> None:
    text = "one\r\ntwo  \r\nthree\r\n"
    update = parse_patch(
        "*** Begin Patch\n*** Update File: f\n-one\n+1\n two\n+2.5\n*** End Patch"
    ).hunks[0]
    assert apply_chunks("/f", text, update.chunks) == "1\r\ntwo  \r\n2.5\r\nthree\r\n"  # type: ignore[union-attr]


def test_relative_paths_start_from_the_workdir_and_stay_inside() -> None:
    assert resolve_path("/", "a/b.txt") == "/a/b.txt"
    assert resolve_path("src", "../x.txt") == "/x.txt"
    assert resolve_path("/src", "/abs.txt") == "/abs.txt"
    with pytest.raises(OutsideRoot):
        resolve_path("/src", "../../etc/passwd")
