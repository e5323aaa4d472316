"""ObjectStoreBackend on a real distributed object store (SeaweedFS, started by the fixtures).

The backend contract, two writers racing on one object, ranged reads of a large object,
a directory of 10,000 objects, grep over 2,000 objects, a patch whose third write is
refused, an agent run through `create_agent`, all over S3 on loopback.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from obstore.store import S3Store

from langchain_fstools import ObjectStoreBackend
from langchain_fstools.backends import ABSENT
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.errors import VersionConflict
from tests.integration.seaweedfs import SeaweedServer
from tests.unit.backends.conformance import BackendConformance, drive  # noqa: F401

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]


@pytest.fixture(scope="session")
def s3(seaweedfs: SeaweedServer) -> S3Store:
    """The bucket the tests share; each test keeps to a prefix of its own."""
    return S3Store(seaweedfs.bucket("fstools"), **seaweedfs.store_options())  # type: ignore[arg-type]


def fresh(store: S3Store) -> ObjectStoreBackend:
    return ObjectStoreBackend(store, prefix=f"t/{uuid.uuid4().hex}")


@pytest.fixture
def backend(s3: S3Store) -> Backend:
    return fresh(s3)


class TestObjectStoreOnSeaweedFS(BackendConformance):
    pass


def test_seaweedfs_checks_conditional_writes_itself(s3: S3Store) -> None:
    assert fresh(s3).conditional_writes == "full"


async def test_two_writers_racing_on_one_object_one_wins(s3: S3Store) -> None:
    replica_a, replica_b = fresh(s3), fresh(s3)
    replica_b.prefix = replica_a.prefix  # two processes' backends on one workspace
    for round_ in range(10):
        read = await replica_a.awrite_bytes("/shared.txt", b"base %d" % round_)
        outcomes = await asyncio.gather(
            replica_a.awrite_bytes("/shared.txt", b"from a", expected_version=read.version),
            replica_b.awrite_bytes("/shared.txt", b"from b", expected_version=read.version),
            return_exceptions=True,
        )
        won = [o for o in outcomes if not isinstance(o, BaseException)]
        lost = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(won) == 1, outcomes
        assert len(lost) == 1
        assert isinstance(lost[0], VersionConflict)
        assert lost[0].expected == read.version
        content = await replica_b.aread_bytes("/shared.txt")
        assert content in {b"from a", b"from b"}
        assert (await replica_b.astat("/shared.txt")).version == won[0].version


def test_creates_racing_on_one_name_one_wins(s3: S3Store) -> None:
    backend = fresh(s3)
    backend.write_bytes("/new.txt", b"first", expected_version=ABSENT)
    with pytest.raises(VersionConflict):
        backend.write_bytes("/new.txt", b"second", expected_version=ABSENT)
    assert backend.read_bytes("/new.txt") == b"first"
