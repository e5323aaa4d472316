"""Servers the integration tests need, started here: a throwaway PostgreSQL 15.

If the server cannot start, the tests that need it fail (they are never skipped).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from tests.integration.postgres import PostgresServer


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server on 127.0.0.1 for the whole session, removed at the end."""
    server = PostgresServer()
    try:
        server.init()
        server.start()
        server.wait_ready()
        yield server
    finally:
        with contextlib.suppress(RuntimeError):  # never started, or already stopped
            server.stop()
        server.remove()


@pytest.fixture(scope="session")
def postgres_url(postgres: PostgresServer) -> str:
    """A database for the session's tests (each test keeps to its own namespace)."""
    return postgres.create_database("fstools")
