"""grep on every backend (local with and without ripgrep, state), sync and async."""

from __future__ import annotations

import os
from pathlib import Path

from tests.unit.tools.conftest import Run
from tests.unit.tools.harness import BACKENDS, Harness

TREE = {
    "/src/app.py": b"import os\n\ndef main(a):\n    return a.b(1)\n",
    "/src/util.py": b"def helper():\n    return 'Main'\n",
    "/src/web/app.ts": b"export const main = () => 1;\n",
    "/docs/notes.md": b"main notes\r\nsecond\r\n",
    "/build/gen.py": b"def main(): pass\n",
    "/.gitignore": b"build/\n",
    "/bin/blob": b"\x00main\x00",
    "/odd.txt": "a\fmain\nb\u2028main\nlast main".encode(),
}


def seed(h: Harness) -> None:
    for path, data in TREE.items():
        h.seed(path, data)


def test_files_with_matches_is_literal_and_skips_ignored_and_binary(h: Harness, run: Run) -> None:
    seed(h)
    lines = run("grep", pattern="main").content.split("\n")
    assert lines[0] == "Found 4 files"
    assert sorted(lines[1:]) == ["/docs/notes.md", "/odd.txt", "/src/app.py", "/src/web/app.ts"]


def test_content_lines_agree_with_read_file(h: Harness, run: Run) -> None:
    seed(h)
    message = run("grep", pattern="main", path="/odd.txt", output_mode="content")
    assert message.content.split("\n") == [
        "/odd.txt:1:a\fmain",
        "/odd.txt:2:b\u2028main",
        "/odd.txt:3:last main",
    ]
    read = run("read_file", file_path="/odd.txt").content.split("\n")
    assert read == ["     1→a\fmain", "     2→b\u2028main", "     3→last main"]


def test_content_with_context_and_crlf(h: Harness, run: Run) -> None:
    seed(h)
    message = run("grep", pattern="main", path="/docs", output_mode="content", **{"-A": 1})
    assert message.content.split("\n") == ["/docs/notes.md:1:main notes", "/docs/notes.md-2-second"]


def test_regex_case_and_type(h: Harness, run: Run) -> None:
    seed(h)
    message = run("grep", pattern=r"def \w+\(", regex=True, output_mode="content")
    assert message.content.split("\n") == [
        "/src/app.py:3:def main(a):",
        "/src/util.py:1:def helper():",
    ]
    insensitive = run("grep", pattern="MAIN", **{"-i": True}, type="py").content.split("\n")
    assert insensitive[0] == "Found 2 files"
    assert sorted(insensitive[1:]) == ["/src/app.py", "/src/util.py"]
    assert run("grep", pattern="main", glob="*.ts").content.split("\n") == [
        "Found 1 file",
        "/src/web/app.ts",
    ]


def test_count_mode(h: Harness, run: Run) -> None:
    seed(h)
    assert run("grep", pattern="main", output_mode="count", path="/src").content.split("\n") == [
        "Found 2 matching lines in 2 files",
        "/src/app.py:1",
        "/src/web/app.ts:1",
    ]


def test_literal_regex_looking_pattern_retried_as_regex(h: Harness, run: Run) -> None:
    seed(h)
    literal = run("grep", pattern="a.b(1)")
    assert literal.content == "Found 1 file\n/src/app.py"
    retried = run("grep", pattern=r"return \w\.b")
    assert retried.content.startswith(
        "No literal match for 'return \\\\w\\\\.b'; searched it as a regular expression instead."
    )
    assert retried.content.endswith("/src/app.py")


def test_paging_offset_and_head_limit(tmp_path: Path) -> None:
    for kind in BACKENDS:
        h = Harness(kind, tmp_path / kind)
        h.seed("/many.txt", b"".join(b"hit %d\n" % n for n in range(1, 11)))
        first = h.call("grep", pattern="hit", output_mode="content", head_limit=4)
        assert first.content.split("\n")[-1] == "(Showing lines 1-4 of 10. Continue with offset=4.)"
        second = h.call("grep", pattern="hit", output_mode="content", head_limit=4, offset=4)
        assert second.content.split("\n")[0] == "/many.txt:5:hit 5"
        everything = h.call("grep", pattern="hit", output_mode="content", head_limit=0)
        assert len(everything.content.split("\n")) == 10, kind


def test_long_lines_cut_at_500(h: Harness, run: Run) -> None:
    h.seed("/wide.txt", b"needle " + b"y" * 600 + b"\n")
    line = run("grep", pattern="needle", output_mode="content").content
    assert line == "/wide.txt:1:needle " + "y" * 493 + "…"


def test_long_line_shows_a_window_around_the_match(h: Harness, run: Run) -> None:
    h.seed("/wide.txt", b"x" * 600 + b" needle " + b"y" * 600 + b"\n")
    line = run("grep", pattern="needle", output_mode="content").content
    assert line == "/wide.txt:1:…" + "x" * 99 + " needle " + "y" * 393 + "…"
    h.seed("/one.json", b'{"k": "' + b"v" * 2_000_000 + b'", "key": "needle"}')
    line = run("grep", pattern="needle", output_mode="content", glob="*.json").content
    assert line == "/one.json:1:…" + "v" * 89 + '", "key": "needle"}'


def test_dash_pattern_and_aliases(h: Harness, run: Run) -> None:
    h.seed("/flags.txt", b"--verbose\n-n\n")
    assert (
        run("grep", pattern="--verbose", output_mode="content").content == "/flags.txt:1:--verbose"
    )
    assert (
        run("grep", pattern="-n", output_mode="content", **{"-n": False}).content == "/flags.txt:-n"
    )


def test_multiline(h: Harness, run: Run) -> None:
    h.seed("/m.py", b"def f(\n    a,\n):\n")
    message = run("grep", pattern=r"f\(\n\s+a", regex=True, multiline=True, output_mode="content")
    assert message.content.split("\n") == ["/m.py:1:def f(", "/m.py:2:    a,"]


def test_bad_input(h: Harness, run: Run) -> None:
    seed(h)
    invalid = run("grep", pattern="(", regex=True)
    assert invalid.status == "error"
    assert "does not compile as a regular expression" in invalid.content
    assert run("grep", pattern="").status == "error"
    assert run("grep", pattern="x", path="/../etc").status == "error"
    assert run("grep", pattern="x", path="/nope").status == "error"
    assert run("grep", pattern="x", type="klingon").status == "error"
    assert run("grep", pattern="x", head_limit=-1).status == "error"
    assert run("grep", pattern="main", path="/src/app.py").content == "Found 1 file\n/src/app.py"
    assert run("grep", pattern="zzz").content == "No matches found for 'zzz'."


def test_deadline_partial_result(tmp_path: Path) -> None:
    for kind in BACKENDS:
        h = Harness(kind, tmp_path / kind, search_timeout=1e-9)
        h.seed("/a.txt", b"x\n")
        message = h.call("grep", pattern="x")
        assert message.status == "success"
        assert "stopped at its 1e-09 s deadline" in message.content, kind


def test_files_newest_first(tmp_path: Path) -> None:
    for kind in ("local", "local-python"):
        h = Harness(kind, tmp_path / kind)
        for name, stamp in [("a.txt", 10), ("b.txt", 30), ("c.txt", 20)]:
            h.seed(f"/{name}", b"hit\n")
            os.utime(h.root / name, (1_000_000 + stamp,) * 2)
        assert h.call("grep", pattern="hit").content.split("\n")[1:] == [
            "/b.txt",
            "/c.txt",
            "/a.txt",
        ]
