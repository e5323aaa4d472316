"""A worker killed at a subagent's merge, its thread checkpointed in PostgreSQL.

`tests/e2e/test_branch_crashes.py` with the checkpointer a `PostgresSaver` and the files
in a `StoreBackend` on a `PostgresStore`, both on the real server the fixture starts:
the process that resumes the thread merges what the killed one did not, once; and a
subagent killed while at work keeps, in PostgreSQL, what it wrote before the kill.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.e2e.test_branch_crashes import assert_both_merged_once, killed_and_resumed
from tests.e2e.test_branches import SOURCE

if TYPE_CHECKING:
    from pathlib import Path

    from tests.integration.postgres import PostgresServer

pytest.importorskip("deepagents")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]


@pytest.mark.parametrize("kill", ["before-1", "after-1", "after-2"])
def test_a_merge_cut_by_a_kill_is_finished_by_the_resumed_thread(
    postgres: PostgresServer, tmp_path: Path, kill: str
) -> None:
    database = postgres.create_database(f"crash_{kill.replace('-', '_')}")
    assert_both_merged_once(killed_and_resumed(database, "store", tmp_path, kill))


def test_a_subagent_killed_while_at_work_keeps_the_edits_it_made_before(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    database = postgres.create_database("crash_mid")
    report = killed_and_resumed(database, "store", tmp_path, "mid")
    assert report["text"] == SOURCE.replace("return 1", "return 10")
    status, text = report["tasks"]["t-a"]
    assert status == "success", text
