"""Servers the integration tests need, started here: a throwaway PostgreSQL 15 and a
SeaweedFS cluster (a distributed object store with an S3 gateway).

If the server cannot start, the tests that need it fail (they are never skipped).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from tests.integration.postgres import PostgresServer
from tests.integration.seaweedfs import SeaweedServer


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


@pytest.fixture(scope="session")
def seaweedfs() -> Iterator[SeaweedServer]:
    """A SeaweedFS cluster (master, volume, filer, S3 gateway) on 127.0.0.1 for the session."""
    server = SeaweedServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()
        server.remove()
