"""Compare-and-swap writes for LangGraph's PostgreSQL stores.

`BaseStore` has no conditional put, so `StoreBackend` writes a file whose version it
checked with one SQL statement on the store's own table and connection:

    expected absent:   INSERT ... ON CONFLICT (prefix, key) DO NOTHING
    expected version:  UPDATE store SET value = ... WHERE prefix = ... AND key = ...
                         AND value->>'version' = <expected>

PostgreSQL takes the row lock and re-checks the condition after any concurrent update,
so of two writers racing on one file exactly one statement changes a row; the other
changes none and the backend reports `VersionConflict`. The row is written as
`PostgresStore.put` writes it (same columns; no TTL, no embedding). This relies on the
`store` table of langgraph-checkpoint-postgres, which `PostgresStore.setup()` creates.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from langgraph.store.postgres import AsyncPostgresStore, PostgresStore
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool, ConnectionPool

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from langgraph.store.base import BaseStore
    from psycopg import AsyncConnection, Connection

    from langchain_fstools.backends.store_cas import ConditionalPut, ConditionalWrites

INSERT_IF_ABSENT = """
INSERT INTO store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes)
VALUES (%s, %s, %s, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, NULL, NULL)
ON CONFLICT (prefix, key) DO NOTHING
"""

UPDATE_IF_VERSION = """
UPDATE store
SET value = %s, updated_at = CURRENT_TIMESTAMP, expires_at = NULL, ttl_minutes = NULL
WHERE prefix = %s AND key = %s AND value->>'version' = %s
"""


def _statement(request: ConditionalPut) -> tuple[str, tuple[Any, ...]]:
    prefix = ".".join(request.namespace)
    if request.expected is None:
        return INSERT_IF_ABSENT, (prefix, request.key, Jsonb(request.value))
    return UPDATE_IF_VERSION, (Jsonb(request.value), prefix, request.key, request.expected)


class PostgresWrites:
    """Conditional puts on a `PostgresStore` (a connection or a pool)."""

    def __init__(self, store: PostgresStore) -> None:
        """Write through `store`'s connection."""
        self.store = store

    @contextlib.contextmanager
    def _connection(self) -> Iterator[Connection[Any]]:
        conn = self.store.conn
        if isinstance(conn, ConnectionPool):
            with conn.connection() as pooled:
                yield pooled
        else:
            with self.store.lock:  # one connection: one transaction at a time
                yield conn

    def put(self, request: ConditionalPut) -> bool:
        """Put if the version matches, in one statement; True when a row changed."""
        query, params = _statement(request)
        with self._connection() as conn, conn.transaction(), conn.cursor() as cursor:
            cursor.execute(query, params)
            return cursor.rowcount == 1

    async def aput(self, request: ConditionalPut) -> bool:
        """Async `put`, in a worker thread (the store's sync connection)."""
        return await asyncio.to_thread(self.put, request)


class AsyncPostgresWrites:
    """Conditional puts on an `AsyncPostgresStore` (a connection or a pool)."""

    def __init__(self, store: AsyncPostgresStore) -> None:
        """Write through `store`'s connection, on its event loop."""
        self.store = store

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        conn = self.store.conn
        if isinstance(conn, AsyncConnectionPool):
            async with conn.connection() as pooled:
                yield pooled
        else:
            async with self.store.lock:
                yield conn

    async def aput(self, request: ConditionalPut) -> bool:
        """Put if the version matches, in one statement; True when a row changed."""
        query, params = _statement(request)
        async with self._connection() as conn, conn.transaction(), conn.cursor() as cursor:
            await cursor.execute(query, params)
            return cursor.rowcount == 1

    def put(self, request: ConditionalPut) -> bool:
        """Sync `put`, run on the store's event loop (as the store's own sync calls are)."""
        return asyncio.run_coroutine_threadsafe(self.aput(request), self.store.loop).result()


def postgres_writes(store: BaseStore) -> ConditionalWrites | None:
    """The conditional writes for `store`, or None if it is not a PostgreSQL store."""
    if isinstance(store, PostgresStore):
        return PostgresWrites(store)
    if isinstance(store, AsyncPostgresStore):
        return AsyncPostgresWrites(store)
    return None


__all__ = ["AsyncPostgresWrites", "PostgresWrites", "postgres_writes"]
