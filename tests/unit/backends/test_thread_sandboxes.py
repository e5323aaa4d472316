"""`ThreadSandboxes` without a provider: ids kept per thread in the store given, a
sandbox that cannot be attached replaced, bad configuration refused at construction."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from langgraph.store.memory import InMemoryStore

from langchain_fstools.backends.sandbox import ThreadSandboxes


@dataclass
class Box:
    id: str


class Provider:
    """Makes numbered boxes; attaches only the ones still alive."""

    def __init__(self) -> None:
        self.alive: dict[str, Box] = {}
        self.made = 0

    def create(self) -> Box:
        self.made += 1
        box = Box(f"box-{self.made}")
        self.alive[box.id] = box
        return box

    def attach(self, sandbox_id: str) -> Box:
        if sandbox_id not in self.alive:
            raise ValueError(f"No sandbox {sandbox_id!r}")
        return self.alive[sandbox_id]


def test_a_thread_keeps_its_sandbox_in_the_store_for_any_worker() -> None:
    store, provider = InMemoryStore(), Provider()
    first = ThreadSandboxes(create=provider.create, attach=provider.attach, store=store)
    assert first.get_or_create("t").id == "box-1"
    assert first.get_or_create("u").id == "box-2"
    other_worker = ThreadSandboxes(create=provider.create, attach=provider.attach, store=store)
    assert other_worker.get_or_create("t").id == "box-1"
    assert store.get(("fstools", "sandboxes"), "t").value == {"sandbox_id": "box-1"}  # type: ignore[union-attr]


def test_a_sandbox_that_ended_is_replaced_and_the_new_id_recorded() -> None:
    store, provider = InMemoryStore(), Provider()
    sandboxes = ThreadSandboxes(
        create=provider.create, attach=provider.attach, store=store, namespace=("s",)
    )
    sandboxes.get_or_create("t")
    del provider.alive["box-1"]
    assert sandboxes.get_or_create("t").id == "box-2"
    assert store.get(("s",), "t").value == {"sandbox_id": "box-2"}  # type: ignore[union-attr]


def test_an_empty_namespace_is_refused_at_construction() -> None:
    provider = Provider()
    with pytest.raises(ValueError, match="namespace"):
        ThreadSandboxes(
            create=provider.create, attach=provider.attach, store=InMemoryStore(), namespace=()
        )
