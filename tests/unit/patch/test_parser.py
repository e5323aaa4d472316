"""parse_patch: the grammar, its leniency, and errors that say which line."""

from __future__ import annotations

import pytest

from langchain_fstools.errors import PatchParseError
from langchain_fstools.patch.parser import (
    AddFile,
    Chunk,
    DeleteFile,
    Patch,
    UpdateFile,
    parse_patch,
    unwrap_heredoc,
)


def patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"]) + "\n"


def error_of(text: str) -> PatchParseError:
    with pytest.raises(PatchParseError) as caught:
        parse_patch(text)
    return caught.value


def test_every_section_kind() -> None:
    parsed = parse_patch(
        patch(
            "*** Add File: a.txt",
            "+one",
            "+",
            "*** Delete File: b.txt",
            "*** Update File: c.py",
            "*** Move to: d.py",
            "@@ class A:",
            "@@     def f(self):",
            " keep",
            "-old",
            "+new",
            "@@",
            "+tail",
            "*** End of File",
        )
    )
    assert parsed == Patch(
        (
            AddFile("a.txt", "one\n\n"),
            DeleteFile("b.txt"),
            UpdateFile(
                "c.py",
                "d.py",
                (
                    Chunk(
                        ("class A:", "    def f(self):"),
                        ("keep", "old"),
                        ("keep", "new"),
                        False,
                        8,
                        " -+",
                    ),
                    Chunk((), (), ("tail",), True, 13, "+"),
                ),
            ),
        )
    )
    assert parsed.paths() == ["a.txt", "b.txt", "c.py", "d.py"]


def test_first_chunk_may_omit_its_header() -> None:
    (hunk,) = parse_patch(patch("*** Update File: f", " a", "-b", "+c")).hunks
    assert isinstance(hunk, UpdateFile)
    assert hunk.chunks[0].old_lines == ("a", "b")


def test_padded_markers_and_headers() -> None:
    text = "  *** Begin Patch \n *** Update File:  f.txt \n @@  \n-a\n+b\n\t*** End Patch  "
    (hunk,) = parse_patch(text).hunks
    assert hunk == UpdateFile("f.txt", None, (Chunk((), ("a",), ("b",), False, 3, "-+"),))


@pytest.mark.parametrize("opening", ["<<EOF", "<<'EOF'", '<<"EOF"', "<< 'PATCH'"])
def test_heredoc_wrapper_is_unwrapped(opening: str) -> None:
    closing = opening.strip("<' \"")
    text = f"{opening}\n{patch('*** Delete File: x')}{closing}\n"
    assert parse_patch(text).hunks == (DeleteFile("x"),)
    assert unwrap_heredoc("no wrapper") == "no wrapper"


def test_blank_lines_inside_a_chunk_are_context_and_trailing_ones_are_dropped() -> None:
    (hunk,) = parse_patch(patch("*** Update File: f", " a", "", "-b", "", "")).hunks
    assert isinstance(hunk, UpdateFile)
    assert hunk.chunks[0].old_lines == ("a", "", "b")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", PatchParseError("the first line of the patch must be '*** Begin Patch'", 1)),
        (
            "*** Begin Patch\n*** Delete File: x\n",
            PatchParseError("the last line of the patch must be '*** End Patch'", 2),
        ),
        (patch(), PatchParseError("the patch has no file sections", 2)),
        (
            patch("*** Frobnicate File: x"),
            PatchParseError(
                "expected '*** Add File:', '*** Delete File:' or '*** Update File:'"
                " but found '*** Frobnicate File: x'",
                2,
            ),
        ),
        (patch("*** Add File:"), PatchParseError("'*** Add File:' needs a path", 2)),
        (
            patch("*** Add File: a", "+ok", "oops"),
            PatchParseError("in the added file a every line must start with '+'; found 'oops'", 4),
        ),
        (
            patch("*** Delete File: a", "-x"),
            PatchParseError("'*** Delete File: a' takes no lines; found '-x'", 3),
        ),
        (patch("*** Update File: a"), PatchParseError("the update of a has no changes", 3)),
        (
            patch("*** Update File: a", "@@", " x", "y"),
            PatchParseError(
                "in the update of a every chunk line must start with ' ', '-' or '+' but found 'y'",
                5,
            ),
        ),
        (
            patch("*** Update File: a", "@@x", "-y"),
            PatchParseError("a chunk header must be '@@' or '@@ <line>'", 3),
        ),
        (
            patch("*** Update File: a", "@@", "@@ ctx"),
            PatchParseError("a chunk of a has no lines", 3),
        ),
    ],
)
def test_errors_name_the_line(text: str, expected: PatchParseError) -> None:
    assert error_of(text) == expected
