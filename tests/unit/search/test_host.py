"""The engine run on the files' host (search.host): the answers of the engine itself.

`main` runs in this process here, over the tree of the differential suite; the
loader that ships it to another interpreter is tested in
tests/unit/backends/test_ssh_search.py, and over a real sshd in
tests/integration/ssh/test_ssh_host_python.py.
"""

from __future__ import annotations

import errno
import io
import os
import time
from pathlib import Path
from typing import Any

import pytest

from langchain_fstools import FileToolkit, LocalBackend
from langchain_fstools.backends.ssh.search import HostPython
from langchain_fstools.errors import OutsideRoot
from langchain_fstools.search import regex as search_regex
from langchain_fstools.search.contract import GrepRequest, InvalidPattern, NativeSearch
from langchain_fstools.search.host import (
    HostFiles,
    HostSearchFailed,
    decode,
    grep_request,
    list_request,
    main,
)
from tests.unit.search.test_differential import QUERIES, make_tree


class HostPythonLocal(LocalBackend):
    """A local tree searched as an SSH server without rg would search it: by `main`."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, use_ripgrep=False)
        self.real_root = str(root.resolve())
        self.broken = False

    def native_search(self) -> NativeSearch | None:
        return HostPython(self._run, self, self._broken)

    def _run(self, build: Any, seconds: float) -> tuple[bytes, bool]:
        out = io.BytesIO()
        main(build(self.real_root), out)
        return out.getvalue(), False

    def _broken(self) -> None:
        self.broken = True


CALLS: list[tuple[str, dict[str, object]]] = [
    ("glob", {"pattern": "**"}),
    ("glob", {"pattern": "**/*.{py,md}"}),
    ("glob", {"pattern": "*", "path": "/deep"}),
    *[
        ("grep", {"pattern": pattern, "output_mode": mode, "head_limit": 0, **options})
        for pattern, options in QUERIES
        for mode in ("files_with_matches", "content", "count")
    ],
    ("grep", {"pattern": "alpha", "output_mode": "content", "-C": 1, "head_limit": 0}),
    ("grep", {"pattern": "alpha", "output_mode": "content", "-A": 2, "-B": 1, "-n": False}),
    ("grep", {"pattern": "a.b\\nbeta|gamma\\s+\\w", "regex": True, "multiline": True}),
    ("grep", {"pattern": "alp", "glob": "**/*.txt", "path": "/deep"}),
    ("grep", {"pattern": "(", "regex": True}),
]


def answers(backend: LocalBackend) -> list[str]:
    tools = {tool.name: tool for tool in FileToolkit(backend, glob_limit=100_000).get_tools()}
    return [str(tools[name].invoke(args)) for name, args in CALLS]


@pytest.mark.parametrize("seed", range(3))
def test_main_answers_as_the_engine_over_the_backend(tmp_path: Path, seed: int) -> None:
    make_tree(tmp_path, seed)
    (tmp_path / ".hidden.txt").write_text("alpha hidden\n")
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("*.md\n")
    (tmp_path / ".git" / "alpha").write_text("alpha in the VCS folder\n")
    for n, path in enumerate(sorted(tmp_path.rglob("*"))):  # whole seconds, as SFTP gives
        os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n), follow_symlinks=False)
    host = HostPythonLocal(tmp_path)
    assert answers(host) == answers(LocalBackend(tmp_path, use_ripgrep=False))
    assert not host.broken


def test_links_are_not_followed_and_leave_the_root_as_special_entries(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "real").mkdir(parents=True)
    (root / "real" / "a.txt").write_text("needle\n")
    (tmp_path / "outside.txt").write_text("needle\n")
    (root / "inside").symlink_to(root / "real")
    (root / "out.txt").symlink_to(tmp_path / "outside.txt")
    (root / "dangling").symlink_to(tmp_path / "nowhere")
    files = HostFiles(str(root.resolve()))
    listed = {entry.name: entry for entry in files.list_dir("/")}
    assert listed["inside"].is_dir
    assert listed["inside"].link
    assert listed["out.txt"].kind == "special"
    assert listed["out.txt"].link
    assert listed["dangling"].kind == "special"
    assert files.read_bytes("/inside/a.txt") == b"needle\n"
    with pytest.raises(OutsideRoot) as raised:
        files.read_bytes("/out.txt")
    assert raised.value == OutsideRoot("/out.txt")
    host = HostPythonLocal(root)
    grep = next(t for t in FileToolkit(host).get_tools() if t.name == "grep")
    assert grep.invoke({"pattern": "needle"}) == "Found 1 file\n/real/a.txt"


def test_errors_name_the_virtual_path_only(tmp_path: Path) -> None:
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / "pipe")
    files = HostFiles(str(tmp_path.resolve()))
    with pytest.raises(FileNotFoundError) as missing:
        files.list_dir("/absent")
    assert (missing.value.errno, missing.value.filename) == (errno.ENOENT, "/absent")
    with pytest.raises(IsADirectoryError):
        files.read_bytes("/fifo")
    out = io.BytesIO()
    main(list_request(str(tmp_path.resolve()), "/absent", (), 10), out)
    assert str(tmp_path) not in out.getvalue().decode()
    with pytest.raises(FileNotFoundError) as reported:
        decode(out.getvalue(), timed_out=False)
    assert reported.value.filename == "/absent"


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    started = time.monotonic()
    with pytest.raises(Exception, match="special") as raised:
        HostFiles(str(tmp_path.resolve())).read_bytes("/pipe")
    assert type(raised.value).__name__ == "SpecialFile"
    assert time.monotonic() - started < 1


def test_a_bad_pattern_comes_back_as_invalid_pattern(tmp_path: Path) -> None:
    out = io.BytesIO()
    request = GrepRequest("(", "/", regex=True)
    main(grep_request(str(tmp_path.resolve()), request, 10), out)
    with pytest.raises(InvalidPattern):
        decode(out.getvalue(), timed_out=False)


def test_the_host_stops_at_the_deadline_with_what_it_found(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("needle\n")
    out = io.BytesIO()
    main(grep_request(str(tmp_path.resolve()), GrepRequest("needle", "/"), 0.0), out)
    reply = decode(out.getvalue(), timed_out=False)
    assert not reply.complete


def test_a_run_cut_at_the_deadline_keeps_its_whole_records() -> None:
    data = b'["hits","/a.txt",1.0,1,[]]\n["hits","/b.t'
    reply = decode(data, timed_out=True)
    assert [hits.path for hits in reply.hits] == ["/a.txt"]
    assert not reply.complete


def test_a_run_that_ends_without_its_last_record_failed() -> None:
    with pytest.raises(HostSearchFailed):
        decode(b'["hits","/a.txt",1.0,1,[]]\n', timed_out=False)
    with pytest.raises(HostSearchFailed):
        decode(b"Traceback (most recent call last):\n", timed_out=False)


def test_chatter_before_the_records_is_skipped() -> None:
    reply = decode(b'welcome to the host\n["end",true]\n', timed_out=False)
    assert reply.complete


def test_a_failed_run_is_answered_by_walking_the_backend(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("needle\n")

    class Crashing(HostPythonLocal):
        def _run(self, build: Any, seconds: float) -> tuple[bytes, bool]:
            del build, seconds
            return b"", False

    backend = Crashing(tmp_path)
    grep = next(t for t in FileToolkit(backend).get_tools() if t.name == "grep")
    glob = next(t for t in FileToolkit(backend).get_tools() if t.name == "glob")
    assert grep.invoke({"pattern": "needle"}) == "Found 1 file\n/a.txt"
    assert glob.invoke({"pattern": "*"}) == "/a.txt"
    assert backend.broken


@pytest.mark.parametrize(
    ("pattern", "regex"),
    [("def \\w+\\(", True), ("a.b", False), ("(x|y)+z", True), ("\\d{2}-\\s", True)],
)
def test_without_re2_python_re_finds_the_same_spans(
    pattern: str, regex: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host without google-re2 runs the shipped engine on Python's `re`: same matches."""
    text = "def run(\na.b axb\nxyxz 12- 34-\t\u0661\u0662- def \u00e9t\u00e9(\n"
    expected = list(
        search_regex.Regex(pattern, regex=regex, ignore_case=False, multiline=False).spans(text)
    )
    monkeypatch.setattr(search_regex, "re2", None)
    fallback = search_regex.Regex(pattern, regex=regex, ignore_case=False, multiline=False)
    assert list(fallback.spans(text)) == expected
    with pytest.raises(InvalidPattern, match="look-ahead"):
        search_regex.Regex("a(?=b)", regex=True, ignore_case=False, multiline=False)


def test_a_match_deep_in_a_long_line_is_shown_around_it_as_by_the_engine(
    tmp_path: Path,
) -> None:
    (tmp_path / "one.json").write_text("x" * 3000 + "NEEDLE" + "y" * 3000 + "\n")
    args = {"pattern": "NEEDLE", "output_mode": "content"}
    (via_host,) = [
        t for t in FileToolkit(HostPythonLocal(tmp_path)).get_tools() if t.name == "grep"
    ]
    local = LocalBackend(tmp_path, use_ripgrep=False)
    (via_engine,) = [t for t in FileToolkit(local).get_tools() if t.name == "grep"]
    shown = str(via_host.invoke(args))
    assert "NEEDLE" in shown
    assert shown == str(via_engine.invoke(args))
