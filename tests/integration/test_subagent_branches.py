"""Parallel deepagents subagents on branches, over real servers: a LangGraph store on
PostgreSQL and an object store on SeaweedFS (both started by the fixtures).

The scenarios of `tests/e2e/test_branches.py`: two `task` calls in one turn, each
subagent editing /m.py on its own branch, merged when it returns.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any

import pytest
from langgraph.store.postgres import PostgresStore
from obstore.store import S3Store

from langchain_fstools import FilesystemMiddleware, ObjectStoreBackend, StoreBackend
from tests.e2e.test_branches import SOURCE, build, editing, results

if TYPE_CHECKING:
    from collections.abc import Iterator

    from langchain_fstools.backends.protocol import Backend
    from tests.integration.seaweedfs import SeaweedServer

deepagents = pytest.importorskip("deepagents")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

START: dict[str, Any] = {"messages": [{"role": "user", "content": "Edit /m.py."}]}


@pytest.fixture(params=["postgres", "seaweedfs"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[Backend, Any]]:
    """A backend on a real server holding /m.py, and the store the agent is given."""
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
        with PostgresStore.from_conn_string(url) as store:
            store.setup()
            backend: Backend = StoreBackend(store, namespace=("b", uuid.uuid4().hex))
            backend.write_bytes("/m.py", SOURCE.encode())
            yield backend, store
        return
    seaweed: SeaweedServer = request.getfixturevalue("seaweedfs")
    s3 = S3Store(seaweed.bucket("fstools"), **seaweed.store_options())  # type: ignore[arg-type]
    backend = ObjectStoreBackend(s3, prefix=f"b/{uuid.uuid4().hex}")
    backend.write_bytes("/m.py", SOURCE.encode())
    yield backend, None


@pytest.mark.parametrize("run", ["sync", "async"])
def test_two_subagents_editing_different_functions_both_land(
    served: tuple[Backend, Any], run: str
) -> None:
    backend, store = served
    files = FilesystemMiddleware(backend=backend, branches=True)
    agent = build(
        backend,
        editing("a", files, "return 1", "return 10"),
        editing("b", files, "return 2", "return 20"),
        files=files,
        store=store,
    )
    state = agent.invoke(START) if run == "sync" else asyncio.run(agent.ainvoke(START))
    found = results(state)
    assert all(found[f"t-{n}"].status == "success" for n in ("a", "b")), found
    expected = SOURCE.replace("return 1", "return 10").replace("return 2", "return 20")
    assert backend.read_bytes("/m.py").decode() == expected


def test_the_same_line_changed_differently_is_a_conflict(served: tuple[Backend, Any]) -> None:
    backend, store = served
    files = FilesystemMiddleware(backend=backend, branches=True)
    agent = build(
        backend,
        editing("a", files, "return 1", "return 10"),
        editing("b", files, "return 1", "return 11"),
        files=files,
        store=store,
    )
    found = results(agent.invoke(START))
    assert sorted(found[f"t-{n}"].status for n in ("a", "b")) == ["error", "success"]
    winner = "10" if found["t-a"].status == "success" else "11"
    assert backend.read_bytes("/m.py").decode() == SOURCE.replace("return 1", f"return {winner}")
