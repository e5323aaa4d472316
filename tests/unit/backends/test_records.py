"""Records: one codec for state, store and history; one content hash, however fed."""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

import pytest
from langgraph.store.memory import InMemoryStore

from langchain_fstools.backends.state import StateBackend, file_record, record_bytes
from langchain_fstools.backends.store import StoreBackend, file_value
from langchain_fstools.backends.store import record_bytes as store_record_bytes
from langchain_fstools.core.records import (
    DIRECTORY_VERSION,
    HELD_HASH_BYTES,
    content_version,
    decode_content,
    encode_content,
)


@pytest.mark.parametrize("size", [0, 1, 2047, 2048, 5000, HELD_HASH_BYTES, HELD_HASH_BYTES + 1])
def test_version_is_the_blake2b_of_the_whole_content(size: int) -> None:
    data = (bytes(range(251)) * (size // 251 + 1))[:size]
    expected = hashlib.blake2b(data, digest_size=8).hexdigest()
    assert content_version("file", data) == f"file:{expected}"


def test_versions_differ_by_kind_and_by_content() -> None:
    assert content_version("file", b"") != content_version("directory", b"")
    assert content_version("file", b"a" * 4096) != content_version("file", b"a" * 4095 + b"b")


@pytest.mark.parametrize(
    "data",
    [b"", b"plain text\n", "h\u00e9llo \u2603".encode(), b"nul \x00 inside", b"\xff\xfe\x00binary"],
)
def test_state_store_and_history_keep_bytes_with_one_codec(data: bytes) -> None:
    state = file_record(data)
    store = file_value(data)
    assert (state["content"], state["encoding"]) == (store["content"], store["encoding"])
    assert state["version"] == store["version"]
    assert record_bytes(state) == data == store_record_bytes(store)
    assert decode_content(*encode_content(data)) == data
    assert ("\x00" in state["content"]) is False  # jsonb refuses NUL: such text goes base64


def test_a_directory_has_one_version_on_every_record_backend() -> None:
    state = StateBackend().bind(SimpleNamespace(state={"files": {}}))
    state.mkdir("/d")
    store = StoreBackend(InMemoryStore())
    store.mkdir("/d")
    assert state.stat("/d").version == store.stat("/d").version == DIRECTORY_VERSION
