"""Branches: the file tools work in a branch, the base only changes at a merge.

Each case runs on local disk (ripgrep), graph state and a store, with the tools called
as a ToolNode calls them (`Harness`).
"""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langchain_fstools import FileToolkit, LocalBackend, StateBackend
from langchain_fstools.backends.branch import BranchBackend, MergeResult
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.backends.state import merge_files
from langchain_fstools.backends.view import BackendView
from langchain_fstools.core import calls
from langchain_fstools.core.results import Deletion, FileInfo, Write
from langchain_fstools.errors import BranchFull
from langchain_fstools.formats.merge import Hunk
from tests.unit.tools.harness import Harness

if TYPE_CHECKING:
    from collections.abc import Sequence

SOURCE = b"def a():\n    return 1\n\n\ndef b():\n    return 2\n"


class Workspace:
    """A base seeded with `/m.py` and `/old.txt`, and the branches made of it."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.h = Harness(kind, tmp_path)
        self.h.seed("/m.py", SOURCE)
        self.h.seed("/old.txt", b"old\n")
        self.base = self.h.toolkit.backend

    def branch(self, **limits: int) -> BranchBackend:
        return BranchBackend(self.base, **limits)

    def call(self, branch: BranchBackend, name: str, **args: Any) -> Any:
        """Call a tool of a toolkit over `branch`."""
        self.h.toolkit = FileToolkit(branch)
        self.h.tools = {tool.name: tool for tool in self.h.toolkit.get_tools()}
        return self.h.call(name, **args)

    def edit(self, branch: BranchBackend, old: str, new: str) -> None:
        assert self.call(branch, "read_file", file_path="/m.py").status == "success"
        message = self.call(branch, "edit_file", file_path="/m.py", old_string=old, new_string=new)
        assert message.status == "success", message.content

    def merge(self, branch: BranchBackend) -> MergeResult:
        bound = branch.bind(self.h.runtime())
        result = bound.merge()
        self.keep(bound)
        return result

    def keep(self, bound: Backend) -> None:
        update = bound.state_update()
        if "files" in update:
            self.h.state["files"] = merge_files(self.h.state["files"], [update["files"]])

    def bound_base(self) -> Backend:
        return self.base.bind(self.h.runtime())

    def in_base(self, path: str) -> bytes | None:
        base = self.bound_base()
        if not calls.run(calls.exists(path), base):
            return None
        return calls.run(calls.read_bytes(path), base)

    def in_branch(self, branch: BranchBackend, path: str) -> bytes:
        return calls.run(calls.read_bytes(path), branch.bind(self.h.runtime()))

    def change_base(self, path: str, data: bytes | None) -> None:
        base = self.bound_base()
        if data is None:
            calls.run(calls.delete(path), base)
        else:
            calls.run(calls.write_bytes(path, data), base)
        self.keep(base)


@pytest.fixture(params=["local", "state", "store"])
def ws(request: pytest.FixtureRequest, tmp_path: Path) -> Workspace:
    return Workspace(request.param, tmp_path)


def test_every_file_tool_works_in_a_branch_and_the_base_is_untouched(ws: Workspace) -> None:
    branch = ws.branch()
    ws.edit(branch, "return 1", "return 'branched'")
    written = ws.call(branch, "write_file", file_path="/pkg/new.py", content="NEW = 'branched'\n")
    assert written.status == "success"
    calls.run(calls.delete("/old.txt"), branch.bind(ws.h.runtime()))

    grep = ws.call(branch, "grep", pattern="branched")
    assert (grep.status, "/m.py" in grep.content, "/pkg/new.py" in grep.content) == (
        "success",
        True,
        True,
    )
    assert "/m.py" not in ws.call(branch, "grep", pattern="return 1").content
    assert "/pkg/new.py" in ws.call(branch, "glob", pattern="**/*.py").content
    listing = ws.call(branch, "ls", path="/").content
    assert ("pkg" in listing, "old.txt" in listing) == (True, False)
    assert "branched" in ws.call(branch, "read_file", file_path="/m.py").content

    assert (ws.in_base("/m.py"), ws.in_base("/pkg/new.py"), ws.in_base("/old.txt")) == (
        SOURCE,
        None,
        b"old\n",
    )
    assert branch.changed == ("/m.py", "/old.txt", "/pkg", "/pkg/new.py")

    result = ws.merge(branch)
    assert result.clean
    assert ws.in_base("/m.py") == SOURCE.replace(b"return 1", b"return 'branched'")
    assert ws.in_base("/pkg/new.py") == b"NEW = 'branched'\n"
    assert ws.in_base("/old.txt") is None
    assert not branch.changed


def test_a_file_changed_in_the_branch_since_it_was_read_is_stale(ws: Workspace) -> None:
    branch = ws.branch()
    ws.edit(branch, "return 1", "return 10")
    assert ws.call(branch, "read_file", file_path="/m.py").status == "success"
    view = branch.bind(ws.h.runtime())
    calls.run(calls.write_bytes("/m.py", b"def a():\n    return 99\n"), view)
    message = ws.call(
        branch, "edit_file", file_path="/m.py", old_string="return 99", new_string="return 3"
    )
    assert message.status == "error"
    assert ws.in_branch(branch, "/m.py") == b"def a():\n    return 99\n"


def test_two_branches_editing_different_functions_both_merge(ws: Workspace) -> None:
    first, second = ws.branch(), ws.branch()
    ws.edit(first, "return 1", "return 10")
    ws.edit(second, "return 2", "return 20")
    assert ws.merge(first) == MergeResult(merged=("/m.py",))
    assert ws.merge(second) == MergeResult(merged=("/m.py",))
    assert ws.in_base("/m.py") == b"def a():\n    return 10\n\n\ndef b():\n    return 20\n"


def test_the_same_line_changed_in_two_branches_is_a_conflict_and_commits_nothing(
    ws: Workspace,
) -> None:
    first, second = ws.branch(), ws.branch()
    ws.edit(first, "return 1", "return 10")
    ws.edit(second, "return 1", "return 11")
    calls.run(calls.write_bytes("/also.txt", b"second\n"), second.bind(ws.h.runtime()))
    assert ws.merge(first).clean
    merged_first = ws.in_base("/m.py")

    result = ws.merge(second)

    assert (result.merged, [c.path for c in result.conflicts]) == ((), ["/m.py"])
    assert result.conflicts[0].hunks == (
        Hunk(2, ("    return 1\n",), ("    return 10\n",), ("    return 11\n",)),
    )
    assert (ws.in_base("/m.py"), ws.in_base("/also.txt")) == (merged_first, None)
    assert second.changed == ("/also.txt", "/m.py")


def test_a_file_the_branch_deleted_and_the_base_changed_since_is_a_conflict(
    ws: Workspace,
) -> None:
    deleting, editing = ws.branch(), ws.branch()
    calls.run(calls.delete("/m.py"), deleting.bind(ws.h.runtime()))
    ws.edit(editing, "return 1", "return 10")
    assert ws.merge(editing).clean

    result = ws.merge(deleting)

    assert [(c.path, c.hunks) for c in result.conflicts] == [("/m.py", ())]
    assert "deleted" in result.conflicts[0].reason
    assert ws.in_base("/m.py") == SOURCE.replace(b"return 1", b"return 10")


def test_a_file_the_branch_changed_and_the_base_deleted_since_is_a_conflict(
    ws: Workspace,
) -> None:
    branch = ws.branch()
    ws.edit(branch, "return 1", "return 10")
    ws.change_base("/m.py", None)
    assert [c.path for c in ws.merge(branch).conflicts] == ["/m.py"]
    assert ws.in_base("/m.py") is None


def test_a_file_both_created_merges_from_an_empty_base(ws: Workspace) -> None:
    same, other = ws.branch(), ws.branch()
    for branch, text in ((same, b"x = 1\n"), (other, b"x = 2\n")):
        calls.run(calls.write_bytes("/made.py", text), branch.bind(ws.h.runtime()))
    ws.change_base("/made.py", b"x = 1\n")

    assert ws.merge(same).clean
    result = ws.merge(other)

    assert [(c.path, c.hunks) for c in result.conflicts] == [
        ("/made.py", (Hunk(1, (), ("x = 1\n",), ("x = 2\n",)),))
    ]


def test_a_file_the_branch_created_and_deleted_is_no_change(ws: Workspace) -> None:
    branch = ws.branch()
    view = branch.bind(ws.h.runtime())
    calls.run(calls.write_bytes("/tmp.txt", b"scratch\n"), view)
    calls.run(calls.delete("/tmp.txt"), view)
    ws.change_base("/tmp.txt", b"the base's\n")
    assert ws.merge(branch) == MergeResult()
    assert ws.in_base("/tmp.txt") == b"the base's\n"


def test_reads_fall_through_to_the_base_until_the_branch_touches_a_file(ws: Workspace) -> None:
    branch = ws.branch()
    ws.change_base("/old.txt", b"newer\n")
    assert ws.in_branch(branch, "/old.txt") == b"newer\n"
    calls.run(calls.write_bytes("/old.txt", b"mine\n"), branch.bind(ws.h.runtime()))
    ws.change_base("/old.txt", b"newest\n")
    assert ws.in_branch(branch, "/old.txt") == b"mine\n"


def test_an_async_merge_commits_as_the_sync_one_does(ws: Workspace) -> None:
    branch = ws.branch()
    ws.edit(branch, "return 2", "return 20")
    bound = branch.bind(ws.h.runtime())
    assert asyncio.run(bound.amerge()) == MergeResult(merged=("/m.py",))
    ws.keep(bound)
    assert ws.in_base("/m.py") == SOURCE.replace(b"return 2", b"return 20")


class _NoDeletes(BackendView):
    """A base that refuses deletions, to fail a merge after its writes.

    Its batches are the protocol's default (each write, then each deletion), as a
    backend that cannot commit a batch whole makes them.
    """

    def bind(self, runtime: Any) -> Backend:
        return _NoDeletes(self.inner.bind(runtime))

    def delete(self, path: str) -> None:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)

    def write_many(
        self, writes: Sequence[Write], deletions: Sequence[Deletion] = ()
    ) -> list[FileInfo]:
        return Backend.write_many(self, writes, deletions)


def test_a_merge_that_fails_part_way_leaves_the_base_as_it_was(tmp_path: Path) -> None:
    ws = Workspace("local", tmp_path)
    branch = BranchBackend(_NoDeletes(ws.base))
    ws.edit(branch, "return 1", "return 10")
    calls.run(calls.delete("/old.txt"), branch)
    with pytest.raises(PermissionError):
        branch.merge()
    assert (ws.in_base("/m.py"), ws.in_base("/old.txt")) == (SOURCE, b"old\n")
    assert branch.changed == ("/m.py", "/old.txt")


def test_a_rename_merges_as_a_deletion_and_a_creation(ws: Workspace) -> None:
    branch = ws.branch()
    calls.run(calls.move("/old.txt", "/new/old.txt"), branch.bind(ws.h.runtime()))
    assert ws.call(branch, "glob", pattern="**/*.txt").content.strip() == "/new/old.txt"

    assert ws.merge(branch).merged == ("/new/old.txt", "/old.txt")
    assert (ws.in_base("/old.txt"), ws.in_base("/new/old.txt")) == (None, b"old\n")


def test_a_rename_of_a_file_the_base_changed_since_is_a_conflict(ws: Workspace) -> None:
    branch = ws.branch()
    calls.run(calls.move("/old.txt", "/moved.txt"), branch.bind(ws.h.runtime()))
    ws.change_base("/old.txt", b"changed in the base\n")

    result = ws.merge(branch)

    assert [c.path for c in result.conflicts] == ["/old.txt"]
    assert (ws.in_base("/old.txt"), ws.in_base("/moved.txt")) == (b"changed in the base\n", None)


@pytest.mark.parametrize("deleter_first", [True, False])
def test_a_file_one_branch_writes_anew_and_another_deletes_conflicts_at_the_second_merge(
    ws: Workspace, *, deleter_first: bool
) -> None:
    deleting, writing = ws.branch(), ws.branch()
    calls.run(calls.delete("/old.txt"), deleting.bind(ws.h.runtime()))
    calls.run(calls.write_bytes("/old.txt", b"anew\n"), writing.bind(ws.h.runtime()))
    first, second = (deleting, writing) if deleter_first else (writing, deleting)

    assert ws.merge(first).clean
    result = ws.merge(second)

    assert [(c.path, c.hunks) for c in result.conflicts] == [("/old.txt", ())]
    assert ws.in_base("/old.txt") == (None if deleter_first else b"anew\n")


def test_a_file_both_branches_deleted_is_deleted_once(ws: Workspace) -> None:
    first, second = ws.branch(), ws.branch()
    for branch in (first, second):
        calls.run(calls.delete("/old.txt"), branch.bind(ws.h.runtime()))
    assert ws.merge(first).clean
    assert ws.merge(second) == MergeResult(present=("/old.txt",))  # already as the branch left it
    assert ws.in_base("/old.txt") is None


def test_a_merge_applied_again_from_its_snapshot_changes_nothing_twice(ws: Workspace) -> None:
    # a worker killed after its merge committed, before it said so: the resumed thread
    # merges the branch kept in its checkpoint again, and finds the files holding it
    branch = ws.branch()
    calls.run(calls.write_bytes("/m.py", b"x = 1\n"), branch.bind(ws.h.runtime()))
    calls.run(calls.write_bytes("/new.txt", b"new\n"), branch.bind(ws.h.runtime()))
    calls.run(calls.delete("/old.txt"), branch.bind(ws.h.runtime()))
    kept = branch.snapshot()
    assert ws.merge(branch) == MergeResult(merged=("/m.py", "/new.txt", "/old.txt"))
    again = ws.merge(BranchBackend.restored(ws.base, kept))
    assert again == MergeResult(present=("/m.py", "/new.txt", "/old.txt"))
    assert ws.in_base("/m.py") == b"x = 1\n"
    assert ws.in_base("/new.txt") == b"new\n"
    assert ws.in_base("/old.txt") is None


def test_identical_binary_changes_in_two_branches_merge(ws: Workspace) -> None:
    first, second = ws.branch(), ws.branch()
    for branch in (first, second):
        calls.run(calls.write_bytes("/blob.bin", b"\xff\x00"), branch.bind(ws.h.runtime()))
    assert ws.merge(first).clean
    assert ws.merge(second) == MergeResult(present=("/blob.bin",))
    assert ws.in_base("/blob.bin") == b"\xff\x00"


# ----- limits ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "limits",
    [{"max_files": 0}, {"max_bytes": -1}, {"max_files": True}, {"max_bytes": 1.5}],
    ids=str,
)
def test_a_limit_that_is_not_a_positive_integer_is_refused(limits: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(limits))):
        BranchBackend(Harness("state", Path()).toolkit.backend, **limits)


def test_a_branch_with_as_many_paths_as_it_may_change_refuses_another(ws: Workspace) -> None:
    branch = ws.branch(max_files=2)
    view = branch.bind(ws.h.runtime())
    calls.run(calls.write_bytes("/a.txt", b"a\n"), view)
    calls.run(calls.delete("/old.txt"), view)

    with pytest.raises(BranchFull) as raised:
        calls.run(calls.write_bytes("/c.txt", b"c\n"), view)

    assert raised.value == BranchFull("/c.txt", "files", 2)
    calls.run(calls.write_bytes("/a.txt", b"again\n"), view)  # a path it holds: no growth
    assert branch.changed == ("/a.txt", "/old.txt")


def test_a_branch_refuses_a_write_past_its_bytes_and_keeps_what_it_held(ws: Workspace) -> None:
    branch = ws.branch(max_bytes=10)
    view = branch.bind(ws.h.runtime())
    calls.run(calls.write_bytes("/a.txt", b"12345"), view)

    with pytest.raises(BranchFull) as raised:
        calls.run(calls.write_bytes("/a.txt", b"12345678901"), view)

    assert raised.value == BranchFull("/a.txt", "bytes", 10)
    assert ws.in_branch(branch, "/a.txt") == b"12345"
    calls.run(calls.write_bytes("/b.txt", b"12345"), view)  # exactly at the limit
    calls.run(calls.delete("/a.txt"), view)  # frees what /a.txt held
    calls.run(calls.write_bytes("/c.txt", b"1234"), view)
    assert ws.merge(branch).merged == ("/b.txt", "/c.txt")


def test_the_bytes_held_count_the_base_version_kept_as_merge_base(ws: Workspace) -> None:
    for room, status in ((2 * len(SOURCE), "success"), (2 * len(SOURCE) - 1, "error")):
        branch = ws.branch(max_bytes=room)
        assert ws.call(branch, "read_file", file_path="/m.py").status == "success"
        edit = ws.call(branch, "edit_file", file_path="/m.py", old_string="1", new_string="9")
        assert edit.status == status, edit.content


def test_a_full_branch_is_an_error_result_saying_what_to_do(ws: Workspace) -> None:
    branch = ws.branch(max_files=1)
    assert ws.call(branch, "write_file", file_path="/a.txt", content="a\n").status == "success"

    message = ws.call(branch, "write_file", file_path="/b.txt", content="b\n")

    assert message.status == "error"
    assert message.content == (
        "Error: nothing was written to /b.txt: the branch this task works in is full (its"
        " limit is 1 changed path). Finish with the changes made so far and return, so they"
        " are merged, and leave the rest to another task."
    )
    assert branch.changed == ("/a.txt",)


def test_a_bound_branch_keeps_the_limits_of_its_branch(ws: Workspace) -> None:
    bound = ws.branch(max_files=3, max_bytes=7).bind(ws.h.runtime())
    assert (bound.max_files, bound.max_bytes) == (3, 7)


# ----- search ---------------------------------------------------------------------------


def test_a_search_walks_only_the_folders_whose_files_the_branch_changed(tmp_path: Path) -> None:
    ws = Workspace("local", tmp_path)
    for path in ("/a/x.py", "/a/c/z.py", "/a-b/y.py", "/d/w.py", "/e/v.py"):
        ws.h.seed(path, b"needle = 'base'\n")
    branch = ws.branch()
    view = branch.bind(ws.h.runtime())
    for path in ("/a/x.py", "/a/c/z.py", "/a-b/y.py"):
        calls.run(calls.write_bytes(path, b"needle = 'branch'\n"), view)
    calls.run(calls.delete("/d/w.py"), view)

    parts = branch.search_parts("/")

    assert [(p.directory, p.native is None, p.excluded) for p in parts] == [
        ("/", False, ("/a", "/a-b", "/d")),
        ("/a", True, ()),
        ("/a-b", True, ()),
        ("/d", True, ()),
    ]
    found = ws.call(branch, "grep", pattern="needle", output_mode="content").content
    assert sorted(line for line in found.splitlines() if "needle" in line) == sorted(
        [
            "/a/c/z.py:1:needle = 'branch'",
            "/a/x.py:1:needle = 'branch'",
            "/a-b/y.py:1:needle = 'branch'",
            "/e/v.py:1:needle = 'base'",
        ]
    )


def test_a_search_of_a_file_or_folder_the_branch_changed_sees_the_branch(ws: Workspace) -> None:
    branch = ws.branch()
    ws.edit(branch, "return 1", "return 'mine'")
    for directory in ("/m.py", "/"):
        assert [(p.directory, p.native) for p in branch.search_parts(directory)] == [
            (directory, None)
        ]
    found = ws.call(branch, "grep", pattern="mine", path="/m.py", output_mode="content")
    assert "return 'mine'" in found.content


def test_a_path_missing_from_the_view_is_missing_by_the_views_account(ws: Workspace) -> None:
    branch = ws.branch()
    view = branch.bind(ws.h.runtime())
    calls.run(calls.delete("/old.txt"), view)
    calls.run(calls.mkdir("/old.txt"), view)  # a folder where the base has a file
    for read in (view.stat, view.read_bytes, lambda p: asyncio.run(view.aread_bytes(p))):
        with pytest.raises(FileNotFoundError):
            read("/old.txt/inside")
    with pytest.raises(NotADirectoryError):
        view.read_bytes("/m.py/inside")


def test_a_clean_line_merge_that_breaks_the_syntax_is_a_conflict(ws: Workspace) -> None:
    pytest.importorskip("tree_sitter_language_pack")
    base = b"s = 1\na = 0\nt = 2\nb = 0\nu = 3\n"
    ws.change_base("/q.py", base)
    first, second = ws.branch(), ws.branch()
    # each side is valid Python; together the string the first opens swallows the second's
    quoted = base.replace(b"s = 1", b's = """').replace(b"u = 3", b'"""')
    calls.run(calls.write_bytes("/q.py", quoted), first.bind(ws.h.runtime()))
    added = base.replace(b"t = 2", b't = 2 + """x"""')
    calls.run(calls.write_bytes("/q.py", added), second.bind(ws.h.runtime()))
    assert ws.merge(first) == MergeResult(merged=("/q.py",))
    result = ws.merge(second)
    assert [c.path for c in result.conflicts] == ["/q.py"]
    assert "syntax error at line" in result.conflicts[0].reason
    assert ws.in_base("/q.py") == quoted  # nothing of the second branch committed


def test_a_branch_through_the_checkpoint_serializer_merges_as_the_branch_does(
    ws: Workspace,
) -> None:
    # what a conflict keeps in graph state: serialized as a checkpoint stores it
    first, second = ws.branch(), ws.branch()
    ws.edit(first, "return 1", "return 10")
    ws.edit(second, "return 1", "return 11")
    calls.run(calls.write_bytes("/bin.dat", bytes(range(256))), second.bind(ws.h.runtime()))
    calls.run(calls.delete("/old.txt"), second.bind(ws.h.runtime()))
    assert ws.merge(first).clean
    serde = JsonPlusSerializer()
    stored = serde.loads_typed(serde.dumps_typed(second.snapshot()))
    again = BranchBackend.restored(ws.base, stored)
    assert (again.changed, again.max_files, again.max_bytes) == (
        second.changed,
        second.max_files,
        second.max_bytes,
    )
    assert [c.path for c in ws.merge(again).conflicts] == ["/m.py"]
    bound = again.bind(ws.h.runtime())
    result = calls.run(bound.merging({"/m.py": "branch"}), bound.base)
    ws.keep(bound)
    assert result.merged == ("/bin.dat", "/m.py", "/old.txt")
    assert ws.in_base("/m.py") == SOURCE.replace(b"return 1", b"return 11")
    assert (ws.in_base("/bin.dat"), ws.in_base("/old.txt")) == (bytes(range(256)), None)


@pytest.mark.parametrize("snapshot", [{}, {"max_files": 1, "max_bytes": 1, "touched": {"/a": []}}])
def test_what_is_not_a_snapshot_is_refused(snapshot: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="not a branch snapshot"):
        BranchBackend.restored(StateBackend(), snapshot)


def test_a_merge_whose_receipt_the_base_kept_is_not_applied_again(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    base = LocalBackend(tmp_path)
    branch = BranchBackend(base)
    branch.write_bytes("/a.txt", b"branch\n")
    snapshot = branch.snapshot()
    assert not base.committed("r1")
    assert branch.merge(receipt="r1").merged == ("/a.txt",)
    assert base.committed("r1")
    assert not base.committed("r2")
    (tmp_path / "a.txt").write_text("later\n")  # changed since the merge
    again = BranchBackend.restored(base, snapshot).merge(receipt="r1")
    assert (again.clean, again.merged, again.present) == (True, (), ("/a.txt",))
    assert (tmp_path / "a.txt").read_text() == "later\n"
    by_content = BranchBackend.restored(base, snapshot).merge()  # no receipt: by the files
    assert [c.path for c in by_content.conflicts] == ["/a.txt"]
