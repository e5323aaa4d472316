"""`ThreadSandboxes`: a thread's sandbox found again, sync and async by one body."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest
from langgraph.store.memory import InMemoryStore

from langchain_fstools.backends.sandbox.threads import NAMESPACE, ThreadSandboxes


@dataclass
class _Box:
    id: str


class _Provider:
    """Makes boxes `s1`, `s2`, ...; attaches only those it made and did not end."""

    def __init__(self) -> None:
        self.made: dict[str, _Box] = {}

    def create(self) -> _Box:
        box = _Box(f"s{len(self.made) + 1}")
        self.made[box.id] = box
        return box

    def attach(self, sandbox_id: str) -> _Box:
        if sandbox_id not in self.made:
            raise LookupError(f"no sandbox {sandbox_id}")
        return self.made[sandbox_id]


@pytest.fixture(params=["sync", "async"])
def get_or_create(request: pytest.FixtureRequest) -> tuple[str, InMemoryStore, _Provider]:
    return request.param, InMemoryStore(), _Provider()


def _ask(how: str, sandboxes: ThreadSandboxes, thread: str) -> _Box:
    if how == "sync":
        return sandboxes.get_or_create(thread)  # type: ignore[return-value]
    return asyncio.run(sandboxes.aget_or_create(thread))  # type: ignore[return-value]


def test_a_thread_gets_one_sandbox_and_finds_it_again(
    get_or_create: tuple[str, InMemoryStore, _Provider],
) -> None:
    how, store, provider = get_or_create
    sandboxes = ThreadSandboxes(create=provider.create, attach=provider.attach, store=store)
    first = _ask(how, sandboxes, "t1")
    assert _ask(how, sandboxes, "t1") is first
    assert _ask(how, sandboxes, "t2").id == "s2"
    item = store.get(NAMESPACE, "t1")
    assert item is not None
    assert item.value == {"sandbox_id": "s1"}


def test_a_sandbox_that_is_gone_is_replaced_and_its_id_recorded(
    get_or_create: tuple[str, InMemoryStore, _Provider],
) -> None:
    how, store, provider = get_or_create
    sandboxes = ThreadSandboxes(create=provider.create, attach=provider.attach, store=store)
    store.put(NAMESPACE, "t1", {"sandbox_id": "ended-long-ago"})
    box = _ask(how, sandboxes, "t1")
    assert box.id == "s1"
    item = store.get(NAMESPACE, "t1")
    assert item is not None
    assert item.value == {"sandbox_id": "s1"}
