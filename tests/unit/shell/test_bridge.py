"""The bridge, run in a network namespace of its own as the sandbox runs it.

A Unix listener here stands in for the proxy: the test takes the passed listener from it
and closes it, as the proxy's end does, and the command then connects to the bridge's
port from inside. The bridge with the real proxy, in the sandbox: test_sandbox_domains.py.
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from langchain_fstools.shell.network import bridge
from langchain_fstools.shell.network.proxy import PORT
from langchain_fstools.shell.sandbox.sandbox import find_bwrap

pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="needs bubblewrap")

COMMAND = f"""
import socket, sys
print("started", flush=True)
sys.stdin.readline()  # the proxy has ended
with socket.socket() as late:
    try:
        late.connect(("127.0.0.1", {PORT}))
        print("connected", flush=True)
    except ConnectionRefusedError:
        print("refused", flush=True)
"""


def _start(path: Path) -> subprocess.Popen[str]:
    """The bridge on `path`, running COMMAND, in a network namespace with only `lo`."""
    bwrap = find_bwrap()
    assert bwrap is not None
    namespace = [bwrap, "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent", "--"]
    script = [sys.executable, "-I", "-S", bridge.__file__, str(PORT), str(path), "--"]
    return subprocess.Popen(
        [*namespace, *script, sys.executable, "-I", "-c", COMMAND],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _line(process: subprocess.Popen[str]) -> str:
    """The command's next line of output (empty if none came within a minute)."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], 60)
    return process.stdout.readline() if ready else ""


def _proxy_ended(process: subprocess.Popen[str]) -> str:
    """Tell the command the proxy has ended; what its connection met; then end it."""
    assert process.stdin is not None
    try:
        process.stdin.write("\n")
        process.stdin.flush()
        return _line(process)
    finally:
        process.stdin.close()
        process.wait(timeout=30)


def test_the_command_starts_once_the_proxy_holds_the_only_listener(tmp_path: Path) -> None:
    """No process of the sandbox keeps a copy: once the proxy's closes, connections are refused."""
    path = tmp_path / "proxy.sock"
    with socket.socket(socket.AF_UNIX) as proxy:
        proxy.bind(str(path))
        proxy.listen(1)
        process = _start(path)
        try:
            assert _line(process) == "started\n"
            proxy.setblocking(False)
            connection, _ = proxy.accept()  # made before the command started
            with connection:
                connection.setblocking(False)
                message, descriptors, _, _ = socket.recv_fds(connection, 100, 1)  # sent too
                assert message == bridge.MARKER
                assert len(descriptors) == 1
                os.close(descriptors[0])  # as the proxy's end does
                met = _proxy_ended(process)  # the bridge's connection is still open
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert met == "refused\n"


def test_a_proxy_gone_before_the_bridge_starts_leaves_connections_refused(
    tmp_path: Path,
) -> None:
    process = _start(tmp_path / "gone.sock")
    try:
        assert _line(process) == "started\n"
        met = _proxy_ended(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert met == "refused\n"
