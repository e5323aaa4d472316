"""Over SSH commands get the session's environment plus `env=`, or less."""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_fstools.backends.ssh import SSHBackend
from tests.integration.ssh.conftest import connect
from tests.integration.ssh.sshd import Sshd

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]


def names(backend: SSHBackend) -> dict[str, str]:
    try:
        result = backend.execute("env", timeout=20, output_limit=100_000)
    finally:
        backend.close()
    assert result.exit_code == 0, result.output
    return dict(line.split("=", 1) for line in result.output.splitlines() if "=" in line)


def test_by_default_the_session_environment_plus_env(sshd: Sshd, ssh_root: Path) -> None:
    seen = names(connect(sshd, ssh_root, env={"GREETING": "it's $x"}))
    assert seen["GREETING"] == "it's $x"
    assert "SSH_CONNECTION" in seen
    assert "HOME" in seen


def test_inherit_env_false_passes_only_env(sshd: Sshd, ssh_root: Path) -> None:
    seen = names(connect(sshd, ssh_root, inherit_env=False, env={"GREETING": "t"}))
    assert seen["GREETING"] == "t"
    assert "SSH_CONNECTION" not in seen
    assert "HOME" not in seen


def test_a_list_passes_those_names_when_the_session_has_them(sshd: Sshd, ssh_root: Path) -> None:
    seen = names(connect(sshd, ssh_root, inherit_env=["HOME", "NOT_SET_ANYWHERE"]))
    assert "HOME" in seen
    assert "NOT_SET_ANYWHERE" not in seen
    assert "SSH_CONNECTION" not in seen


def test_malformed_settings_fail_at_construction(sshd: Sshd, ssh_root: Path) -> None:
    with pytest.raises(ValueError, match="environment variable names"):
        connect(sshd, ssh_root, env={"A B": "x"})
