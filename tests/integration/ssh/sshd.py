"""A throwaway OpenSSH server on 127.0.0.1, with its own host and client keys."""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import asyncssh

SSHD = "/usr/sbin/sshd"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _private(path: Path, key: asyncssh.SSHKey) -> Path:
    key.write_private_key(str(path))
    path.chmod(0o600)
    return path


class Sshd:
    """`sshd -D` on a free loopback port; `stop()` and `start()` it at will.

    Attributes:
        port: The port it listens on (kept across restarts).
        client_key: Private key file the server accepts for the current user.
        known_hosts: A known_hosts file naming this server's host key.
        username: The user to log in as.
    """

    def __init__(self, directory: Path) -> None:
        assert Path(SSHD).exists(), "sshd is missing (.ci/run installs openssh-server)"
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.port = free_port()
        self.username = getpass.getuser()
        host_key = asyncssh.generate_private_key("ssh-ed25519")
        client = asyncssh.generate_private_key("ssh-ed25519")
        self.host_key = _private(directory / "host_key", host_key)
        self.client_key = _private(directory / "client_key", client)
        authorized = directory / "authorized_keys"
        authorized.write_bytes(client.export_public_key())
        authorized.chmod(0o600)
        self.known_hosts = directory / "known_hosts"
        self.known_hosts.write_bytes(
            f"[127.0.0.1]:{self.port} ".encode() + host_key.export_public_key()
        )
        self.config = directory / "sshd_config"
        self.config.write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {self.host_key}",
                    f"AuthorizedKeysFile {authorized}",
                    "PermitRootLogin prohibit-password",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "StrictModes no",
                    "UsePAM no",
                    f"PidFile {directory / 'sshd.pid'}",
                    "Subsystem sftp internal-sftp",
                    "MaxStartups 100",
                    "LogLevel ERROR",
                    "",
                ]
            )
        )
        self.log = directory / "sshd.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(self.config)], stdout=log, stderr=log
            )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"sshd exited: {self.log.read_text()[-2000:]}")
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2),
            ):
                return
            time.sleep(0.05)
        raise RuntimeError("sshd did not accept connections within 10 s")

    def stop(self) -> None:
        """Stop the listener and the connections it serves (its child processes)."""
        if self.process is None:
            return
        children = _children(self.process.pid)
        self.process.kill()
        self.process.wait(timeout=10)
        self.process = None
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


def _children(pid: int) -> list[int]:
    """Process ids whose parent is `pid` (the per-connection sshd processes)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    found.append(int(entry.name))
    return found
