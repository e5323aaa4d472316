"""StoreBackend on a real PostgreSQL (started by the fixtures): the backend contract,
racing writers, a server restart, and the async store."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from langgraph.store.postgres import AsyncPostgresStore, PostgresStore
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from langchain_fstools import CompositeBackend, LocalBackend, StateBackend, StoreBackend
from langchain_fstools.backends import ABSENT
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.errors import StoreUnavailable, VersionConflict
from tests.integration.postgres import PostgresServer
from tests.unit.backends.conformance import BackendConformance, drive  # noqa: F401

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

CONNECTION = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}


def pool(url: str, *, check: bool = True) -> ConnectionPool:
    return ConnectionPool(
        url,
        min_size=1,
        max_size=4,
        kwargs=CONNECTION,
        check=ConnectionPool.check_connection if check else None,
        open=True,
    )


@pytest.fixture(scope="session")
def pg_store(postgres_url: str) -> Iterator[PostgresStore]:
    with pool(postgres_url) as connections:
        store = PostgresStore(connections)
        store.setup()
        yield store


def fresh(store: PostgresStore | AsyncPostgresStore) -> StoreBackend:
    """A backend in a namespace of its own: tests share the database, not their files."""
    return StoreBackend(store, namespace=("t", uuid.uuid4().hex))


@pytest.fixture
def backend(pg_store: PostgresStore) -> Backend:
    return fresh(pg_store).bind(None)


class TestStoreBackendOnPostgres(BackendConformance):
    pass


def test_files_are_rows_of_the_store_table(pg_store: PostgresStore) -> None:
    backend = fresh(pg_store)
    backend.write_bytes("/notes/a.b.txt", b"text")
    backend.write_bytes("/notes/blob", b"\x00\xff")
    (namespace,) = {backend.namespace}
    item = pg_store.get((*namespace, "notes", "%entries"), "a.b.txt")
    assert item is not None
    assert item.value["content"] == "text"
    assert item.value["encoding"] == "utf-8"
    blob = pg_store.get((*namespace, "notes", "%entries"), "blob")
    assert blob is not None
    assert blob.value["encoding"] == "base64"


def race(shared: StoreBackend, path: str, version: str) -> dict[str, str | VersionConflict]:
    """Two threads, each with its own bound backend, replace `path` from `version` at once."""
    barrier = threading.Barrier(2)
    outcomes: dict[str, str | VersionConflict] = {}

    def writer(name: str) -> None:
        backend = shared.bind(None)
        barrier.wait()
        try:
            outcomes[name] = backend.write_bytes(
                path, name.encode(), expected_version=version
            ).version
        except VersionConflict as conflict:
            outcomes[name] = conflict

    threads = [threading.Thread(target=writer, args=(name,)) for name in ("one", "two")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def test_racing_writers_one_wins_the_other_conflicts(pg_store: PostgresStore) -> None:
    """Two writers that read the same version race to replace it, 25 times over."""
    shared = fresh(pg_store)
    for round_ in range(25):
        path = f"/race/{round_}.txt"
        base = shared.write_bytes(path, b"base")
        outcomes = race(shared, path, base.version)
        winners = [name for name, outcome in outcomes.items() if isinstance(outcome, str)]
        losers = [o for o in outcomes.values() if isinstance(o, VersionConflict)]
        assert len(winners) == 1, outcomes
        assert len(losers) == 1, outcomes
        assert losers[0].expected == base.version
        assert shared.read_bytes(path) == winners[0].encode()


def test_racing_creators_one_wins(pg_store: PostgresStore) -> None:
    shared = fresh(pg_store)
    outcomes: list[object] = []
    barrier = threading.Barrier(2)

    def creator(data: bytes) -> None:
        barrier.wait()
        try:
            outcomes.append(
                shared.bind(None).write_bytes("/new.txt", data, expected_version=ABSENT)
            )
        except VersionConflict as conflict:
            outcomes.append(conflict)

    threads = [threading.Thread(target=creator, args=(d,)) for d in (b"1", b"2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(type(o).__name__ for o in outcomes) == ["FileInfo", "VersionConflict"]


def test_survives_a_server_restart(postgres: PostgresServer, postgres_url: str) -> None:
    """Without a checking pool, each stale pooled connection costs one call a clear
    StoreUnavailable (the pool then drops it); after that the backend works again."""
    with pool(postgres_url, check=False) as connections:
        store = PostgresStore(connections)
        store.setup()  # whatever ran before it in this worker
        backend = fresh(store)
        backend.write_bytes("/kept.txt", b"before")
        postgres.restart()
        postgres.wait_ready()
        failures: list[StoreUnavailable] = []
        for _ in range(connections.max_size + 1):
            try:
                content = backend.read_bytes("/kept.txt")
            except StoreUnavailable as error:
                failures.append(error)
            else:
                break
        assert content == b"before"
        assert len(failures) <= connections.max_size
        assert {f.reason for f in failures} <= {"OperationalError"}
        version = backend.stat("/kept.txt").version
        backend.write_bytes("/kept.txt", b"after", expected_version=version)
        assert backend.read_bytes("/kept.txt") == b"after"


def test_a_checking_pool_recovers_without_an_error(
    postgres: PostgresServer, postgres_url: str
) -> None:
    with pool(postgres_url, check=True) as connections:
        store = PostgresStore(connections)
        store.setup()  # whatever ran before it in this worker
        backend = fresh(store)
        backend.write_bytes("/kept.txt", b"before")
        postgres.restart()
        postgres.wait_ready()
        assert backend.read_bytes("/kept.txt") == b"before"


async def test_async_store_real_async_and_racing(postgres_url: str) -> None:
    async with AsyncPostgresStore.from_conn_string(
        postgres_url, pool_config={"min_size": 2, "max_size": 4}
    ) as store:
        await store.setup()
        backend = fresh(store).bind(None)
        base = await backend.awrite_bytes("/a/f.txt", b"base")
        assert [e.path for e in await backend.alist_dir("/a")] == ["/a/f.txt"]
        results = await asyncio.gather(
            backend.awrite_bytes("/a/f.txt", b"one", expected_version=base.version),
            backend.awrite_bytes("/a/f.txt", b"two", expected_version=base.version),
            return_exceptions=True,
        )
        conflicts = [r for r in results if isinstance(r, VersionConflict)]
        assert len(conflicts) == 1, results
        won = b"one" if not isinstance(results[0], VersionConflict) else b"two"
        assert await backend.aread_bytes("/a/f.txt") == won


@pytest.fixture
def composite(pg_store: PostgresStore, tmp_path: Path) -> Backend:
    """PostgreSQL as the default, local disk at /m/, graph state nested below a store mount."""
    return CompositeBackend(
        fresh(pg_store),
        {
            "/m/": LocalBackend(tmp_path),
            "/mnt/store/": fresh(pg_store),
            "/mnt/store/state/": StateBackend(),
        },
    ).bind(SimpleNamespace(state={"files": {}}, store=None))


class TestCompositeOnPostgres(BackendConformance):
    @pytest.fixture
    def backend(self, composite: Backend) -> Backend:
        return composite
