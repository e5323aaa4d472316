"""Text encodings: detect, decode and re-encode a file without changing its bytes.

Detection reads the head of a file:
    1. a byte-order mark decides: UTF-8 (BOM), UTF-16 LE, UTF-16 BE;
    2. otherwise NUL bytes or many control characters mean binary;
    3. otherwise UTF-8 if the head decodes strictly (a multi-byte sequence cut at the end
       of the head is fine), else Latin-1, which maps every byte to one character and so
       round-trips any byte sequence exactly.

Decoding keeps line endings as they are (`\\r\\n` stays in the text), so encoding the
text back gives the original bytes.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

SNIFF_BYTES = 8192
"""How much of a file's head decides its encoding. Default: 8 KiB."""

_CONTROL_RATIO = 0.3
_TEXT_CONTROLS = b"\t\n\r\f\v\x1b\x08"
_NOT_BINARY_CONTROL = bytes(b for b in range(256) if b >= 0x20 or b in _TEXT_CONTROLS)  # noqa: PLR2004
"""Every byte except the control characters that suggest binary content."""


@dataclass(frozen=True, slots=True)
class TextCodec:
    """How a text file's bytes map to characters.

    Attributes:
        name: Python codec used for the body (after the BOM).
        bom: The byte-order mark the file starts with, kept on re-encoding.
    """

    name: str
    bom: bytes = b""

    @property
    def label(self) -> str:
        """Human name, e.g. `utf-8`, `utf-8 with BOM`, `utf-16-le`."""
        if self.name == "utf-8" and self.bom:
            return "utf-8 with BOM"
        return self.name

    @property
    def newline(self) -> bytes:
        """The encoded `\\n`, which ends every line."""
        return "\n".encode(self.name)

    def decode(self, data: bytes, *, errors: str = "strict") -> str:
        """Decode a whole file's bytes (BOM included)."""
        return data[len(self.bom) :].decode(self.name, errors)

    def encode(self, text: str) -> bytes:
        """Encode text into a whole file's bytes (BOM included)."""
        return self.bom + text.encode(self.name)


UTF8 = TextCodec("utf-8")
LATIN1 = TextCodec("latin-1")

_BOMS = (
    (codecs.BOM_UTF8, TextCodec("utf-8", codecs.BOM_UTF8)),
    (codecs.BOM_UTF16_LE, TextCodec("utf-16-le", codecs.BOM_UTF16_LE)),
    (codecs.BOM_UTF16_BE, TextCodec("utf-16-be", codecs.BOM_UTF16_BE)),
)


def sniff(head: bytes) -> TextCodec | None:
    """Return the codec of a file from its first bytes, or None if it is binary.

    Args:
        head: The first `SNIFF_BYTES` (or fewer) bytes of the file.
    """
    if head.startswith(codecs.BOM_UTF32_LE):
        return None
    for bom, codec in _BOMS:
        if head.startswith(bom):
            return codec
    if b"\x00" in head:
        return None
    if head:
        controls = len(head.translate(None, _NOT_BINARY_CONTROL))
        if controls / len(head) > _CONTROL_RATIO:
            return None
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return LATIN1
    return UTF8


def detect(data: bytes) -> TextCodec | None:
    """Return the codec of a whole file, or None if it is binary.

    Unlike `sniff`, a file whose head is UTF-8 but whose body is not is Latin-1.
    """
    codec = sniff(data[:SNIFF_BYTES])
    if codec == UTF8:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return LATIN1
    return codec


__all__ = ["LATIN1", "SNIFF_BYTES", "UTF8", "TextCodec", "detect", "sniff"]
