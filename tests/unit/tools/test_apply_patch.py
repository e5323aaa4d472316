"""apply_patch through a ToolNode-like harness: tracking, staleness, confinement, messages."""

from __future__ import annotations

from langchain_fstools.errors import PatchNotUndone, VersionConflict
from langchain_fstools.patch.apply import KEPT_CHANGED
from langchain_fstools.tools.render import render_error
from tests.unit.tools.conftest import Run
from tests.unit.tools.harness import Harness

APP = b"import os\n\n\ndef main():\n    return 1\n"


def patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"])


def test_success_lists_files_shows_a_diff_and_carries_patches(h: Harness, run: Run) -> None:
    h.seed("/src/app.py", APP)
    h.seed("/old.txt", b"bye\n")
    message = run(
        "apply_patch",
        patch=patch(
            "*** Update File: src/app.py",
            "@@ def main():",
            "-    return 1",
            "+    return 2",
            "*** Add File: /docs/new.md",
            "+# New",
            "*** Delete File: old.txt",
        ),
    )
    assert message.status == "success", message.content
    assert message.content == (
        "Success. Updated the following files:\nM /src/app.py\nA /docs/new.md\nD /old.txt\n\n"
        "/src/app.py:\n@@ -5 +5 @@\n-    return 1\n+    return 2"
    )
    files = message.artifact["files"]
    assert [(f["path"], f["action"]) for f in files] == [
        ("/src/app.py", "update"),
        ("/docs/new.md", "add"),
        ("/old.txt", "delete"),
    ]
    assert files[0]["patch"].startswith("--- a/src/app.py\n+++ b/src/app.py\n")
    assert h.content("/src/app.py") == APP.replace(b"return 1", b"return 2")
    assert h.content("/docs/new.md") == b"# New\n"


def test_patched_files_count_as_read(h: Harness, run: Run) -> None:
    h.seed("/a.txt", b"a\n")
    assert (
        run("apply_patch", patch=patch("*** Update File: /a.txt", "-a", "+b")).status == "success"
    )
    message = run("edit_file", file_path="/a.txt", old_string="b", new_string="c")
    assert message.status == "success", message.content
    assert h.content("/a.txt") == b"c\n"


def test_a_file_changed_since_it_was_read_is_refused(h: Harness, run: Run) -> None:
    h.seed("/a.txt", b"a\nb\n")
    h.seed("/other.txt", b"o\n")
    assert run("read_file", file_path="/a.txt").status == "success"
    h.change_behind_the_agents_back("/a.txt", b"a\nb\nc\n")
    message = run(
        "apply_patch",
        patch=patch(
            "*** Update File: /other.txt", "-o", "+O", "*** Update File: /a.txt", "-b", "+B"
        ),
    )
    assert message.status == "error"
    assert message.content == (
        "Error: /a.txt has been modified since it was last read. Read it again with read_file,"
        " then retry."
    )
    assert h.content("/other.txt") == b"o\n"
    assert h.content("/a.txt") == b"a\nb\nc\n"


def test_paths_are_confined_and_no_host_path_leaks(h: Harness, run: Run) -> None:
    message = run("apply_patch", patch=patch("*** Add File: ../../etc/evil", "+x"))
    assert message.status == "error"
    assert message.content == (
        "Error: '/../../etc/evil' is outside the workspace. Use a path inside /."
    )
    assert str(h.root) not in message.content
    assert h.call("ls", path="/").content.count("evil") == 0


def test_unmatched_chunk_shows_expected_and_closest_lines(h: Harness, run: Run) -> None:
    h.seed("/src/app.py", APP)
    message = run(
        "apply_patch",
        patch=patch(
            "*** Update File: /src/app.py", " def main():", "-    return 3", "+    return 4"
        ),
    )
    assert message.status == "error"
    assert message.content == (
        "Error: chunk 1 of the update of /src/app.py does not match the file; these lines were"
        " not found:\n  def main():\n      return 3\n"
        "The closest lines in the file are:\n4\tdef main():\n5\t    return 1\n"
        "Read the file, fix the ' ' and '-' lines (and '@@' lines) of that chunk to match it"
        " exactly, and send the whole patch again; nothing was changed."
    )


def test_parse_errors_give_the_patch_line(h: Harness, run: Run) -> None:
    message = run("apply_patch", patch=patch("*** Update File: a", "@@", "oops"))
    assert message.content == (
        "Error: invalid patch at line 4: in the update of a every chunk line must start with"
        " ' ', '-' or '+' but found 'oops'. Fix the patch and send it again; nothing was changed."
    )


def test_a_shell_invocation_is_accepted_with_its_directory(h: Harness, run: Run) -> None:
    h.seed("/pkg/mod.py", b"X = 1\n")
    command = (
        "cd pkg && apply_patch <<'EOF'\n"
        + patch("*** Update File: mod.py", "-X = 1", "+X = 2")
        + "\nEOF\n"
    )
    message = run("apply_patch", patch=command)
    assert (
        message.content
        == "Success. Updated the following files:\nM /pkg/mod.py\n\n/pkg/mod.py:\n@@ -1 +1 @@\n-X = 1\n+X = 2"
    )
    refused = run("apply_patch", patch="ls; " + command)
    assert refused.status == "error"
    assert refused.content.startswith("Error: apply_patch must be the only command")


def test_notebooks_go_through_notebook_edit(h: Harness, run: Run) -> None:
    h.seed("/nb.ipynb", b'{"cells": []}\n')
    message = run("apply_patch", patch=patch("*** Update File: /nb.ipynb", "-x", "+y"))
    assert (
        message.content
        == "Error: /nb.ipynb is a Jupyter notebook; use notebook_edit to change its cells."
    )


def test_read_before_write_as_the_readme_states_it(h: Harness, run: Run) -> None:
    """Context lines are verified; unread files may be updated or deleted;
    a file read earlier and changed since is refused, for a deletion too."""
    h.seed("/unread.txt", b"u\n")
    h.seed("/gone.txt", b"never read\n")
    h.seed("/read.txt", b"r\n")
    assert run("read_file", file_path="/read.txt").status == "success"
    wrong_context = run("apply_patch", patch=patch("*** Update File: /unread.txt", "-x", "+y"))
    assert wrong_context.status == "error"
    message = run(
        "apply_patch",
        patch=patch("*** Update File: /unread.txt", "-u", "+U", "*** Delete File: /gone.txt"),
    )
    assert message.status == "success", message.content
    assert h.content("/unread.txt") == b"U\n"
    assert run("read_file", file_path="/gone.txt").status == "error"
    h.change_behind_the_agents_back("/read.txt", b"changed\n")
    refused = run("apply_patch", patch=patch("*** Delete File: /read.txt"))
    assert refused.status == "error"
    assert "modified since it was last read" in str(refused.content)
    assert h.content("/read.txt") == b"changed\n"


def test_a_patch_undone_only_in_part_says_which_files_hold_what() -> None:
    error = PatchNotUndone(
        VersionConflict("/c.txt", "v1", "v2"), ("/b.txt",), (("/a.txt", KEPT_CHANGED),)
    )
    assert render_error(error, tool="apply_patch") == (
        "Error: the patch failed and was only partly undone. Why it failed: /c.txt has"
        " been modified since it was last read. Read it again with read_file, then retry.\n"
        "Restored as before the patch: /b.txt.\n"
        "Not restored: /a.txt holds another writer's content, written after the patch's.\n"
        "Read these files again before changing them."
    )
