"""ls on every backend, sync and async."""

from __future__ import annotations

from pathlib import Path

from tests.unit.tools.conftest import Run
from tests.unit.tools.harness import Harness


def test_sorted_with_directories_marked(h: Harness, run: Run) -> None:
    for path in ["/b.txt", "/a/x.txt", "/C.md", "/.hidden"]:
        h.seed(path, b"x")
    msg = run("ls", path="/")
    listed = [line for line in msg.content.split("\n") if line not in h.mounts]
    assert listed == ["/.hidden", "/C.md", "/a/", "/b.txt"]
    assert msg.artifact["total"] == 4 + len(h.mounts)


def test_default_path_is_root(h: Harness, run: Run) -> None:
    h.seed("/a.txt", b"x")
    assert [line for line in run("ls").content.split("\n") if line not in h.mounts] == ["/a.txt"]


def test_truncation_notice(tmp_path: Path) -> None:
    for kind in ("local", "state"):
        h = Harness(kind, tmp_path / kind, ls_limit=2)
        for name in "abcde":
            h.seed(f"/{name}.txt", b"x")
        msg = h.call("ls", path="/")
        assert msg.content.splitlines() == [
            "/a.txt",
            "/b.txt",
            (
                "(Showing the first 2 entries; there are more."
                " List a subdirectory or use glob to narrow the listing.)"
            ),
        ]
        assert (msg.artifact["total"], msg.artifact["truncated"]) == (None, True)


def test_missing_directory_and_file(h: Harness, run: Run) -> None:
    h.seed("/a.txt", b"x")
    assert run("ls", path="/nope").status == "error"
    assert run("ls", path="/a.txt").status == "error"


def test_ls_on_a_file_says_to_read_it_or_list_its_directory(h: Harness, run: Run) -> None:
    h.seed("/src/a.txt", b"x")
    msg = run("ls", path="/src/a.txt")
    assert msg.status == "error"
    assert msg.content == (
        "Error: invalid path: /src/a.txt is a file, not a directory; read it with read_file,"
        " or list its directory with ls(path='/src')."
    )
    below = run("ls", path="/src/a.txt/deeper")
    assert below.status == "error"
    assert "a folder on its way is a file" in below.content


def test_composite_shows_mount_points_and_routes_writes(tmp_path: Path) -> None:
    h = Harness("composite", tmp_path)
    h.seed("/a.txt", b"local")
    h.seed("/docs/guide.md", b"in state")
    assert h.call("ls", path="/").content == "/a.txt\n/docs/\n/odd/"
    assert h.call("ls", path="/odd").content == "(empty directory: /odd)"
    assert (h.root / "a.txt").read_bytes() == b"local"
    assert not (h.root / "docs").exists()
    assert h.state["files"]["/docs/guide.md"]["content"] == "in state"
