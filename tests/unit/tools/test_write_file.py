"""write_file on every backend: creation, read-before-write, staleness, encodings."""

from __future__ import annotations

import codecs

from tests.unit.tools.conftest import Run
from tests.unit.tools.harness import Harness


def test_creates_file_and_parents(h: Harness, run: Run) -> None:
    msg = run("write_file", file_path="/new/dir/a.py", content="print(1)\n")
    assert msg.status == "success"
    assert msg.content == "Created /new/dir/a.py (1 line, 9 bytes)."
    assert h.content("/new/dir/a.py") == b"print(1)\n"
    assert msg.artifact["created"] is True
    assert msg.artifact["patch"] is None  # the content is the call's input


def test_existing_file_must_be_read_first(h: Harness, run: Run) -> None:
    h.seed("/a.txt", b"old\n")
    msg = run("write_file", file_path="/a.txt", content="new\n")
    assert msg.status == "error"
    assert (
        msg.content
        == "Error: /a.txt has not been read yet. Read it with read_file first, then retry."
    )
    assert h.content("/a.txt") == b"old\n"


def test_partial_read_is_not_enough_to_overwrite(h: Harness, run: Run) -> None:
    h.seed("/a.txt", b"1\n2\n3\n")
    run("read_file", file_path="/a.txt", limit=2)
    msg = run("write_file", file_path="/a.txt", content="x\n")
    assert msg.status == "error"
    assert "only part of /a.txt has been read" in msg.content
    run("read_file", file_path="/a.txt", offset=3)
    assert run("write_file", file_path="/a.txt", content="x\n").status == "success"


def test_an_edit_after_a_partial_read_does_not_allow_a_full_overwrite(h: Harness, run: Run) -> None:
    h.seed("/a.txt", "".join(f"line {n}\n" for n in range(1, 101)).encode())
    run("read_file", file_path="/a.txt", limit=5)
    edit = run("edit_file", file_path="/a.txt", old_string="line 2\n", new_string="two\n")
    assert edit.status == "success"
    msg = run("write_file", file_path="/a.txt", content="everything else gone\n")
    assert msg.status == "error"
    assert "only part of /a.txt has been read" in msg.content
    assert h.content("/a.txt").count(b"\n") == 100
    run("read_file", file_path="/a.txt")
    assert run("write_file", file_path="/a.txt", content="x\n").status == "success"


def test_a_patch_of_an_unread_file_does_not_allow_a_full_overwrite(h: Harness, run: Run) -> None:
    h.seed("/a.txt", b"one\ntwo\nthree\n")
    patch = "*** Begin Patch\n*** Update File: /a.txt\n@@\n one\n-two\n+2\n*** End Patch"
    assert run("apply_patch", patch=patch).status == "success"
    msg = run("write_file", file_path="/a.txt", content="clobbered\n")
    assert msg.status == "error"
    assert "only part of /a.txt has been read" in msg.content
    assert h.content("/a.txt") == b"one\n2\nthree\n"
    # The patch's own record allows a further edit (checked against the file).
    edit = run("edit_file", file_path="/a.txt", old_string="three", new_string="3")
    assert edit.status == "success"


def test_a_patch_of_a_fully_read_file_keeps_it_overwritable(h: Harness, run: Run) -> None:
    h.seed("/a.txt", b"one\ntwo\n")
    run("read_file", file_path="/a.txt")
    patch = "*** Begin Patch\n*** Update File: /a.txt\n@@\n one\n-two\n+2\n*** End Patch"
    assert run("apply_patch", patch=patch).status == "success"
    assert run("write_file", file_path="/a.txt", content="x\n").status == "success"


def test_a_file_added_by_a_patch_can_be_overwritten(h: Harness, run: Run) -> None:
    patch = "*** Begin Patch\n*** Add File: /n.txt\n+a\n+b\n*** End Patch"
    assert run("apply_patch", patch=patch).status == "success"
    assert run("write_file", file_path="/n.txt", content="x\n").status == "success"


def test_overwrite_after_read_reports_diff_not_content(h: Harness, run: Run) -> None:
    h.seed("/a.txt", b"keep\nold\n")
    run("read_file", file_path="/a.txt")
    msg = run("write_file", file_path="/a.txt", content="keep\nnew\n")
    assert msg.content.splitlines() == [
        "Updated /a.txt (2 lines, 9 bytes).",
        "@@ -2 +2 @@",
        "-old",
        "+new",
    ]
    assert h.content("/a.txt") == b"keep\nnew\n"
    assert msg.artifact["patch"] == (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n"
    )


def test_changed_since_read_is_refused(h: Harness, run: Run) -> None:
    h.seed("/a.txt", b"v1\n")
    run("read_file", file_path="/a.txt")
    h.change_behind_the_agents_back("/a.txt", b"v2 by someone else\n")
    msg = run("write_file", file_path="/a.txt", content="mine\n")
    assert msg.status == "error"
    assert "has been modified since it was last read" in msg.content
    assert h.content("/a.txt") == b"v2 by someone else\n"


def test_own_writes_count_as_read(h: Harness, run: Run) -> None:
    run("write_file", file_path="/a.txt", content="1\n")
    assert run("write_file", file_path="/a.txt", content="2\n").status == "success"
    assert run("edit_file", file_path="/a.txt", old_string="2", new_string="3").status == "success"
    assert h.content("/a.txt") == b"3\n"


def test_overwrite_keeps_utf16_bom_and_crlf(h: Harness, run: Run) -> None:
    h.seed("/w.txt", codecs.BOM_UTF16_LE + "a\r\nb\r\n".encode("utf-16-le"))
    run("read_file", file_path="/w.txt")
    assert run("write_file", file_path="/w.txt", content="x\ny\n").status == "success"
    assert h.content("/w.txt") == codecs.BOM_UTF16_LE + "x\r\ny\r\n".encode("utf-16-le")


def test_writing_onto_a_directory_fails(h: Harness, run: Run) -> None:
    h.seed("/d/a.txt", b"x")
    assert run("write_file", file_path="/d", content="x").status == "error"
