"""An object store proves its compare-and-swap at the backend's first write: a store
that accepts a wrong `If-Match` or a create of an existing key (as s3rver does) gets
no write at all, with a sentence naming it and the option that accepts the risk."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
from obstore.store import MemoryStore

from langchain_fstools import FileToolkit, ObjectStoreBackend
from langchain_fstools.backends import ABSENT
from langchain_fstools.backends.objectstore import requests
from langchain_fstools.backends.objectstore.backend import PROBE_ETAG
from langchain_fstools.errors import ConditionalWritesIgnored, VersionConflict


@pytest.fixture
def unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every store accepts conditional PUTs without checking them, as s3rver 3.7.1 does."""
    sync_call, async_call = requests._call, requests._acall

    def unconditional(request: requests.Request) -> requests.Request:
        if isinstance(request, requests.Put):
            return replace(request, mode="overwrite")
        return request

    def call(store: Any, request: requests.Request) -> Any:
        return sync_call(store, unconditional(request))

    async def acall(store: Any, request: requests.Request) -> Any:
        return await async_call(store, unconditional(request))

    monkeypatch.setattr(requests, "_call", call)
    monkeypatch.setattr(requests, "_acall", acall)


@pytest.fixture
def puts(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The mode of every PUT the backend sends, refused ones too."""
    sent: list[Any] = []
    sync_call, async_call = requests._call, requests._acall

    def call(store: Any, request: requests.Request) -> Any:
        if isinstance(request, requests.Put):
            sent.append(request.mode)
        return sync_call(store, request)

    async def acall(store: Any, request: requests.Request) -> Any:
        if isinstance(request, requests.Put):
            sent.append(request.mode)
        return await async_call(store, request)

    monkeypatch.setattr(requests, "_call", call)
    monkeypatch.setattr(requests, "_acall", acall)
    return sent


@pytest.mark.usefixtures("unchecked")
def test_a_store_that_ignores_conditions_gets_no_write() -> None:
    backend = ObjectStoreBackend(MemoryStore(), prefix="team")
    with pytest.raises(ConditionalWritesIgnored) as first:
        backend.write_bytes("/a.txt", b"x", expected_version=ABSENT)
    assert first.value.ignored == ("If-Match", "If-None-Match")
    assert 'conditional_writes="none"' in str(first.value)
    assert "unsafe with concurrent writers" in str(first.value)
    assert str(first.value).startswith("<obstore.store.MemoryStore object")
    assert not backend.exists("/a.txt")
    with pytest.raises(ConditionalWritesIgnored):  # every later write, without a new probe
        backend.bind(None).write_bytes("/b.txt", b"y")
    with pytest.raises(ConditionalWritesIgnored):
        asyncio.run(backend.awrite_bytes("/c.txt", b"z"))
    write = {t.name: t for t in FileToolkit(backend).get_tools()}["write_file"]
    assert write.invoke({"file_path": "/d.txt", "content": "x"}) == (
        "Error: the file store does not check conditional writes, so this write could"
        " silently overwrite someone else's; writes are refused until the store is"
        " configured. Tell the user (retrying will not help)."
    )


@pytest.mark.usefixtures("unchecked")
def test_conditional_writes_none_accepts_the_risk_and_checks_with_a_head() -> None:
    backend = ObjectStoreBackend(MemoryStore(), conditional_writes="none")
    first = backend.write_bytes("/a.txt", b"one", expected_version=ABSENT)
    backend.write_bytes("/a.txt", b"two", expected_version=first.version)
    with pytest.raises(VersionConflict):
        backend.write_bytes("/a.txt", b"three", expected_version=first.version)
    assert backend.read_bytes("/a.txt") == b"two"


def test_a_store_that_checks_proves_it_once_and_construction_sends_nothing(
    puts: list[Any],
) -> None:
    backend = ObjectStoreBackend(MemoryStore())
    assert puts == []
    backend.write_bytes("/a.txt", b"one")
    assert puts == ["overwrite", {"e_tag": PROBE_ETAG}, "create", "overwrite"]
    puts.clear()
    backend.bind(None).write_bytes("/b.txt", b"two")
    asyncio.run(backend.awrite_bytes("/c.txt", b"three"))
    assert puts == ["overwrite", "overwrite"]  # proven: the views share the proof
    assert [e.name for e in backend.list_dir("/")] == ["a.txt", "b.txt", "c.txt"]


def test_a_claim_given_is_taken_as_given(puts: list[Any]) -> None:
    ObjectStoreBackend(MemoryStore(), conditional_writes="full").write_bytes("/a.txt", b"x")
    assert puts == ["overwrite"]
    with pytest.raises(ValueError, match="conditional_writes must be"):
        ObjectStoreBackend(MemoryStore(), conditional_writes="some")  # type: ignore[arg-type]
