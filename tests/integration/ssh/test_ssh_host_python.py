"""Search on an SSH server without rg, by the server's Python.

The same requests (every output mode, globs, types, ignore files, hidden files, case,
multiline, context) must give the same text through the server's rg, the engine run
by the server's Python, the engine walking over SFTP, and local rg.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from langchain_fstools import FileToolkit, LocalBackend
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.backends.ssh import search as ssh_search
from langchain_fstools.backends.ssh.search import HostPython
from langchain_fstools.search.contract import GrepRequest
from langchain_fstools.search.host import Reply
from tests.integration.ssh.conftest import connect
from tests.integration.ssh.sshd import Sshd
from tests.integration.ssh.test_ssh_search import CALLS as SSH_CALLS
from tests.unit.search.test_differential import make_tree
from tests.unit.search.test_host import CALLS as HOST_CALLS

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

CALLS = [
    *HOST_CALLS,
    *(call for call in SSH_CALLS if call not in HOST_CALLS),
    ("grep", {"pattern": "hidden", "path": "/.hidden.txt"}),
]


def answers(backend: Backend) -> list[str]:
    tools = {tool.name: tool for tool in FileToolkit(backend, glob_limit=100_000).get_tools()}
    return [str(tools[name].invoke(args)) for name, args in CALLS]


def tree(root: Path, seed: int) -> Path:
    root.mkdir()
    make_tree(root, seed)
    (root / ".hidden.txt").write_text("alpha hidden\n")
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "info" / "exclude").write_text("*.md\n")
    (root / ".git" / "alpha").write_text("alpha in the VCS folder\n")
    (root / ".ignore").write_text("beta*\n")
    # Distinct whole-second mtimes, so "newest first" orders the same at SFTP's precision.
    for n, path in enumerate(sorted(root.rglob("*"))):
        os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n), follow_symlinks=False)
    return root


@pytest.mark.parametrize("seed", [0])
def test_host_rg_host_python_sftp_and_local_rg_agree(sshd: Sshd, tmp_path: Path, seed: int) -> None:
    root = tree(tmp_path / "tree", seed)
    local = answers(LocalBackend(root))
    with (
        connect(sshd, root) as host_rg,
        connect(sshd, root, use_ripgrep=False) as host_python,
        connect(sshd, root, use_ripgrep=False, use_python=False) as sftp,
    ):
        assert type(host_rg.native_search()).__name__ == "_RemoteRipgrep"
        assert isinstance(host_python.native_search(), HostPython)
        assert sftp.native_search() is None
        assert answers(host_rg) == local
        assert answers(host_python) == local
        assert answers(sftp) == local
        assert isinstance(host_python.native_search(), HostPython)  # no run failed


def test_without_rg_or_python_the_tree_is_walked_over_sftp(sshd: Sshd, tmp_path: Path) -> None:
    root = tree(tmp_path / "tree", 2)
    local = answers(LocalBackend(root))
    options = {"rg_path": "/nonexistent/rg", "python_path": "/nonexistent/python3"}
    with connect(sshd, root, **options) as bare:
        assert bare.native_search() is None
        assert answers(bare) == local


def fake_python(path: Path, script: str) -> str:
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return str(path)


def test_an_old_python_on_the_server_is_not_used(sshd: Sshd, tmp_path: Path) -> None:
    # What the loader prints under Python 3.8, whatever it is asked.
    old = fake_python(tmp_path / "python3.8", "cat >/dev/null; echo '[\"python\", 3, 8]'\n")
    (tmp_path / "a.txt").write_text("needle\n")
    with connect(sshd, tmp_path, use_ripgrep=False, python_path=old) as backend:
        assert backend.native_search() is None
        grep = next(t for t in FileToolkit(backend).get_tools() if t.name == "grep")
        assert grep.invoke({"pattern": "needle"}) == "Found 1 file\n/a.txt"


def test_a_run_that_crashes_is_answered_over_sftp_and_python_dropped(
    sshd: Sshd, tmp_path: Path
) -> None:
    # Loads on the probe, then crashes with a traceback naming host paths.
    crashing = fake_python(
        tmp_path / "crashing",
        'read -r request\ncase "$request" in *probe*) echo "[\\"ready\\", \\"$0\\"]";;\n'
        f'*) echo "Traceback: {tmp_path}" >&2; echo "{tmp_path}"; exit 1;;\nesac\n',
    )
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("needle\n")
    with connect(sshd, root, use_ripgrep=False, python_path=crashing) as backend:
        assert isinstance(backend.native_search(), HostPython)
        tools = {t.name: t for t in FileToolkit(backend).get_tools()}
        assert tools["grep"].invoke({"pattern": "needle"}) == "Found 1 file\n/a.txt"
        assert backend.native_search() is None
        assert tools["glob"].invoke({"pattern": "*"}) == "/a.txt"


def test_the_server_is_asked_once_per_connection(
    sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probes: list[float] = []
    real_probe = ssh_search.probe

    def counted(run: Any, seconds: float) -> Reply | None:
        probes.append(seconds)
        return real_probe(run, seconds)

    monkeypatch.setattr(ssh_search, "probe", counted)
    (tmp_path / "a.txt").write_text("needle\n")
    with connect(sshd, tmp_path, use_ripgrep=False) as backend:
        grep = next(t for t in FileToolkit(backend).get_tools() if t.name == "grep")
        for _ in range(3):
            assert grep.invoke({"pattern": "needle"}) == "Found 1 file\n/a.txt"
        assert len(probes) == 1
        backend.close()  # a new connection may reach another machine: asked again
        assert grep.invoke({"pattern": "needle"}) == "Found 1 file\n/a.txt"
        assert len(probes) == 2


def test_errors_name_virtual_paths_as_the_sftp_walk_does(sshd: Sshd, tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_text("needle\n")
    (tmp_path / "outside").write_text("*.txt\n")
    (root / ".gitignore").symlink_to(tmp_path / "outside")  # read for searches below /
    replies = []
    for options in ({"use_python": True}, {"use_python": False}):
        with connect(sshd, root, use_ripgrep=False, **options) as backend:
            grep = next(t for t in FileToolkit(backend).get_tools() if t.name == "grep")
            replies.append(str(grep.invoke({"pattern": "needle", "path": "/sub"})))
    assert replies[0] == replies[1]
    assert str(tmp_path) not in replies[0]


def test_the_deadline_holds_and_keeps_what_was_found(sshd: Sshd, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("needle\n")
    with connect(sshd, tmp_path, use_ripgrep=False) as backend:
        native = backend.native_search()
        assert isinstance(native, HostPython)
        found: list[str] = []
        started = time.monotonic()
        finished = native.grep(
            GrepRequest("needle", "/"), deadline=started + 0.1, sink=lambda h: found.append(h.path)
        )
        assert not finished
        assert time.monotonic() - started < 2
        assert set(found) <= {"/a.txt"}


def test_async_search_through_the_servers_python(sshd: Sshd, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("needle\n")
    (tmp_path / ".gitignore").write_text("b.txt\n")
    (tmp_path / "b.txt").write_text("needle\n")
    with connect(sshd, tmp_path, use_ripgrep=False) as backend:
        grep = next(t for t in FileToolkit(backend).get_tools() if t.name == "grep")
        assert asyncio.run(grep.ainvoke({"pattern": "needle"})) == "Found 1 file\n/a.txt"
        assert isinstance(backend.native_search(), HostPython)


def test_the_servers_interpreter_is_used_directly(sshd: Sshd, tmp_path: Path) -> None:
    launcher = fake_python(tmp_path / "launcher", f'exec {sys.executable} "$@"\n')
    (tmp_path / "a.txt").write_text("needle\n")
    with connect(sshd, tmp_path, use_ripgrep=False, python_path=launcher) as backend:
        assert isinstance(backend.native_search(), HostPython)
        assert backend._python == sys.executable  # later runs skip the launcher
        assert backend._python_compiled  # our own bytecode: the modules are sent compiled
        grep = next(t for t in FileToolkit(backend).get_tools() if t.name == "grep")
        assert grep.invoke({"pattern": "needle"}) == "Found 1 file\n/a.txt"
