"""Over SSH no command can be kept from a path: a rule that keeps reads from one asks first.

SSH commands run on the remote host as the login user, with no sandbox to mask a path
in (`Backend.hides_from_commands` is False), so while a rule denies or asks before
reading a path, every command asks a person before it runs (an allow rule for the
command included), and `bypass`, which asks no one, refuses it while a rule denies
reading. The control: without such a rule the allowed command runs without asking.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_fstools.backends.ssh import SSHBackend
from langchain_fstools.permissions.rules import Permission
from tests.e2e.agent_runs import run_command

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

ALLOW_CAT = Permission(operations=["execute"], commands=["cat"])


@pytest.fixture
def secret(ssh_root: Path) -> Path:
    (ssh_root / "secrets").mkdir()
    (ssh_root / "secrets" / "key").write_text("SECRET-KEY\n")
    (ssh_root / "notes.txt").write_text("notes\n")
    return ssh_root / "secrets" / "key"


def test_ssh_commands_cannot_be_kept_from_a_path(ssh_backend: SSHBackend) -> None:
    assert not ssh_backend.hides_from_commands()


@pytest.mark.usefixtures("secret")
@pytest.mark.parametrize("action", ["deny", "ask"])
@pytest.mark.parametrize("mode", ["default", "accept_edits"])
def test_an_allowed_ssh_command_asks_first_while_a_rule_keeps_reads_from_a_path(
    ssh_backend: SSHBackend, mode: str, action: str
) -> None:
    reads = Permission(operations=["read"], paths=["/secrets"], action=action)  # type: ignore[arg-type]

    outcome = run_command(ssh_backend, "cat secrets/key", mode=mode, permissions=[reads, ALLOW_CAT])

    assert outcome.asked
    assert "SECRET-KEY" not in outcome.text


@pytest.mark.usefixtures("secret")
def test_in_bypass_mode_an_ssh_command_is_refused_while_a_rule_denies_reads(
    ssh_backend: SSHBackend,
) -> None:
    reads = Permission(operations=["read"], paths=["/secrets"], action="deny")

    outcome = run_command(ssh_backend, "cat secrets/key", mode="bypass", permissions=[reads])

    assert outcome.message is not None
    assert outcome.message.status == "error"
    assert "SECRET-KEY" not in outcome.text
    assert "permission rule 1 (it denies reading /secrets" in outcome.text


@pytest.mark.usefixtures("secret")
def test_the_control_without_such_a_rule_the_allowed_ssh_command_runs(
    ssh_backend: SSHBackend,
) -> None:
    writes = Permission(operations=["write"], paths=["/secrets"], action="deny")

    outcome = run_command(
        ssh_backend, "cat notes.txt", mode="default", permissions=[writes, ALLOW_CAT]
    )

    assert not outcome.asked
    assert "notes" in outcome.text
