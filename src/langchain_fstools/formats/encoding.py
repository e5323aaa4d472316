"""Text encodings: detect, decode and re-encode a file without changing its bytes.

Detection reads the head of a file (a bounded sample, never the whole of a large file):
    1. a byte-order mark decides: UTF-8 (BOM), UTF-16 LE, UTF-16 BE;
    2. NUL bytes in every other position, decoding to printable text, are UTF-16
       without a BOM; other NUL bytes, or many control characters, mean binary;
    3. UTF-8 if the head decodes strictly (a multi-byte sequence cut at the end of the
       head is fine);
    4. otherwise a legacy code page: Windows-1252 for text that is mostly ASCII with
       some accented letters (Western languages), else what `charset-normalizer`
       finds (Shift-JIS, GBK, Windows-1251, ...), else Latin-1, which maps every byte
       to one character and so round-trips any byte sequence exactly.

Decoding keeps line endings as they are (`\\r\\n` stays in the text), so encoding the
text back gives the original bytes. `detect`, used before an edit, accepts a codec only
if the whole file decodes and re-encodes to the same bytes, else falls back to Latin-1:
an edit never changes a byte outside the replaced span.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from functools import cache

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
    def single_byte(self) -> bool:
        """Whether every byte is one character (Latin-1, Windows-125x, ...).

        Such files, like UTF-8 ones, are read in place: `\\n` is one byte and a
        character never spans a line break.
        """
        return _single_byte(self.name)

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
CP1252 = TextCodec("cp1252")

_UTF16_NUL_SHARE = 0.4
"""Share of NUL bytes in one half (odd or even offsets) that suggests UTF-16 text."""
_UTF16_OTHER_NUL_SHARE = 0.05
_WESTERN_SHARE = 0.5
"""Most non-ASCII bytes, as a share of letters, in Western text in Windows-1252."""
_HIGH_BYTES = bytes(range(0x80, 0x100))
_ASCII_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_LEGACY_SAMPLE = 16 * 1024
"""Bytes of a non-UTF-8 file's body shown to charset-normalizer."""

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
        return _utf16_without_bom(head)
    if head:
        controls = len(head.translate(None, _NOT_BINARY_CONTROL))
        if controls / len(head) > _CONTROL_RATIO:
            return None
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        try:  # maybe a multi-byte sequence cut at the end of the head
            codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
        except UnicodeDecodeError:
            return _legacy(head)
    return UTF8


def detect(data: bytes) -> TextCodec | None:
    """Return the codec of a whole file, or None if it is binary.

    Unlike `sniff`, the whole file must round-trip: a file whose head is UTF-8 but
    whose body is not gets a legacy code page found from a sample around the first
    byte that is not UTF-8; a codec that would not give back the same bytes is
    replaced by Latin-1.
    """
    codec = sniff(data[:SNIFF_BYTES])
    if codec == UTF8:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            start = max(0, exc.start - _LEGACY_SAMPLE // 2)
            codec = _legacy(data[start : start + _LEGACY_SAMPLE], cut_start=start > 0)
        else:
            return UTF8
    if codec is None or codec == LATIN1:
        return codec
    try:
        exact = codec.encode(codec.decode(data)) == data
    except (UnicodeDecodeError, UnicodeEncodeError):
        exact = False
    return codec if exact else LATIN1


def _utf16_without_bom(head: bytes) -> TextCodec | None:
    """UTF-16 LE or BE when NUL bytes fill one half of the head and the text reads."""
    size = len(head) - len(head) % 2
    if size < 4:  # noqa: PLR2004 - two characters at least
        return None
    half = size // 2
    even, odd = head[0:size:2].count(0), head[1:size:2].count(0)
    if odd >= _UTF16_NUL_SHARE * half and even <= _UTF16_OTHER_NUL_SHARE * half:
        name = "utf-16-le"
    elif even >= _UTF16_NUL_SHARE * half and odd <= _UTF16_OTHER_NUL_SHARE * half:
        name = "utf-16-be"
    else:
        return None
    try:
        text = codecs.getincrementaldecoder(name)().decode(head[:size], final=False)
    except UnicodeDecodeError:
        return None
    readable = sum(c.isprintable() or c in "\t\n\r\f\v" for c in text)
    if "\x00" in text or readable < (1 - _CONTROL_RATIO) * len(text):
        return None
    return TextCodec(name)


def _legacy(sample: bytes, *, cut_start: bool = False) -> TextCodec:
    """The code page of text that is not UTF-8, from a sample of it.

    Args:
        sample: Bytes of the file (its head, or a window of its body).
        cut_start: The sample starts inside the file, maybe inside a character.
    """
    high = len(sample) - len(sample.translate(None, _HIGH_BYTES))
    letters = len(sample) - len(sample.translate(None, _ASCII_LETTERS)) + high
    if letters and high / letters <= _WESTERN_SHARE and _decodes(sample, "cp1252"):
        return CP1252
    from charset_normalizer import from_bytes  # noqa: PLC0415 - only for non-UTF-8 text

    # leave out characters the sample's edges may cut (a character has at most 4 bytes)
    end = len(sample) - 3 if len(sample) >= SNIFF_BYTES else len(sample)
    best = from_bytes(sample[1 if cut_start else 0 : end]).best()
    if best is not None:
        name = codecs.lookup(best.encoding).name
        if name not in {"utf-8", "ascii"} and not name.startswith(("utf-16", "utf-32")):
            return TextCodec(name)
    return CP1252 if _decodes(sample, "cp1252") else LATIN1


def _decodes(sample: bytes, name: str) -> bool:
    try:
        codecs.getincrementaldecoder(name)().decode(sample, final=False)
    except UnicodeDecodeError:
        return False
    return True


@cache
def _single_byte(name: str) -> bool:
    """Whether codec `name` maps each byte to one character on its own."""
    if codecs.lookup(name).name.startswith(("utf-", "utf_")):
        return False
    return len(bytes(range(256)).decode(name, "replace")) == 256  # noqa: PLR2004


__all__ = ["CP1252", "LATIN1", "SNIFF_BYTES", "UTF8", "TextCodec", "detect", "sniff"]
