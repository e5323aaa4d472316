"""Files kept as records (graph state, a store, file history): one codec for all.

A record holds a file's bytes as `content` with an `encoding`: the text itself when the
bytes are UTF-8 holding no NUL (PostgreSQL's jsonb refuses NUL), base64 otherwise. Its
version is the kind plus a content hash; every directory has the same version.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Final, Literal

Encoding = Literal["utf-8", "base64"]
"""How a record's `content` holds the bytes."""

HELD_HASH_BYTES = 64 * 1024
"""Data up to this size is hashed without releasing the GIL (see `content_version`)."""

_PIECE_BYTES = 2047
"""hashlib releases the GIL while hashing a buffer of 2048 bytes or more."""


def content_version(kind: Literal["file", "directory"], data: bytes) -> str:
    """Return `<kind>:<blake2b-8 hex of data>`, which changes whenever the bytes do.

    Data up to `HELD_HASH_BYTES` is fed in pieces short enough that hashlib keeps the
    GIL: releasing it for a hash of a few microseconds costs the tool thread a thread
    switch, which takes far longer while another thread (a checkpointer serializing
    the previous step) is busy.
    """
    digest = hashlib.blake2b(digest_size=8)
    if len(data) <= HELD_HASH_BYTES:
        view = memoryview(data)
        for start in range(0, len(data), _PIECE_BYTES):
            digest.update(view[start : start + _PIECE_BYTES])
    else:
        digest.update(data)
    return f"{kind}:{digest.hexdigest()}"


DIRECTORY_VERSION: Final = content_version("directory", b"")
"""The version of every directory record: directories have no content of their own."""


def encode_content(data: bytes) -> tuple[str, Encoding]:
    """`data` as record content: the UTF-8 text when it has no NUL, else base64."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        if "\x00" not in text:
            return text, "utf-8"
    return base64.b64encode(data).decode("ascii"), "base64"


def decode_content(content: str, encoding: str | None) -> bytes:
    """The bytes record content holds (content that is not valid base64 is read as text)."""
    if encoding == "base64":
        try:
            return base64.b64decode(content, validate=True)
        except binascii.Error:
            pass
    return content.encode("utf-8", "surrogatepass")


def digest(data: bytes) -> str:
    """SHA-256 of `data` in hex: what an approval pins of a post-image."""
    return hashlib.sha256(data).hexdigest()


__all__ = [
    "DIRECTORY_VERSION",
    "HELD_HASH_BYTES",
    "Encoding",
    "content_version",
    "decode_content",
    "digest",
    "encode_content",
]
