"""ls on every backend, sync and async."""

from __future__ import annotations

from pathlib import Path

from tests.unit.tools.conftest import Run
from tests.unit.tools.harness import Harness


def test_sorted_with_directories_marked(h: Harness, run: Run) -> None:
    for path in ["/b.txt", "/a/x.txt", "/C.md", "/.hidden"]:
        h.seed(path, b"x")
    msg = run("ls", path="/")
    assert msg.content == "/.hidden\n/C.md\n/a/\n/b.txt"
    assert msg.artifact["total"] == 4


def test_default_path_is_root(h: Harness, run: Run) -> None:
    h.seed("/a.txt", b"x")
    assert run("ls").content == "/a.txt"


def test_truncation_notice(tmp_path: Path) -> None:
    for kind in ("local", "state"):
        h = Harness(kind, tmp_path / kind, ls_limit=2)
        for name in "abcde":
            h.seed(f"/{name}.txt", b"x")
        msg = h.call("ls", path="/")
        assert msg.content.splitlines() == [
            "/a.txt",
            "/b.txt",
            "(Showing 2 of 5 entries. List a subdirectory or use glob to narrow the listing.)",
        ]


def test_missing_directory_and_file(h: Harness, run: Run) -> None:
    h.seed("/a.txt", b"x")
    assert run("ls", path="/nope").status == "error"
    assert run("ls", path="/a.txt").status == "error"
