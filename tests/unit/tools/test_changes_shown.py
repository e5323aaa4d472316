"""What a command's changes look like to the model and a person: modes included."""

from __future__ import annotations

from pathlib import Path

from langchain_fstools import LocalBackend
from langchain_fstools.core import calls
from langchain_fstools.core.changesets import Change, ChangeKind, ChangeSet
from langchain_fstools.tools.changes_shown import SUMMARY_LINES, effect_diff, summary

A, M = ChangeKind.ADDED, ChangeKind.MODIFIED


def test_a_change_of_mode_is_in_the_summary() -> None:
    shown = summary(
        [
            Change("/run.sh", M, "file", 0o755, old_mode=0o644),
            Change("/tool", A, "file", 0o755),
            Change("/su", A, "file", 0o755, dropped=0o4000),
            Change("/shared", A, "directory", 0o755, dropped=0o022),
            Change("/plain.txt", A, "file", 0o644),
        ]
    )

    assert shown.splitlines()[2:] == [
        "M /run.sh (mode 644 -> 755)",
        "A /tool (mode 755)",
        "A /su (mode 755; its set-uid/set-gid bit is not kept)",
        "A /shared (group/world write bits dropped by the umask)",
        "A /plain.txt",
    ]


def test_a_large_summary_still_names_the_set_uid_bits_not_kept() -> None:
    changes = [Change(f"/d{i}/f", A, "file", 0o644) for i in range(SUMMARY_LINES + 5)]
    changes.append(Change("/d0/su", A, "file", 0o755, dropped=0o4000))

    shown = summary(changes)

    assert shown.splitlines()[-1] == "Set-uid/set-gid bits not kept: /d0/su"


def test_the_diff_shows_a_change_of_mode(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.sh").write_text("echo a\n")
    upper = tmp_path / "set" / "upper"
    upper.mkdir(parents=True)
    (upper / "a.sh").write_text("echo b\n")
    (upper / "new.sh").write_text("echo n\n")
    (upper / "same.sh").write_text("echo s\n")
    (tmp_path / "ws" / "same.sh").write_text("echo s\n")
    changes = ChangeSet(
        (
            Change("/a.sh", M, "file", 0o755, 7, old_mode=0o644),
            Change("/new.sh", A, "file", 0o755, 7),
            Change("/same.sh", M, "file", 0o755, 7, old_mode=0o644),
        ),
        str(tmp_path / "set"),
    )

    diff = calls.run(
        effect_diff(changes, ["/a.sh", "/new.sh", "/same.sh"]), LocalBackend(tmp_path / "ws")
    )

    assert "old mode 100644\nnew mode 100755\n--- a/a.sh" in diff
    assert "new file mode 100755\n--- " in diff
    assert "M /same.sh (file, 7 bytes, mode 644 -> 755)" in diff
