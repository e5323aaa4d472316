"""SandboxBackend's journal: a multi-file write killed at any step is whole or absent next call.

The sandbox is the `sh -c` double; its `python3` is a wrapper (`KILLING_PYTHON`) that runs
the helper's loader with the file-system calls of `os` counted, and SIGKILLs a helper
running a batch (`write`, `write_and_delete`, or the operations `FSTOOLS_KILL_OPS` names)
at the n-th when `FSTOOLS_KILL_AT` is set, once (the calls that follow, an undo's
included, run whole). One run counts the calls of the whole batch; then, for kill
points spread over them, the workspace is made again, the batch killed there (the call
fails), and the next call (a plain `stat`, another helper process) must find
the set whole or absent, with no temporary left and no record unsettled.
"""

from __future__ import annotations

import shutil
import stat
from typing import TYPE_CHECKING

import pytest

from langchain_fstools.backends.protocol import ABSENT
from langchain_fstools.backends.sandbox import SandboxBackend
from langchain_fstools.backends.temporaries import TEMP_SUFFIX
from langchain_fstools.core.results import Deletion, Write
from langchain_fstools.errors import DiskFull
from langchain_fstools.patch import apply_patch
from langchain_fstools.tools.render import render_error
from tests.unit.backends.sandbox_double import ENV, ShellSandbox
from tests.unit.backends.test_local_disk_full import small_disk  # noqa: F401 - a fixture

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

KILL_POINTS = 24
"""Kill points per batch, spread evenly over its calls (first and last included)."""

HELPER_OP = """\
#!{python} -IS
import binascii, json, os, signal, sys, time, zlib
argument = sys.argv[-1]
if argument.startswith("@"):
    with open(os.path.join(sys.argv[-3], argument[1:]), "rb") as request:
        packed = request.read()
else:
    packed = binascii.a2b_base64(argument)
op = json.loads(zlib.decompress(packed).partition(b"\\n")[0])["op"]
"""
"""A wrapper `python3`'s start: the operation of the helper request it is given (`op`)."""

RUN_LOADER = """\
start = sys.argv.index("-c")
code, sys.argv = sys.argv[start + 1], ["-c", *sys.argv[start + 2 :]]
try:
    exec(compile(code, "<loader>", "exec"), {{"__name__": "__main__"}})
"""
"""Where a wrapper runs the helper's loader, as the real `python3 -c` would (then `finally:`)."""

KILLING_PYTHON = (
    HELPER_OP
    + """\
batch = op in os.environ.get("FSTOOLS_KILL_OPS", "write write_and_delete").split()
killed = os.environ.get("FSTOOLS_KILLED", "")
armed = batch and not os.path.exists(killed)
kill_at = int(os.environ.get("FSTOOLS_KILL_AT", "0")) if armed else 0
count_to = os.environ.get("FSTOOLS_COUNT_TO", "") if batch else ""
calls = [0]
def counted(real):
    def call(*args, **kwargs):
        calls[0] += 1
        if calls[0] == kill_at:
            open(killed, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)
    return call
for name in ("open", "write", "fsync", "rename", "replace", "link", "unlink", "rmdir", "mkdir"):
    setattr(os, name, counted(getattr(os, name)))
"""
    + RUN_LOADER
    + """\
finally:
    if count_to:
        with open(count_to, "w") as out:
            out.write(str(calls[0]))
"""
)

Tree = dict[str, tuple[str, bytes | str | int]]


def _fill(root: Path) -> None:
    if root.exists():
        shutil.rmtree(root)
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / "src" / "b.py").write_text("b = 1\n")
    (root / "old.txt").write_text("old\n")
    (root / "empty").mkdir()
    (root / "link").symlink_to("src/a.py")


def _tree(root: Path) -> Tree:
    found: Tree = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            found[key] = ("link", str(path.readlink()))
        elif path.is_dir():
            found[key] = ("dir", stat.S_IMODE(path.lstat().st_mode))
        else:
            found[key] = ("file", path.read_bytes())
    return found


def _write_many(backend: SandboxBackend) -> None:
    backend.write_many(
        [
            Write("/src/a.py", b"a = 2\n"),
            Write("/src/b.py", b"b = 2\n"),
            Write("/new/c.py", b"c = 1\n", ABSENT),
        ],
        [Deletion("/old.txt"), Deletion("/empty"), Deletion("/link")],
    )


PATCH = """\
*** Begin Patch
*** Update File: src/a.py
@@
-a = 1
+a = 3
*** Add File: docs/new.md
+# new
*** Delete File: old.txt
*** Update File: src/b.py
*** Move to: lib/b.py
@@
-b = 1
+b = 3
*** End Patch
"""


def _apply_patch(backend: SandboxBackend) -> None:
    apply_patch(PATCH, backend)


class _Crashing:
    """A workspace, its sandbox double with the killing `python3`, and a backend over it."""

    def __init__(self, tmp_path: Path) -> None:
        python = shutil.which("python3", path=ENV["PATH"])
        assert python is not None
        self.wrapper = tmp_path / "killing-python3"
        self.wrapper.write_text(KILLING_PYTHON.format(python=python))
        self.wrapper.chmod(0o755)
        self.root = tmp_path / "ws"
        self.helper = tmp_path / "helper"
        self.count = tmp_path / "calls"
        self.killed = tmp_path / "killed"
        self.sandbox = ShellSandbox()
        _fill(self.root)
        self.backend = SandboxBackend(  # a Python start per call: the wrapper's, counted
            self.sandbox,
            str(self.root),
            python=str(self.wrapper),
            helper_folder=str(self.helper),
            resident_idle=0,
        )
        self.backend.stat("/")  # the helper is installed and compiled

    def calls_of(self, batch: Callable[[SandboxBackend], None]) -> int:
        self.sandbox.env["FSTOOLS_COUNT_TO"] = str(self.count)
        try:
            batch(self.backend)
        finally:
            del self.sandbox.env["FSTOOLS_COUNT_TO"]
        return int(self.count.read_text())

    def killed_at(self, batch: Callable[[SandboxBackend], None], point: int) -> bool:
        """Run `batch` with the helper killed at call `point`; whether the call failed."""
        self.sandbox.env["FSTOOLS_KILL_AT"] = str(point)
        self.sandbox.env["FSTOOLS_KILLED"] = str(self.killed)
        self.killed.unlink(missing_ok=True)
        try:
            batch(self.backend)
        except Exception:  # noqa: BLE001 - any failure: what matters is that it was not success
            return self.killed.exists()
        finally:
            del self.sandbox.env["FSTOOLS_KILL_AT"]
        assert not self.killed.exists()
        return False

    def records(self) -> list[str]:
        return [
            path.name
            for path in self.helper.glob("journal-*/*")
            if path.name.endswith((".staging", ".commit"))
        ]


@pytest.mark.parametrize(
    ("batch", "forward"),
    [(_write_many, True), (_apply_patch, False)],
    ids=["write_many", "apply_patch"],
)
def test_a_batch_killed_at_any_step_is_whole_or_absent_at_the_next_call(
    tmp_path: Path, batch: Callable[[SandboxBackend], None], *, forward: bool
) -> None:
    """`forward`: whether a kill after the commit record leaves the set whole; apply_patch
    undoes a batch whose outcome it was not told (`patch.apply`), once the next call
    settled it whole."""
    crashing = _Crashing(tmp_path)
    before = _tree(crashing.root)
    total = crashing.calls_of(batch)
    after = _tree(crashing.root)
    assert after != before
    assert not crashing.records()
    points = sorted({1 + (total - 1) * n // (KILL_POINTS - 1) for n in range(KILL_POINTS)})
    outcomes = []
    for point in points:
        _fill(crashing.root)
        assert crashing.killed_at(batch, point), f"the batch killed at call {point} succeeded"
        crashing.backend.stat("/")  # any call settles what the killed helper left
        found = _tree(crashing.root)
        assert found in (before, after), f"killed at call {point} of {total}: {found}"
        assert not [name for name in found if name.endswith(TEMP_SUFFIX)], point
        assert not crashing.records(), point
        outcomes.append(found == after)
    assert any(outcomes) is forward  # rolled forward after the commit record
    assert not all(outcomes)  # rolled back before it


def test_a_batch_leaves_no_record_and_no_temporary(tmp_path: Path) -> None:
    crashing = _Crashing(tmp_path)
    _write_many(crashing.backend)
    assert not crashing.records()
    assert not [p for p in crashing.root.rglob("*") if p.name.endswith(TEMP_SUFFIX)]


def test_a_batch_that_does_not_fit_changes_nothing_and_says_why(
    small_disk: Path,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    (small_disk / "old.txt").write_text("old\n")
    backend = SandboxBackend(ShellSandbox(), str(small_disk), helper_folder=str(tmp_path / "h"))
    before = _tree(small_disk)
    writes = [Write(f"/build/{n}.bin", bytes(3 << 20), ABSENT) for n in range(4)]
    with pytest.raises(DiskFull) as caught:
        backend.write_many(writes, [Deletion("/old.txt")])
    assert _tree(small_disk) == before  # the folder the batch made goes too
    assert not [p for p in small_disk.rglob("*") if p.name.endswith(TEMP_SUFFIX)]
    sentence = render_error(caught.value, tool="write_file")
    assert sentence.count(". ") <= 1
    assert "disk" in sentence.lower()
