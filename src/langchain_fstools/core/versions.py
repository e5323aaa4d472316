"""Versions of files kept as records (state and store): kind plus a content hash."""

from __future__ import annotations

import hashlib
from typing import Literal

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


__all__ = ["HELD_HASH_BYTES", "content_version"]
