"""Connection trouble over SSH: typed errors, one clear sentence, and reconnection."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import asyncssh
import pytest

from langchain_fstools import FileToolkit
from langchain_fstools.errors import (
    OutsideRoot,
    SSHAuthenticationFailed,
    SSHConnectionFailed,
    SSHHostKeyRejected,
)
from langchain_fstools.tools.render import render_error
from tests.integration.ssh.conftest import connect
from tests.integration.ssh.sshd import Sshd

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]


@pytest.fixture
def own_sshd(tmp_path: Path) -> Iterator[Sshd]:
    """A server of this test's own, free to be stopped and restarted."""
    server = Sshd(tmp_path / "sshd")
    server.start()
    yield server
    server.cleanup()


def test_server_stopping_mid_session_then_reconnecting(own_sshd: Sshd, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with connect(own_sshd, root) as backend:
        backend.write_bytes("/f.txt", b"before")
        own_sshd.stop()
        with pytest.raises(SSHConnectionFailed) as lost:
            backend.read_bytes("/f.txt")
        assert lost.value.host == "127.0.0.1"
        assert "unreachable over SSH" in render_error(lost.value, tool="read_file")
        own_sshd.start()
        assert backend.read_bytes("/f.txt") == b"before"
        assert backend.execute("echo back", timeout=10, output_limit=100).output == "back\n"


def test_server_down_through_a_tool_is_one_sentence(own_sshd: Sshd, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    own_sshd.stop()
    with connect(own_sshd, root) as backend:
        tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
        out = tools["read_file"].invoke({"file_path": "/x.txt"})
        assert out == (
            "Error: the remote workspace is unreachable over SSH (connection refused);"
            " try again shortly, and if it persists ask the user to check the server."
        )
        assert str(tmp_path) not in out


def test_unknown_host_key_is_refused(sshd: Sshd, tmp_path: Path) -> None:
    other = asyncssh.generate_private_key("ssh-ed25519")
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_bytes(f"[127.0.0.1]:{sshd.port} ".encode() + other.export_public_key())
    with connect(sshd, tmp_path, known_hosts=known_hosts) as backend:
        with pytest.raises(SSHHostKeyRejected) as refused:
            backend.stat("/")
        assert refused.value == SSHHostKeyRejected("127.0.0.1")
        assert "host key is not trusted" in render_error(refused.value, tool="ls")
    with (
        connect(sshd, tmp_path, known_hosts=tmp_path / "missing") as backend,
        pytest.raises(SSHHostKeyRejected),
    ):
        backend.stat("/")


def test_checking_host_keys_can_be_turned_off_explicitly(sshd: Sshd, tmp_path: Path) -> None:
    with connect(sshd, tmp_path, known_hosts=None) as backend:
        assert backend.stat("/").is_dir


def test_bad_credentials(sshd: Sshd, tmp_path: Path) -> None:
    stranger = tmp_path / "stranger_key"
    asyncssh.generate_private_key("ssh-ed25519").write_private_key(str(stranger))
    with connect(sshd, tmp_path, client_keys=[stranger]) as backend:
        with pytest.raises(SSHAuthenticationFailed) as refused:
            backend.list_dir("/")
        assert refused.value == SSHAuthenticationFailed("127.0.0.1", sshd.username)
        assert "refused the login" in render_error(refused.value, tool="ls")


def test_missing_root_dir_is_a_connection_error(sshd: Sshd, tmp_path: Path) -> None:
    with connect(sshd, tmp_path / "absent") as backend:
        with pytest.raises(SSHConnectionFailed) as failed:
            backend.stat("/")
        assert failed.value.reason == "root_dir is missing"


def test_symlinks_out_of_the_root_are_refused(sshd: Sshd, tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (root / "inside.txt").write_text("ok")
    (root / "out_dir").symlink_to(outside)
    (root / "out_file").symlink_to(outside / "secret.txt")
    (root / "dangling_out").symlink_to(outside / "nothing-yet")
    (root / "in_link").symlink_to("inside.txt")
    with connect(sshd, root) as backend:
        for path in ("/out_dir/secret.txt", "/out_file", "/dangling_out", "/out_dir"):
            with pytest.raises(OutsideRoot) as refused:
                backend.read_bytes(path)
            assert refused.value == OutsideRoot(path)
        with pytest.raises(OutsideRoot):
            backend.write_bytes("/dangling_out", b"escape")
        with pytest.raises(OutsideRoot):
            backend.write_bytes("/out_dir/new.txt", b"escape")
        assert not (outside / "nothing-yet").exists()
        assert not (outside / "new.txt").exists()
        assert backend.read_bytes("/in_link") == b"ok"
        listed = {entry.name: entry for entry in backend.list_dir("/")}
        assert listed["out_dir"].kind == "special"
        assert listed["out_dir"].link
        assert listed["in_link"].is_file
        tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
        message = tools["read_file"].invoke({"file_path": "/out_file"})
        assert str(tmp_path) not in message
        assert "/out_file" in message
