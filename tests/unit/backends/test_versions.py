"""Record versions: one content hash, whatever way it is fed to hashlib."""

from __future__ import annotations

import hashlib

import pytest

from langchain_fstools.core.versions import HELD_HASH_BYTES, content_version


@pytest.mark.parametrize("size", [0, 1, 2047, 2048, 5000, HELD_HASH_BYTES, HELD_HASH_BYTES + 1])
def test_version_is_the_blake2b_of_the_whole_content(size: int) -> None:
    data = (bytes(range(251)) * (size // 251 + 1))[:size]
    expected = hashlib.blake2b(data, digest_size=8).hexdigest()
    assert content_version("file", data) == f"file:{expected}"


def test_versions_differ_by_kind_and_by_content() -> None:
    assert content_version("file", b"") != content_version("directory", b"")
    assert content_version("file", b"a" * 4096) != content_version("file", b"a" * 4095 + b"b")
