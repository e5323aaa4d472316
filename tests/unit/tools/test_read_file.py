"""read_file on every backend, sync and async."""

from __future__ import annotations

import codecs

import pytest

from langchain_fstools.tools import read_file
from tests.unit.tools.conftest import Run
from tests.unit.tools.harness import Harness


def test_numbered_rows(h: Harness, run: Run) -> None:
    h.seed("/a.txt", b"alpha\nbeta\n")
    msg = run("read_file", file_path="/a.txt")
    assert msg.status == "success"
    assert msg.content == "1\talpha\n2\tbeta"
    assert msg.artifact["total_lines"] == 2


def test_relative_and_odd_spellings_name_the_same_file(h: Harness, run: Run) -> None:
    h.seed("/src/a.txt", b"x\n")
    assert run("read_file", file_path="src//./a.txt").content == "1\tx"


def test_window_footer_names_the_next_offset(h: Harness, run: Run) -> None:
    h.seed("/n.txt", b"".join(b"%d\n" % i for i in range(1, 51)))
    msg = run("read_file", file_path="/n.txt", offset=10, limit=5)
    assert msg.content.splitlines()[0] == "10\t10"
    assert msg.content.endswith("(Showing lines 10-14 of 50. Continue with offset=15 (limit=5).)")


def test_footer_gives_total_once_known(h: Harness, run: Run) -> None:
    h.seed("/n.txt", b"".join(b"%d\n" % i for i in range(1, 51)))
    run("read_file", file_path="/n.txt", offset=45, limit=10)
    msg = run("read_file", file_path="/n.txt", offset=1, limit=5)
    assert msg.content.endswith("(Showing lines 1-5 of 50. Continue with offset=6 (limit=5).)")


def test_token_budget_footer(tmp_path, run: Run) -> None:
    del run
    h = Harness("local", tmp_path, read_token_budget=20, count_tokens=len)  # 9 a row
    h.seed("/n.txt", b"".join(b"line %d\n" % i for i in range(1, 51)))
    msg = h.call("read_file", file_path="/n.txt")
    assert "Output reached the token budget." in msg.content
    assert "Continue with offset=3" in msg.content


def test_empty_file_reminder(h: Harness, run: Run) -> None:
    h.seed("/empty.txt", b"")
    msg = run("read_file", file_path="/empty.txt")
    assert msg.content == "System reminder: File exists but has empty contents"


def test_offset_past_the_end(h: Harness, run: Run) -> None:
    h.seed("/a.txt", b"1\n2\n")
    msg = run("read_file", file_path="/a.txt", offset=7)
    assert msg.status == "success"
    assert "has only 2 lines, fewer than offset 7" in msg.content


def test_same_unchanged_range_returns_stub(h: Harness, run: Run) -> None:
    h.seed("/a.txt", b"1\n2\n")
    run("read_file", file_path="/a.txt")
    again = run("read_file", file_path="/a.txt")
    assert again.content.startswith("File unchanged since your last read")
    h.change_behind_the_agents_back("/a.txt", b"1\n2\n3\n")
    fresh = run("read_file", file_path="/a.txt")
    assert fresh.content.endswith("3\t3")


def test_binary_refused(h: Harness, run: Run) -> None:
    h.seed("/bin.dat", b"\x00\x01\x02binary\xff")
    msg = run("read_file", file_path="/bin.dat")
    assert msg.status == "error"
    assert msg.content == (
        "Error: /bin.dat is a binary file (not text, an image, a PDF or a notebook), so it"
        " cannot be shown or edited as text. Leave it as it is, or ask the user how to handle it."
    )


def test_missing_file_suggests_near_spelling(h: Harness, run: Run) -> None:
    h.seed("/src/config.py", b"x\n")
    msg = run("read_file", file_path="/src/confg.py")
    assert msg.status == "error"
    assert msg.content == "Error: /src/confg.py does not exist. Did you mean /src/config.py?"


def test_near_spellings_are_sought_among_the_first_siblings_only(
    h: Harness, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(read_file, "SPELLINGS_COMPARED", 3)
    for name in ("aconfig.py", "b.txt", "c.txt", "zconfig.py"):
        h.seed(f"/d/{name}", b"x\n")
    assert run("read_file", file_path="/d/aconfg.py").content.endswith(
        "Did you mean /d/aconfig.py?"
    )
    beyond = run("read_file", file_path="/d/zconfg.py")
    assert beyond.status == "error"
    assert "/d/zconfig.py" not in beyond.content  # fourth by name: not compared


def test_macos_screenshot_narrow_space(h: Harness, run: Run) -> None:
    real = "/Screenshot 2024-01-01 at 10.00.00\u202fAM.txt"
    h.seed(real, b"shot\n")
    msg = run("read_file", file_path="/Screenshot 2024-01-01 at 10.00.00 AM.txt")
    assert msg.content.endswith(f"Did you mean {real}?")


def test_directory_refused(h: Harness, run: Run) -> None:
    h.seed("/d/a.txt", b"x")
    msg = run("read_file", file_path="/d")
    assert (msg.status, msg.content) == (
        "error",
        "Error: /d is a directory, not a file. Use ls to list it.",
    )


def test_bad_arguments(h: Harness, run: Run) -> None:
    h.seed("/a.txt", b"x\n")
    assert run("read_file", file_path="/a.txt", offset=-3).status == "error"
    assert run("read_file", file_path="/a.txt", limit=0).status == "error"
    assert run("read_file", file_path="/a.txt", pages="1").status == "error"
    assert run("read_file", file_path="").status == "error"


def test_utf16_and_bom_and_crlf_read_as_text(h: Harness, run: Run) -> None:
    h.seed("/le.txt", codecs.BOM_UTF16_LE + "héllo\r\nwörld\r\n".encode("utf-16-le"))
    h.seed("/be.txt", codecs.BOM_UTF16_BE + "a\nb".encode("utf-16-be"))
    h.seed("/bom.txt", codecs.BOM_UTF8 + b"x\r\ny\r\n")
    assert run("read_file", file_path="/le.txt").content == "1\théllo\n2\twörld"
    assert run("read_file", file_path="/be.txt").content == "1\ta\n2\tb"
    assert run("read_file", file_path="/bom.txt").content == "1\tx\n2\ty"


def test_latin1_file_read(h: Harness, run: Run) -> None:
    h.seed("/l1.txt", "café\n".encode("latin-1"))
    assert run("read_file", file_path="/l1.txt").content == "1\tcafé"


def test_escape_refused_without_host_path(h: Harness, run: Run) -> None:
    msg = run("read_file", file_path="../../etc/passwd")
    assert msg.status == "error"
    assert "outside the workspace" in msg.content
    assert str(h.root) not in msg.content


def test_one_long_line_is_read_to_its_end(h: Harness, run: Run) -> None:
    line = "".join(f'{{"n":{n},"é":"{n:x}"}},' for n in range(12_000))  # ~300 KB, one line
    h.seed("/one.json", line.encode() + b"\nlast\n")
    offset: int | str = 1
    shown: list[str] = []
    footers: list[str] = []
    for _ in range(100):
        msg = run("read_file", file_path="/one.json", offset=offset)
        assert msg.status == "success", msg.content
        body, _, footer = str(msg.content).partition("\n\n(")
        shown += [row.partition("\t")[2] for row in body.split("\n")]
        next_offset = msg.artifact["next_offset"]
        if next_offset is None:
            break
        footers.append(footer)
        assert f"Continue with offset={next_offset}" in footer.replace('"', "")
        offset = next_offset
    assert "".join(shown[:-1]) == line
    assert shown[-1] == "last"
    assert len(footers) > 1
    assert footers[0].startswith("Line 1 is long and continues on row 1.")


def test_a_row_past_the_line_is_an_error(h: Harness, run: Run) -> None:
    h.seed("/a.txt", b"short\n")
    msg = run("read_file", file_path="/a.txt", offset="1.1")
    assert msg.status == "error"
    assert 'line 1 has no row "1.1"; read it from offset=1' in str(msg.content)
    bad = run("read_file", file_path="/a.txt", offset="one")
    assert "neither a line number" in str(bad.content)
