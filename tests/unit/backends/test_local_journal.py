"""LocalBackend's journal: a multi-file commit killed at any step is whole or absent once reopened.

Commits: a command's change set (`commit`), `write_many`, a branch merge (modified, new
and deleted files) and `apply_patch` through the tool (updates, adds, deletions, moves).

One child process imports the package and commits once, then forks a grandchild that
counts the file-system calls of a whole commit (`os.open`, `os.write`, `os.fsync`,
`os.replace`, ...), then one grandchild per kill point, which SIGKILLs itself at the n-th. The workspace it was committing
is then opened by a new `LocalBackend` here, which settles what the killed one left.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from langchain_fstools import LocalBackend
from langchain_fstools.backends.journal import Journal, Target
from langchain_fstools.backends.temporaries import TEMP_SUFFIX
from langchain_fstools.core.changesets import Change, ChangeKind, ChangeSet
from langchain_fstools.core.results import Write

KILL_POINTS = 24
"""Kill points per operation, spread evenly over its calls (first and last included)."""

CHILD = textwrap.dedent(
    """
    import json, os, signal, sys
    from langchain_fstools.backends.local.backend import LocalBackend
    from langchain_fstools.core.changesets import ChangeSet
    from langchain_fstools.core.results import Write

    spec = json.load(open(sys.argv[1]))
    if spec["kind"] == "merge":
        from langchain_fstools.backends.branch import BranchBackend
    if spec["kind"] == "apply_patch":  # the tools import LangChain: only where needed
        from langchain_fstools import FileToolkit
    CALLS = ("open", "write", "fsync", "replace", "rename", "link", "unlink", "rmdir",
             "mkdir", "chmod", "fchmod", "symlink", "utime", "sendfile")

    def operation(job):
        backend = LocalBackend(job["root"], durability=spec.get("durability", "fsync"))
        if spec["kind"] == "commit":
            changes = ChangeSet.from_record(job["changes"])
            return lambda: backend.commit(changes)
        if spec["kind"] == "write_many":
            writes = [Write(path, data.encode()) for path, data in spec["writes"]]
            return lambda: backend.write_many(writes)
        if spec["kind"] == "merge":
            branch = BranchBackend(backend)
            for path, data in spec["writes"]:
                branch.write_bytes(path, data.encode())
            for path in spec.get("deletes", ()):
                branch.delete(path)
            def merge():
                assert not branch.merge(receipt=spec.get("receipt")).conflicts
            return merge
        tool = {t.name: t for t in FileToolkit(backend).get_tools()}["apply_patch"]
        call = {"type": "tool_call", "name": "apply_patch", "id": "1", "args": {"patch": spec["patch"]}}
        def patch():
            message = tool.invoke(call)
            assert message.status == "success", message.content
        return patch

    def run(job, kill_at, *, fork=True):
        if fork and (pid := os.fork()):
            return os.waitpid(pid, 0)[1]
        act = operation(job)
        calls = [0]
        def counted(real):
            def call(*args, **kwargs):
                calls[0] += 1
                if calls[0] == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
                return real(*args, **kwargs)
            return call
        real = {name: getattr(os, name) for name in CALLS}
        for name in CALLS:
            setattr(os, name, counted(real[name]))
        try:
            act()
        finally:
            for name in CALLS:
                setattr(os, name, real[name])
        if fork:
            with open(job["root"] + ".calls", "w") as out:
                out.write(str(calls[0]))
            os._exit(0)

    jobs = spec["jobs"]
    run(jobs[0], 0, fork=False)  # imports and first-use set-up done once, for every fork
    assert run(jobs[1], 0) == 0  # the whole commit, counting its calls
    total = int(open(jobs[1]["root"] + ".calls").read())
    killed = []
    for number, job in enumerate(jobs[2:]):
        kill_at = 1 + number * (total - 1) // max(len(jobs) - 3, 1)
        status = run(job, kill_at)
        killed.append([kill_at, os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL])
    print(json.dumps({"total": total, "killed": killed}))
    """
)


def snapshot(root: Path) -> dict[str, str]:
    """Every entry below `root`: a file's content, or what kind of entry it is."""
    found = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        found[name] = "<dir>" if path.is_dir() else path.read_text()
    return found


def temporaries(root: Path) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.name.endswith(TEMP_SUFFIX)]


def workspaces(tmp_path: Path, count: int, fill: dict[str, str]) -> list[Path]:
    roots = []
    for number in range(count):
        root = tmp_path / f"w{number}"
        for name, text in fill.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        roots.append(root)
    return roots


def kill_at_every_point(kind: str, roots: list[Path], **spec: Any) -> dict[str, Any]:
    """Run the child; what it reports: the calls of a whole commit, and each kill point."""
    jobs = spec.pop("jobs", None) or [{"root": str(root)} for root in roots]
    given = roots[0].parent / "spec.json"
    given.write_text(json.dumps({"kind": kind, "jobs": jobs, **spec}))
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(given)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert child.returncode == 0, child.stderr[-3000:]
    return json.loads(child.stdout.splitlines()[-1])


def assert_whole_or_none(roots: list[Path], before: dict[str, str]) -> tuple[int, int]:
    """Each reopened workspace is the first one's (the whole set) or `before`; counts of each."""
    after = snapshot(roots[0])
    assert after != before
    whole = none = 0
    for root in roots[1:]:
        LocalBackend(root).stat("/")  # the next call settles what the killed commit left
        found = snapshot(root)
        assert found in (after, before), f"{root.name} holds part of the set"
        assert temporaries(root) == []
        assert not _records(root)
        whole += found == after
        none += found == before
    return whole, none


def _records(root: Path) -> list[str]:
    folder = Path(Journal(str(root.resolve()), durable=True).folder)
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_a_command_change_set_killed_at_any_step_is_whole_or_absent(tmp_path: Path) -> None:
    fill = {f"src/m{k:03d}.py": f"old {k}\n" for k in range(100)}
    fill |= {"old/gone1.txt": "gone 1\n", "old/gone2.txt": "gone 2\n"}
    roots = workspaces(tmp_path, KILL_POINTS + 2, fill)
    before = snapshot(roots[1])
    jobs = []
    for root in roots:
        backend = LocalBackend(root)
        source = tmp_path / f"{root.name}-upper"
        changes = [Change("/build", ChangeKind.ADDED, "directory", 0o755)]
        changes.append(Change("/build/deep", ChangeKind.ADDED, "directory", 0o755))
        changes += [
            Change(f"/build/deep/n{k:03d}.txt", ChangeKind.ADDED, "file", 0o644) for k in range(98)
        ]
        for name in ("gone1.txt", "gone2.txt"):
            version = backend.stat(f"/old/{name}").version
            changes.append(Change(f"/old/{name}", ChangeKind.DELETED, "file", before=version))
        for k in range(100):
            version = backend.stat(f"/src/m{k:03d}.py").version
            path = f"/src/m{k:03d}.py"
            changes.append(Change(path, ChangeKind.MODIFIED, "file", 0o644, before=version))
        for change in changes:
            if change.entry == "file" and change.kind is not ChangeKind.DELETED:
                upper = source / "upper" / change.path.lstrip("/")
                upper.parent.mkdir(parents=True, exist_ok=True)
                upper.write_text(f"new {change.path}\n")
        jobs.append(
            {"root": str(root), "changes": ChangeSet(tuple(changes), str(source)).to_record()}
        )
    # killed processes lose nothing written unsynced: fsyncs would only slow the test
    report = kill_at_every_point("commit", roots, jobs=jobs, durability="rename")
    assert all(killed for _, killed in report["killed"])
    whole, none = assert_whole_or_none(roots, before)
    assert whole  # kills landed on both sides of the commit point
    assert none
    assert len(snapshot(roots[0])) == len(before) - 2 + 2 + 98


def test_write_many_killed_at_any_step_is_whole_or_absent(tmp_path: Path) -> None:
    fill = {f"kept/f{k:02d}.txt": f"old {k}\n" for k in range(30)}
    roots = workspaces(tmp_path, KILL_POINTS + 2, fill)
    before = snapshot(roots[1])
    writes = [[f"/kept/f{k:02d}.txt", f"new {k}\n"] for k in range(30)]
    writes += [[f"/made/deep/g{k:02d}.txt", f"made {k}\n"] for k in range(30)]
    report = kill_at_every_point("write_many", roots, writes=writes)
    assert all(killed for _, killed in report["killed"])
    whole, none = assert_whole_or_none(roots, before)
    assert whole
    assert none


def test_a_branch_merge_killed_at_any_step_is_whole_or_absent(tmp_path: Path) -> None:
    fill = {f"base/f{k:02d}.txt": f"old {k}\n" for k in range(20)}
    roots = workspaces(tmp_path, KILL_POINTS + 2, fill)
    before = snapshot(roots[1])
    writes = [[f"/base/f{k:02d}.txt", f"merged {k}\n"] for k in range(20)]
    writes += [[f"/branch/new/g{k:02d}.txt", f"new {k}\n"] for k in range(20)]
    report = kill_at_every_point("merge", roots, writes=writes)
    assert all(killed for _, killed in report["killed"])
    whole, none = assert_whole_or_none(roots, before)
    assert whole
    assert none


def test_apply_patch_killed_at_any_step_is_whole_or_absent(tmp_path: Path) -> None:
    fill = {f"p/f{k:02d}.txt": "alpha\nbeta\ngamma\n" for k in range(20)}
    roots = workspaces(tmp_path, KILL_POINTS + 2, fill)
    before = snapshot(roots[1])
    hunks = [f"*** Update File: p/f{k:02d}.txt\n alpha\n-beta\n+BETA {k}\n" for k in range(20)]
    hunks += [f"*** Add File: q/new{k:02d}.txt\n+added {k}\n" for k in range(20)]
    patch = "*** Begin Patch\n" + "".join(hunks) + "*** End Patch\n"
    report = kill_at_every_point("apply_patch", roots, patch=patch)
    assert all(killed for _, killed in report["killed"])
    whole, none = assert_whole_or_none(roots, before)
    assert whole
    assert none


def test_a_branch_merge_that_deletes_killed_at_any_step_is_whole_or_absent(
    tmp_path: Path,
) -> None:
    fill = {f"base/f{k:02d}.txt": f"old {k}\n" for k in range(20)}
    fill |= {f"gone/g{k:02d}.txt": f"gone {k}\n" for k in range(10)}
    roots = workspaces(tmp_path, KILL_POINTS + 2, fill)
    before = snapshot(roots[1])
    writes = [[f"/base/f{k:02d}.txt", f"merged {k}\n"] for k in range(20)]
    writes += [[f"/branch/new/g{k:02d}.txt", f"new {k}\n"] for k in range(10)]
    deletes = [f"/gone/g{k:02d}.txt" for k in range(10)]
    report = kill_at_every_point("merge", roots, writes=writes, deletes=deletes, receipt="m")
    assert all(killed for _, killed in report["killed"])
    whole, none = assert_whole_or_none(roots, before)
    assert whole
    assert none
    after = snapshot(roots[0])
    assert not any(name.startswith("gone/g") for name in after)  # the deletions are in the set
    for root in roots:  # the merge's receipt is kept exactly where the merge took effect
        assert LocalBackend(root).committed("m") == (snapshot(root) == after), root.name


def test_apply_patch_with_deletions_and_moves_killed_at_any_step_is_whole_or_absent(
    tmp_path: Path,
) -> None:
    fill = {f"p/f{k:02d}.txt": "alpha\nbeta\ngamma\n" for k in range(30)}
    roots = workspaces(tmp_path, KILL_POINTS + 2, fill)
    before = snapshot(roots[1])
    hunks = [f"*** Update File: p/f{k:02d}.txt\n alpha\n-beta\n+BETA {k}\n" for k in range(10)]
    hunks += [f"*** Delete File: p/f{k:02d}.txt\n" for k in range(10, 20)]
    hunks += [
        f"*** Update File: p/f{k:02d}.txt\n*** Move to: moved/m{k:02d}.txt\n alpha\n-beta\n+MOVED\n"
        for k in range(20, 30)
    ]
    hunks += [f"*** Add File: q/new{k:02d}.txt\n+added {k}\n" for k in range(10)]
    patch = "*** Begin Patch\n" + "".join(hunks) + "*** End Patch\n"
    report = kill_at_every_point("apply_patch", roots, patch=patch)
    assert all(killed for _, killed in report["killed"])
    whole, none = assert_whole_or_none(roots, before)
    assert whole
    assert none
    after = snapshot(roots[0])
    assert after["moved/m25.txt"] == "alpha\nMOVED\ngamma\n"
    assert not any(f"p/f{k:02d}.txt" in after for k in range(10, 30))


def test_a_live_commit_is_left_to_its_process(tmp_path: Path) -> None:
    """Records held by a running commit are not settled by another backend's call."""
    (tmp_path / "a.txt").write_text("a")
    journal = Journal(str(tmp_path.resolve()), durable=False)
    intent = journal.begin([Target("/a.txt", follow=True)])
    try:
        LocalBackend(tmp_path).stat("/a.txt")
        assert _records(tmp_path) == [f"{intent.token}.staging"]
    finally:
        journal.end(intent)
    assert _records(tmp_path) == []


def test_a_record_part_is_removed_once_no_live_commit_can_hold_it(tmp_path: Path) -> None:
    """A part is written under its lock: one with data that can be locked was left by a
    killed commit; an empty one may be a live commit's that has not locked it yet."""
    journal = Path(Journal(str(tmp_path.resolve()), durable=True).folder)
    journal.mkdir(parents=True, mode=0o700, exist_ok=True)
    (journal / "a1.staging.part").write_text('{"targets": [["/a.txt", true]]')  # cut short
    (journal / "b2.staging.part").write_text("")
    (journal / "c3.commit.part").write_text("")
    os.utime(journal / "c3.commit.part", (1, 1))  # made long ago, never written
    held = journal / "d4.staging.part"
    held.write_text("{}")
    with held.open("rb") as live:
        fcntl.flock(live, fcntl.LOCK_EX)
        LocalBackend(tmp_path).stat("/")
        assert _records(tmp_path) == ["b2.staging.part", "d4.staging.part"]
    LocalBackend(tmp_path).stat("/")
    assert _records(tmp_path) == ["b2.staging.part"]
    os.utime(journal / "b2.staging.part", (1, 1))
    LocalBackend(tmp_path).stat("/")
    assert _records(tmp_path) == []


@pytest.mark.parametrize("durability", ["fsync", "rename"])
def test_a_batch_leaves_no_record(tmp_path: Path, durability: str) -> None:
    backend = LocalBackend(tmp_path, durability=durability)  # type: ignore[arg-type]
    backend.write_many([Write("/x/a.txt", b"a"), Write("/x/b.txt", b"b")])
    assert _records(tmp_path) == []
    assert temporaries(tmp_path) == []


def test_a_journal_folder_others_may_use_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / "kept.txt").write_text("kept")
    version = LocalBackend(tmp_path).stat("/kept.txt").version
    journal = Path(Journal(str(tmp_path.resolve()), durable=True).folder)
    journal.mkdir(parents=True, mode=0o700, exist_ok=True)
    planted = {"removals": [["/kept.txt", version]], "folders": [], "placements": []}
    (journal / "0.commit").write_text(json.dumps(planted))  # what a record would remove
    journal.chmod(0o777)  # anyone could have planted it
    try:
        backend = LocalBackend(tmp_path)
        with pytest.raises(PermissionError) as raised:
            backend.write_many([Write("/a.txt", b"a"), Write("/b.txt", b"b")])
        assert raised.value.filename == "/"  # never the journal's host path
        assert backend.read_bytes("/kept.txt") == b"kept"  # the planted record is not read
        assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt"]
    finally:
        journal.chmod(0o700)
        (journal / "0.commit").unlink()
