"""edit_file on every backend: the Claude Code safety model, byte-exact encodings."""

from __future__ import annotations

import codecs
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from langchain_fstools import FileToolkit, LocalBackend
from langchain_fstools.backends.guarded import BackendView
from langchain_fstools.tools.known_texts import KEEP_CONTENT_BYTES
from tests.unit.tools.conftest import Run
from tests.unit.tools.harness import Harness


def edit(run: Run, path: str, old: str, new: str, **extra: object):
    return run("edit_file", file_path=path, old_string=old, new_string=new, **extra)


def test_requires_read(h: Harness, run: Run) -> None:
    h.seed("/a.py", b"x = 1\n")
    msg = edit(run, "/a.py", "x = 1", "x = 2")
    assert (msg.status, h.content("/a.py")) == ("error", b"x = 1\n")


def test_partial_read_is_enough_for_an_edit(h: Harness, run: Run) -> None:
    h.seed("/a.py", b"a\nb\nc\n")
    run("read_file", file_path="/a.py", limit=1)
    assert edit(run, "/a.py", "c", "C").status == "success"
    assert h.content("/a.py") == b"a\nb\nC\n"


def test_stale_file_refused(h: Harness, run: Run) -> None:
    h.seed("/a.py", b"x = 1\n")
    run("read_file", file_path="/a.py")
    h.change_behind_the_agents_back("/a.py", b"x = 1\ny = 2\n")
    msg = edit(run, "/a.py", "x = 1", "x = 3")
    assert msg.content == (
        "Error: /a.py has been modified since it was last read. "
        "Read it again with read_file, then retry."
    )
    assert h.content("/a.py") == b"x = 1\ny = 2\n"


def test_unique_replacement_with_diff(h: Harness, run: Run) -> None:
    h.seed("/a.py", b"def f():\n    return 1\n")
    run("read_file", file_path="/a.py")
    msg = edit(run, "/a.py", "return 1", "return 2")
    assert msg.content.splitlines()[0] == "Edited /a.py: replaced 1 occurrence."
    assert "-    return 1" in msg.content
    assert "+    return 2" in msg.content
    assert msg.artifact["replacements"] == 1
    assert h.content("/a.py") == b"def f():\n    return 2\n"


def test_errors_no_match_ambiguous_noop(h: Harness, run: Run) -> None:
    h.seed("/a.py", b"x\nx\n")
    run("read_file", file_path="/a.py")
    assert "was not found" in edit(run, "/a.py", "y", "z").content
    ambiguous = edit(run, "/a.py", "x", "z")
    assert ambiguous.content.startswith("Error: old_string occurs 2 times in /a.py.")
    assert "identical" in edit(run, "/a.py", "x", "x").content
    assert h.content("/a.py") == b"x\nx\n"
    assert edit(run, "/a.py", "x", "z", replace_all=True).status == "success"
    assert h.content("/a.py") == b"z\nz\n"


def test_empty_old_string_creates_only(h: Harness, run: Run) -> None:
    msg = edit(run, "/new.txt", "", "hello\n")
    assert (msg.status, h.content("/new.txt")) == ("success", b"hello\n")
    msg = edit(run, "/new.txt", "", "again\n")
    assert msg.status == "error"
    assert "already exists and is not empty" in msg.content


def test_notebook_redirected(h: Harness, run: Run) -> None:
    h.seed("/n.ipynb", b"{}")
    msg = edit(run, "/n.ipynb", "{}", "[]")
    assert (
        msg.content
        == "Error: /n.ipynb is a Jupyter notebook; use notebook_edit to change its cells."
    )


def test_missing_file(h: Harness, run: Run) -> None:
    assert edit(run, "/none.py", "a", "b").status == "error"


@pytest.mark.parametrize(
    ("original", "old", "new", "expected"),
    [
        pytest.param(b"a\r\nb\r\nc\r\n", "a\nb", "A\nB", b"A\r\nB\r\nc\r\n", id="crlf"),
        pytest.param(b"a\nb\r\nc\nd\r\n", "c", "C\nC2", b"a\nb\r\nC\nC2\nd\r\n", id="mixed"),
        pytest.param(b"\xef\xbb\xbfx\r\ny\r\n", "y", "z", b"\xef\xbb\xbfx\r\nz\r\n", id="utf8-bom"),
        pytest.param(
            codecs.BOM_UTF16_LE + "é\r\nü\r\n".encode("utf-16-le"),
            "ü",
            "ö\nß",
            codecs.BOM_UTF16_LE + "é\r\nö\r\nß\r\n".encode("utf-16-le"),
            id="utf16-le",
        ),
        pytest.param(
            codecs.BOM_UTF16_BE + "a\nb".encode("utf-16-be"),
            "b",
            "c",
            codecs.BOM_UTF16_BE + "a\nc".encode("utf-16-be"),
            id="utf16-be",
        ),
        pytest.param("naïve\n".encode("latin-1"), "naïve", "naive", b"naive\n", id="latin-1"),
        pytest.param(b"no newline at end", "end", "END", b"no newline at END", id="no-eol"),
    ],
)
def test_bytes_outside_the_span_are_unchanged(
    h: Harness, run: Run, original: bytes, old: str, new: str, expected: bytes
) -> None:
    h.seed("/f.txt", original)
    run("read_file", file_path="/f.txt")
    msg = edit(run, "/f.txt", old, new)
    assert msg.status == "success", msg.content
    assert h.content("/f.txt") == expected


def test_curly_quotes_keep_style(h: Harness, run: Run) -> None:
    h.seed("/q.md", "He said “hi” and it’s fine.\n".encode())
    run("read_file", file_path="/q.md")
    msg = edit(run, "/q.md", 'said "hi" and it\'s', 'said "bye" and it\'s')
    assert "curly quotes" in msg.content
    assert h.content("/q.md") == "He said “bye” and it’s fine.\n".encode()


def test_line_number_prefixes_stripped(h: Harness, run: Run) -> None:
    h.seed("/a.py", b"x = 1\ny = 2\n")
    run("read_file", file_path="/a.py")
    msg = edit(run, "/a.py", "     2→y = 2", "     2→y = 3")
    assert msg.status == "success"
    assert h.content("/a.py") == b"x = 1\ny = 3\n"
    msg = edit(run, "/a.py", "1\tx = 1\n2\ty = 3", "1\tx = 0\n2\ty = 3")
    assert msg.status == "success"
    assert h.content("/a.py") == b"x = 0\ny = 3\n"


def old_gutter(row: str) -> str:
    """A row in the padded arrow form earlier versions (and Claude Code) print."""
    label, _, text = row.partition("\t")
    return f"{label:>6}→{text}"


LINE = st.one_of(
    st.text(alphabet="ab1 .\t→é", max_size=10),
    st.integers(4_998, 10_003).map(lambda n: "L" * n),  # rows N, N.1, N.2 ...
)


@settings(
    max_examples=120,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    lines=st.lists(LINE, min_size=1, max_size=8),
    span=st.tuples(st.integers(0, 30), st.integers(1, 6)),
    form=st.sampled_from(["new", "old", "new, blank rows trimmed"]),
)
def test_rows_copied_from_any_read_edit_exactly_what_they_show(
    lines: list[str], span: tuple[int, int], form: str
) -> None:
    """Rows pasted with their gutter (today's or the old `    12→`) are the text they show."""
    text = "\n".join(lines) + "\n"
    with tempfile.TemporaryDirectory() as tmp:
        h = Harness("state", Path(tmp))
        h.seed("/f.txt", text.encode())
        rows = str(h.call("read_file", file_path="/f.txt").content).split("\n")
        start = span[0] % len(rows)
        copied = rows[start : start + span[1]]
        shown = "".join(row.partition("\t")[2] + "\n" for row in rows)
        assert shown.replace("\n", "") == text.replace("\n", "")  # rows show the file
        body = [row.partition("\t")[2] for row in copied]
        labels = [row.partition("\t")[0] for row in copied]
        meant = body[0] + "".join(
            ("" if "." in label else "\n") + part
            for label, part in zip(labels[1:], body[1:], strict=True)
        )
        if form == "old":
            copied = [old_gutter(row) for row in copied]
        elif form == "new, blank rows trimmed":
            copied = [
                row.removesuffix("\t") if not row.partition("\t")[2] else row for row in copied
            ]
        pasted = "\n".join(copied)
        assume(meant and text.count(meant) == 1 and pasted not in text)
        message = h.call("edit_file", file_path="/f.txt", old_string=pasted, new_string="NEW")
        assert message.status == "success", message.content
        assert h.content("/f.txt") == text.replace(meant, "NEW").encode()


def test_unencodable_replacement_refused_and_file_kept(h: Harness, run: Run) -> None:
    h.seed("/l1.txt", "café\n".encode("latin-1"))
    run("read_file", file_path="/l1.txt")
    msg = edit(run, "/l1.txt", "café", "café →")
    assert msg.status == "error"
    assert "cp1252" in msg.content
    assert h.content("/l1.txt") == "café\n".encode("latin-1")


@pytest.mark.parametrize(
    ("codec", "text", "old", "new", "label"),
    [
        ("cp1252", "Größe: “schön” – 5€\r\nzweite Zeile\r\n" * 3, "zweite", "dritte", "cp1252"),
        ("shift_jis", "日本語のテキスト。\nファイルを読む。\n" * 3, "読む", "書く", "cp932"),
        ("utf-16-le", "hello wörld\r\nline two\r\n" * 3, "two", "deux", "utf-16-le"),
    ],
)
def test_legacy_encodings_read_as_themselves_and_edit_byte_exact(
    h: Harness, run: Run, codec: str, text: str, old: str, new: str, label: str
) -> None:
    data = text.encode(codec)
    h.seed("/legacy.txt", data)
    read = run("read_file", file_path="/legacy.txt")
    first_line = text.split("\n", 1)[0].removesuffix("\r")
    assert str(read.content).startswith(f"1\t{first_line}\n"), read.content
    assert read.artifact["encoding"] == label
    msg = edit(run, "/legacy.txt", old, new, replace_all=True)
    assert msg.status == "success", msg.content
    assert h.content("/legacy.txt") == text.replace(old, new).encode(codec)


class CallLog(BackendView):
    """A backend that notes which of stat, read and write each call was."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.log: list[str] = []

    def stat(self, path: str) -> Any:
        self.log.append("stat")
        return super().stat(path)

    def read_bytes(self, path: str, start: int = 0, size: int | None = None) -> bytes:
        self.log.append("read")
        return super().read_bytes(path, start, size)

    def read_checked(
        self, path: str, start: int = 0, size: int | None = None, *, expected_version: str
    ) -> bytes:
        self.log.append("read")
        return super().read_checked(path, start, size, expected_version=expected_version)

    def write_bytes(self, path: str, data: bytes, *, expected_version: str | None = None) -> Any:
        self.log.append("write")
        return super().write_bytes(path, data, expected_version=expected_version)


def logged_tools(root: Path) -> tuple[CallLog, dict[str, Any]]:
    backend = CallLog(LocalBackend(root))
    return backend, {t.name: t for t in FileToolkit(backend).get_tools()}


def test_an_edit_of_a_small_file_kept_whole_is_its_conditional_write_alone(
    tmp_path: Path,
) -> None:
    """The toolkit kept the file as read (then as written): each edit is one call."""
    (tmp_path / "a.py").write_bytes(b"x = 1\ny = 2\n")
    backend, tools = logged_tools(tmp_path)
    tools["read_file"].invoke({"file_path": "/a.py"})
    for old, new in [("x = 1", "x = 10"), ("y = 2", "y = 20")]:
        backend.log.clear()
        edited = tools["edit_file"].invoke(
            {"file_path": "/a.py", "old_string": old, "new_string": new}
        )
        assert edited.startswith("Edited /a.py"), edited
        assert backend.log == ["write"]
    assert (tmp_path / "a.py").read_bytes() == b"x = 10\ny = 20\n"


def test_an_edit_of_text_only_a_change_since_brought_is_refused_as_changed(
    h: Harness, run: Run
) -> None:
    """The kept text lacks `old_string`; the file has it now: changed since, not missing."""
    h.seed("/a.py", b"x = 1\n")
    run("read_file", file_path="/a.py")
    h.change_behind_the_agents_back("/a.py", b"x = 1\ny = 2\n")
    msg = edit(run, "/a.py", "y = 2", "y = 3")
    assert "modified since it was last read" in msg.content
    assert h.content("/a.py") == b"x = 1\ny = 2\n"


def test_a_file_over_the_kept_size_is_asked_for_before_its_edit(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_bytes(b"x" * KEEP_CONTENT_BYTES + b"\nend\n")
    backend, tools = logged_tools(tmp_path)
    tools["read_file"].invoke({"file_path": "/big.txt", "offset": 2})
    backend.log.clear()
    edited = tools["edit_file"].invoke(
        {"file_path": "/big.txt", "old_string": "end", "new_string": "END"}
    )
    assert edited.startswith("Edited /big.txt"), edited
    assert backend.log[0] == "stat"
    assert backend.log[-1] == "write"
