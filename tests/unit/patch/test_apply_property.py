"""Property tests of applying chunks: other lines and their endings are kept."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from langchain_fstools.patch.apply import apply_chunks
from langchain_fstools.patch.parser import Chunk

_LINE = st.text(st.sampled_from("ab \t\r\u00e9"), max_size=6).filter(lambda s: not s.endswith("\r"))
_EOL = st.sampled_from(["\n", "\r\n"])


@st.composite
def documents(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    lines = draw(st.lists(_LINE, min_size=1, max_size=12))
    ends = [draw(_EOL) for _ in lines]
    if lines[-1] and draw(st.booleans()):  # a last line without its line ending
        ends[-1] = ""
    return lines, ends


@given(documents())
def test_no_chunks_give_the_text_back(document: tuple[list[str], list[str]]) -> None:
    text = "".join(line + end for line, end in zip(*document, strict=True))
    assert apply_chunks("/f", text, []) == text


@given(documents(), st.data())
def test_a_replaced_line_changes_only_that_line(
    document: tuple[list[str], list[str]], data: st.DataObject
) -> None:
    lines, ends = document
    at = data.draw(st.integers(0, len(lines) - 1))
    text = "".join(line + end for line, end in zip(lines, ends, strict=True))
    before = lines[:at]
    chunk = Chunk(
        contexts=(),
        old_lines=(*before, lines[at]),
        new_lines=(*before, "NEW"),
        end_of_file=False,
        line=1,
        kinds=" " * len(before) + "-+",
    )
    crlf = ends.count("\r\n")
    eol = "\r\n" if crlf * 2 > len(ends) - ends.count("") else "\n"
    expected = [line + end for line, end in zip(lines, ends, strict=True)]
    expected[at] = "NEW" + eol  # an added line takes the file's dominant line ending
    assert apply_chunks("/f", text, [chunk]) == "".join(expected)
