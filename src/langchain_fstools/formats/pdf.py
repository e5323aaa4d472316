"""PDF pages as text, with page markers; pypdf does the parsing.

`pages` selects pages as "3", "1-5" or "2,4-6" (1-based, inclusive). Encrypted files
open when the empty password works. Work is bounded: the file size is capped by the
caller, and extracted text per page is capped here.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from pypdf import PdfReader, PdfWriter
from pypdf.errors import PyPdfError

from langchain_fstools.errors import InvalidArgument
from langchain_fstools.formats.kinds import Unreadable

MAX_PAGE_CHARS = 100_000
"""Most characters of text kept per page."""


@dataclass(frozen=True, slots=True)
class PdfPages:
    """Text of the selected pages of a PDF."""

    page_count: int
    pages: list[tuple[int, str]]
    """(1-based page number, text) in the order asked."""


def open_pdf(data: bytes) -> PdfReader:
    """Open a PDF, decrypting with the empty password when it is encrypted.

    Raises:
        Unreadable: corrupt, or encrypted with a password.
    """
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        locked = reader.is_encrypted and not reader.decrypt("")
        if not locked:
            _ = len(reader.pages)
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError) as exc:
        raise Unreadable(f"it is corrupt ({type(exc).__name__})") from None
    if locked:
        raise Unreadable("it is encrypted with a password")
    return reader


def parse_pages(spec: str, page_count: int) -> list[int]:
    """Turn "3", "1-5" or "2,4-6" into 1-based page numbers.

    Raises:
        InvalidArgument: malformed, reversed, or outside 1..page_count.
    """
    numbers: list[int] = []
    for part in spec.replace(" ", "").split(","):
        first, dash, last = part.partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            raise InvalidArgument("pages", f'{spec!r} is not like "3", "1-5" or "2,4-6"')
        start, end = int(first), int(last) if dash else int(first)
        if start < 1 or end < start or end > page_count:
            raise InvalidArgument(
                "pages", f"{part!r} is outside the document's pages 1-{page_count}"
            )
        numbers.extend(n for n in range(start, end + 1) if n not in numbers)
    return numbers


def extract(reader: PdfReader, numbers: list[int]) -> PdfPages:
    """The text of the given pages.

    Raises:
        Unreadable: a page cannot be parsed.
    """
    pages: list[tuple[int, str]] = []
    for number in numbers:
        try:
            text = reader.pages[number - 1].extract_text() or ""
        except (PyPdfError, ValueError, KeyError, TypeError, RecursionError) as exc:
            raise Unreadable(f"page {number} is corrupt ({type(exc).__name__})") from None
        pages.append((number, text[:MAX_PAGE_CHARS]))
    return PdfPages(len(reader.pages), pages)


def subset(reader: PdfReader, numbers: list[int]) -> bytes:
    """A PDF holding only the given pages, for models that read PDFs natively."""
    writer = PdfWriter()
    for number in numbers:
        writer.add_page(reader.pages[number - 1])
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


__all__ = [
    "MAX_PAGE_CHARS",
    "PdfPages",
    "extract",
    "open_pdf",
    "parse_pages",
    "subset",
]
