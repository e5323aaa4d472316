"""Change sets waiting for a person: found by their key while fresh, never after."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest

from langchain_fstools.core.changesets import Change, ChangeKind, ChangeSet
from langchain_fstools.shell.session import pending
from langchain_fstools.shell.session.pending import PENDING_SECONDS, drop, keep, load, pending_key


@pytest.fixture(autouse=True)
def private_temporary_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


def a_set(tmp_path: Path) -> ChangeSet:
    source = Path(tempfile.mkdtemp(prefix="fstools-cow-"))
    (source / "upper").mkdir()
    (source / "upper" / "a.txt").write_text("new\n")
    change = Change("/a.txt", ChangeKind.MODIFIED, "file", 0o644, 4, before="v1")
    return ChangeSet((change,), str(source), ("/.venv",))


def test_a_kept_set_is_found_by_its_key_as_it_was(tmp_path: Path) -> None:
    changes = a_set(tmp_path)
    key = pending_key("thread", "call_1", "echo new > a.txt")

    kept = keep(changes, key)

    assert not Path(changes.source).exists()
    assert load(key) == kept
    assert kept.changes == changes.changes
    assert kept.host_code == ("/.venv",)
    assert (Path(kept.source) / "upper" / "a.txt").read_text() == "new\n"


def test_the_key_depends_on_the_thread_the_call_and_the_command() -> None:
    keys = {
        pending_key("t", "c", "ls"),
        pending_key("t2", "c", "ls"),
        pending_key("t", "c2", "ls"),
        pending_key("t", "c", "ls -a"),
    }
    assert len(keys) == 4


def test_an_old_or_dropped_set_is_not_found(tmp_path: Path) -> None:
    key = pending_key("thread", "call_1", "cmd")
    kept = keep(a_set(tmp_path), key)
    old = time.time() - PENDING_SECONDS - 1
    os.utime(Path(kept.source) / "changes.json", (old, old))

    assert load(key) is None
    assert not Path(kept.source).exists()

    keep(a_set(tmp_path), key)
    drop(key)
    assert load(key) is None


def test_sets_no_one_answered_are_swept_when_another_is_kept(tmp_path: Path) -> None:
    first = keep(a_set(tmp_path), pending_key("t", "c1", "cmd"))
    old = time.time() - PENDING_SECONDS - 1
    os.utime(first.source, (old, old))

    keep(a_set(tmp_path), pending_key("t", "c2", "cmd"))

    assert not Path(first.source).exists()


def test_a_key_must_be_a_key() -> None:
    with pytest.raises(ValueError, match="not a pending key"):
        pending._folder("../elsewhere")
