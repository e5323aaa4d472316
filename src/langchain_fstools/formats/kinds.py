"""What a file holds, decided by its first bytes; the extension only breaks ties."""

from __future__ import annotations

import io
import warnings
from enum import StrEnum

from langchain_fstools.formats import encoding


class Unreadable(ValueError):
    """Content a format handler cannot present; `reason` says why in one phrase."""

    def __init__(self, reason: str) -> None:
        """Keep the reason (no paths: the caller knows which file it was)."""
        super().__init__(reason)
        self.reason = reason


class ContentKind(StrEnum):
    """How read_file presents a file."""

    TEXT = "text"
    IMAGE = "image"
    PDF = "pdf"
    NOTEBOOK = "notebook"
    BINARY = "binary"


_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
)


def detect(head: bytes, path: str = "") -> tuple[ContentKind, str | None]:
    """Return the kind of a file from its head, and the MIME type of images and PDFs.

    Args:
        head: The first `encoding.SNIFF_BYTES` bytes (or the whole file if shorter).
        path: The file's path; its extension only breaks ties (a JSON text file
            named `.ipynb` is a notebook).
    """
    for magic, mime in _IMAGE_MAGIC:
        if head.startswith(magic) and (magic != b"BM" or encoding.sniff(head) is None):
            return ContentKind.IMAGE, mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return ContentKind.IMAGE, "image/webp"
    if b"%PDF-" in head[:1024]:
        return ContentKind.PDF, "application/pdf"
    if encoding.sniff(head) is None:
        seen = _pillow_image(head)
        return (ContentKind.IMAGE, seen) if seen else (ContentKind.BINARY, None)
    if path.lower().endswith(".ipynb") and head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return ContentKind.NOTEBOOK, "application/x-ipynb+json"
    return ContentKind.TEXT, None


def _pillow_image(head: bytes) -> str | None:
    """The MIME type of a binary head that Pillow recognises as an image, else None.

    Only binary content is asked, so a text file is never taken for an image by
    Pillow's looser formats (PPM's `P1`, XBM's `#define`).
    """
    from PIL import Image  # noqa: PLC0415 - Pillow loads only for binary files

    Image.init()
    # formats with a signature check only: the others (TGA, ...) take random bytes
    signed = [
        name for name, (_, accept) in Image.OPEN.items() if accept and name not in _NOT_IMAGES
    ]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(io.BytesIO(head), formats=signed) as opened:
                name = opened.format or "unknown"
    except Exception:  # noqa: BLE001 - any failure means "not an image Pillow knows"
        return None
    return Image.MIME.get(name) or f"image/{name.lower()}"


_NOT_IMAGES = frozenset({"EPS", "MPEG", "PDF"})
"""Pillow formats read_file does not present as pictures."""


__all__ = ["ContentKind", "Unreadable", "detect"]
