"""An approval asked in one process and resumed in another, checkpointed in PostgreSQL.

The same scenarios as `tests/e2e/test_approvals_across_processes.py` (there on SQLite):
what the person was shown is applied exactly, or the call fails as stale and the file
stays as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.e2e.approval_process import EXPECTED, outcome
from tests.e2e.test_approvals_across_processes import both_processes

if TYPE_CHECKING:
    from pathlib import Path

    from tests.integration.postgres import PostgresServer

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]


def test_a_resume_in_another_process_applies_exactly_or_is_stale(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    _, results = both_processes(root, postgres.create_database("approvals"))
    assert outcome(root, results) == EXPECTED
