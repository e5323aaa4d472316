"""Allowed domains from inside the sandbox: a command reaches the listed names over HTTP
and HTTPS through the proxy, and nothing else (no other name, no address, no UDP, no DNS).

Loopback servers get names through the proxy's resolver (`AllowedDomains(resolve=...)`);
no test reaches an address off this machine. Controls: `pip install` from a local index
and `git clone` over HTTP, both through an allowed name.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import langchain_fstools
from langchain_fstools import LocalBackend
from langchain_fstools.shell.network.domains import AllowedDomains
from langchain_fstools.shell.sandbox.sandbox import Confinement, Sandbox
from langchain_fstools.shell.session.session import Session
from tests.loopback import http_server, self_signed, tcp_recorder
from tests.unit.shell.test_overlay import WHEEL, write_wheel

if TYPE_CHECKING:
    from collections.abc import Iterator

    from langchain_fstools.core.results import ExecutionResult
    from langchain_fstools.shell.network.proxy import DomainProxy

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

NAMES = {"pypi.test": "127.0.0.1", "other.test": "127.0.0.1"}


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "index.html").write_text("hello from pypi.test\n")
    with http_server(folder) as port:
        yield folder, port


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def _run(workspace: Path, command: str, *ports: int) -> ExecutionResult:
    domains = AllowedDomains(["pypi.test"], ports=ports, resolve=NAMES)
    backend = LocalBackend(workspace, execute=True, sandbox=Sandbox(network=domains))
    return backend.execute(command, timeout=60, output_limit=20_000)


def test_an_allowed_name_is_reached_over_http(workspace: Path, site: tuple[Path, int]) -> None:
    _, port = site
    result = _run(workspace, f"curl -sS http://pypi.test:{port}/index.html", port)
    assert result.exit_code == 0, result.output
    assert result.output == "hello from pypi.test\n"


def test_an_allowed_name_is_reached_over_https_through_connect(
    workspace: Path, tmp_path: Path
) -> None:
    pytest.importorskip("cryptography")
    (tmp_path / "index.html").write_text("secure hello\n")
    context, pem = self_signed("pypi.test", workspace)
    with http_server(tmp_path, tls=context) as port:
        result = _run(workspace, f"curl -sS --cacert {pem} https://pypi.test:{port}/", port)
    assert result.exit_code == 0, result.output
    assert result.output == "secure hello\n"


def test_another_name_is_refused_saying_how_to_allow_it(
    workspace: Path, site: tuple[Path, int]
) -> None:
    _, port = site
    result = _run(workspace, f"curl -sS http://other.test:{port}/index.html", port)
    assert "other.test is not an allowed host" in result.output
    assert "Sandbox(network=[...])" in result.output
    assert "hello" not in result.output


def test_an_address_is_reached_neither_directly_nor_through_the_proxy(workspace: Path) -> None:
    with tcp_recorder() as (port, received):
        direct = _run(workspace, f"echo hi > /dev/tcp/127.0.0.1/{port}; echo status=$?", port)
        proxied = _run(
            workspace,
            f"curl -sS --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:{port}/",
            port,
        )
    assert "status=1" in direct.output
    assert "127.0.0.1 is not an allowed address" in proxied.output
    assert received == []


def test_no_udp_leaves_the_sandbox(workspace: Path) -> None:
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    port = receiver.getsockname()[1]
    try:
        result = _run(
            workspace,
            "python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM);"
            f' s.sendto(b"leak", ("127.0.0.1", {port})); print("sent")\'',
            port,
        )
        assert result.exit_code == 0, result.output  # sent, to the sandbox's own loopback
        receiver.setblocking(False)  # a datagram on loopback is queued when sent: none came
        with pytest.raises(BlockingIOError):
            receiver.recv(100)
    finally:
        receiver.close()


def test_a_command_has_no_dns_of_its_own(workspace: Path, site: tuple[Path, int]) -> None:
    _, port = site
    result = _run(
        workspace,
        "getent hosts pypi.test; echo getent=$?;"
        " python3 -c 'import socket; socket.getaddrinfo(\"pypi.test\", 80)' 2>&1 | tail -1",
        port,
    )
    assert "getent=2" in result.output
    assert "gaierror" in result.output
    assert "127.0.0.1" not in result.output.split("getent=")[0]


def test_pip_installs_from_an_https_index_behind_an_allowed_name(
    workspace: Path, tmp_path: Path
) -> None:
    pytest.importorskip("cryptography")
    package = tmp_path / "simple" / "tinypkg"
    package.mkdir(parents=True)
    write_wheel(package / WHEEL)
    (package / "index.html").write_text(f'<a href="{WHEEL}">{WHEEL}</a>\n')
    context, pem = self_signed("pypi.test", workspace)
    with http_server(tmp_path, tls=context) as port:
        result = _run(
            workspace,
            f"{sys.executable} -m pip install --no-cache-dir --disable-pip-version-check -q"
            f" --cert {pem} --index-url https://pypi.test:{port}/simple --target deps tinypkg"
            " && PYTHONPATH=deps python3 -c 'import tinypkg; print(tinypkg.VALUE)'",
            port,
        )
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith("42")


def test_git_clones_over_http_from_an_allowed_name(
    workspace: Path, site: tuple[Path, int], tmp_path: Path
) -> None:
    folder, port = site
    source = tmp_path / "source"
    source.mkdir()
    (source / "README").write_text("cloned through the proxy\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C"]
    subprocess.run([*git, str(source), "init", "-q"], check=True)
    subprocess.run([*git, str(source), "add", "README"], check=True)
    subprocess.run([*git, str(source), "commit", "-qm", "one"], check=True)
    bare = folder / "repo.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(source), str(bare)], check=True)
    subprocess.run(["git", "-C", str(bare), "update-server-info"], check=True)
    result = _run(
        workspace,
        f"git clone -q http://pypi.test:{port}/repo.git copy && cat copy/README",
        port,
    )
    assert result.exit_code == 0, result.output
    assert result.output.endswith("cloned through the proxy\n")


FIND_BRIDGE = """
import os
for pid in os.listdir('/proc'):
    if pid.isdigit() and pid != '1' and int(pid) != os.getpid():
        try:
            with open(f'/proc/{pid}/cmdline', 'rb') as cmdline:
                if b'bridge.py' not in cmdline.read():
                    continue
            with open(f'/proc/{pid}/maps') as maps:
                print('read', pid, maps.readline())
        except PermissionError:
            print('refused', pid)
        except OSError:
            pass
"""


def test_a_command_cannot_read_the_bridges_memory(workspace: Path) -> None:
    (workspace / "find.py").write_text(FIND_BRIDGE)
    result = _run(workspace, "python3 find.py; head -c 20 /proc/$$/maps", 80)
    assert "refused" in result.output
    assert "read " not in result.output
    assert "-" in result.output.splitlines()[-1]  # the command's own memory map is readable


AS_NOBODY = """
import functools, http.server, sys, threading
from langchain_fstools.shell.network.domains import AllowedDomains
from langchain_fstools.shell.sandbox.sandbox import Confinement, Sandbox
from langchain_fstools.shell.session.session import Session

base = sys.argv[1]
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=base + "/site")
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
port = server.server_address[1]
names = AllowedDomains(["pypi.test"], ports=[port], resolve={"pypi.test": "127.0.0.1"})
sandbox = Sandbox(network=names, method="bwrap", workspace="direct")
confinement = Confinement.prepare(sandbox, base + "/ws")  # holds the proxy: keep it
session = Session(confinement.session())
command = f"id -u; curl -sS http://pypi.test:{port}/; curl -sS http://other.test:{port}/"
env = {"PATH": "/usr/bin:/bin", "HOME": base}
result, _, _ = session.run(
    command, interpreter="/bin/bash", env=env, timeout=30, output_limit=5000
)
session.close()
print(result.output)
"""


SETPRIV = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]


def test_an_unprivileged_agent_reaches_the_allowed_names_only() -> None:
    """The agent, its proxy and the bridge as `nobody` (on the system's python3)."""
    assert os.geteuid() == 0, "this test switches to nobody, which needs root (as in CI)"
    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="fstools-nobody-"))
    try:
        shutil.copytree(Path(langchain_fstools.__file__).parent, base / "langchain_fstools")
        (base / "site").mkdir()
        (base / "site" / "index.html").write_text("hello nobody\n")
        (base / "ws").mkdir()
        os.chown(base / "ws", 65534, 65534)
        for path in [base, *base.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o755 if path.is_dir() else 0o644)
        done = subprocess.run(
            [*SETPRIV, "env", f"PYTHONPATH={base}", "/usr/bin/python3", "-c", AS_NOBODY, str(base)],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert done.stdout.startswith("65534\nhello nobody\n"), done.stdout + done.stderr
    assert "other.test is not an allowed host" in done.stdout


def test_pip_says_why_a_name_is_refused(workspace: Path) -> None:
    result = _run(
        workspace,
        f"{sys.executable} -m pip download --no-cache-dir --disable-pip-version-check"
        " --retries 1 --index-url https://other.test/simple tinypkg",
        443,
    )
    assert result.exit_code != 0
    assert "other.test is not an allowed host" in result.output


def _sockets(pid: int) -> int:
    count = 0
    for descriptor in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):  # closed meanwhile
            count += str(descriptor.readlink()).startswith("socket:")
    return count


def _proxy_pid(proxy: DomainProxy) -> int:
    """The process of `proxy` (named by its folder: another test's proxy may still run)."""
    folder = proxy.socket_path.rpartition("/")[0].encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                parent = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
                cmdline = (entry / "cmdline").read_bytes()
                ours = b"shell.network.proxy" in cmdline and folder in cmdline.split(b"\0")
                if parent == os.getpid() and ours:
                    return int(entry.name)
    raise AssertionError("the proxy's process was not found")


def _confined(workspace: Path, port: int) -> tuple[Confinement, DomainProxy]:
    """Bubblewrap with pypi.test allowed on `port`, and its proxy (not started yet)."""
    domains = AllowedDomains(["pypi.test"], ports=[port], resolve=NAMES)
    confinement = Confinement.prepare(Sandbox(network=domains, method="bwrap"), str(workspace))
    assert confinement.proxy is not None
    return confinement, confinement.proxy


def _output(session: Session, command: str) -> str:
    env = {"PATH": os.environ["PATH"]}
    result, _, _ = session.run(
        command, interpreter="/bin/bash", env=env, timeout=60, output_limit=5000
    )
    return result.output


def test_the_proxy_lets_go_of_a_sessions_listener_when_the_session_ends(
    workspace: Path, site: tuple[Path, int]
) -> None:
    _, port = site
    confinement, proxy = _confined(workspace, port)
    try:
        pid = _proxy_pid(proxy)  # started by asking for its socket
        before = _sockets(pid)
        session = Session(confinement.session())
        try:
            output = _output(session, f"curl -sS http://pypi.test:{port}/")
            during = _sockets(pid)  # the session's listener and its bridge's connection
        finally:
            session.close()
        deadline = time.monotonic() + 30
        while _sockets(pid) > before and time.monotonic() < deadline:
            time.sleep(0.05)
        after = _sockets(pid)
    finally:
        proxy.close()
    assert output == "hello from pypi.test\n"
    assert during >= before + 2
    assert after == before


def test_once_the_proxy_has_ended_a_commands_connection_is_refused_at_once(
    workspace: Path, site: tuple[Path, int]
) -> None:
    _, port = site
    confinement, proxy = _confined(workspace, port)
    session = Session(confinement.session())
    # curl's message on standard output too: the exit line then follows it in one pipe
    # (two pipes keep no order between them: `shell.session.process`)
    command = f"curl -sS --max-time 20 http://pypi.test:{port}/ 2>&1; echo exit=$?"
    try:
        reached = _output(session, command)
        proxy.close()  # the proxy's process ends: nothing holds the listener
        refused = _output(session, command)
    finally:
        session.close()
    assert reached == "hello from pypi.test\nexit=0\n"
    assert refused.endswith("exit=7\n"), refused  # could not connect
