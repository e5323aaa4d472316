"""Branches over real servers: `StoreBackend` on PostgreSQL, `ObjectStoreBackend` on
SeaweedFS (both started by the fixtures). Two branches of one workspace, edited through
the file tools, merged back: different functions of one file, the same line, and a file
one branch writes anew while the other deletes it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.store.postgres import PostgresStore
from obstore.store import S3Store
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from langchain_fstools import FileToolkit, ObjectStoreBackend, StoreBackend
from langchain_fstools.backends.branch import BranchBackend, MergeResult
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.core import calls
from langchain_fstools.formats.merge import Hunk
from tests.integration.seaweedfs import SeaweedServer

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

SOURCE = b"def a():\n    return 1\n\n\ndef b():\n    return 2\n"


@pytest.fixture(scope="module")
def pg_store(postgres_url: str) -> Iterator[PostgresStore]:
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    with ConnectionPool(postgres_url, min_size=1, max_size=4, kwargs=kwargs, open=True) as pool:
        store = PostgresStore(pool)
        store.setup()
        yield store


@pytest.fixture(params=["postgres", "seaweedfs"])
def base(request: pytest.FixtureRequest) -> Backend:
    """An empty workspace of its own on the server, seeded with `/m.py` and `/old.txt`."""
    backend: Backend
    if request.param == "postgres":
        store = request.getfixturevalue("pg_store")
        backend = StoreBackend(store, namespace=("t", uuid.uuid4().hex)).bind(None)
    else:
        server: SeaweedServer = request.getfixturevalue("seaweedfs")
        s3 = S3Store(server.bucket("fstools"), **server.store_options())  # type: ignore[arg-type]
        backend = ObjectStoreBackend(s3, prefix=f"t/{uuid.uuid4().hex}")
    calls.run(calls.write_bytes("/m.py", SOURCE), backend)
    calls.run(calls.write_bytes("/old.txt", b"old\n"), backend)
    return backend


class Agent:
    """An agent's file tools over a branch of its own (read tracking kept across calls)."""

    def __init__(self, base: Backend) -> None:
        self.branch = BranchBackend(base)
        self.tools = {tool.name: tool for tool in FileToolkit(self.branch).get_tools()}

    def call(self, name: str, **args: Any) -> str:
        """Call a file tool; its answer, which must be a success."""
        call = {"type": "tool_call", "name": name, "id": "1", "args": args}
        message = self.tools[name].invoke(call)
        assert message.status == "success", message.content
        return str(message.content)

    def edit(self, old: str, new: str) -> None:
        self.call("read_file", file_path="/m.py")
        self.call("edit_file", file_path="/m.py", old_string=old, new_string=new)


def in_base(base: Backend, path: str) -> bytes | None:
    if not calls.run(calls.exists(path), base):
        return None
    return calls.run(calls.read_bytes(path), base)


def test_edits_to_different_functions_in_two_branches_both_merge(base: Backend) -> None:
    first, second = Agent(base), Agent(base)
    first.edit("return 1", "return 10")
    second.edit("return 2", "return 20")
    assert in_base(base, "/m.py") == SOURCE
    assert "/m.py" in first.call("grep", pattern="return 10")
    assert "/m.py" not in second.call("grep", pattern="return 10")

    assert first.branch.merge() == MergeResult(merged=("/m.py",))
    assert asyncio.run(second.branch.amerge()) == MergeResult(merged=("/m.py",))

    assert in_base(base, "/m.py") == b"def a():\n    return 10\n\n\ndef b():\n    return 20\n"


def test_the_same_line_changed_in_two_branches_conflicts_and_commits_nothing(
    base: Backend,
) -> None:
    first, second = Agent(base), Agent(base)
    first.edit("return 1", "return 10")
    second.edit("return 1", "return 11")
    second.call("write_file", file_path="/also.txt", content="second\n")
    assert first.branch.merge().clean

    result = second.branch.merge()

    assert result.merged == ()
    assert [(c.path, c.hunks) for c in result.conflicts] == [
        ("/m.py", (Hunk(2, ("    return 1\n",), ("    return 10\n",), ("    return 11\n",)),))
    ]
    assert in_base(base, "/m.py") == SOURCE.replace(b"return 1", b"return 10")
    assert in_base(base, "/also.txt") is None
    assert second.branch.changed == ("/also.txt", "/m.py")


@pytest.mark.parametrize("deleter_first", [True, False], ids=["delete-first", "write-first"])
def test_a_file_written_anew_in_one_branch_and_deleted_in_another_conflicts_second(
    base: Backend, *, deleter_first: bool
) -> None:
    deleting, writing = Agent(base), Agent(base)
    calls.run(calls.delete("/old.txt"), deleting.branch)
    writing.call("read_file", file_path="/old.txt")
    writing.call("write_file", file_path="/old.txt", content="anew\n")
    first, second = (deleting, writing) if deleter_first else (writing, deleting)

    assert first.branch.merge().clean
    result = second.branch.merge()

    assert [(c.path, c.hunks) for c in result.conflicts] == [("/old.txt", ())]
    assert in_base(base, "/old.txt") == (None if deleter_first else b"anew\n")
