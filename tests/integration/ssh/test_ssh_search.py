"""glob and grep over SSH: remote rg, the SFTP-walking engine and local rg agree.

The tree is the differential suite's (nested .gitignore files with negations, anchored
and directory patterns); every query must give the same text through every path.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from langchain_fstools import FileToolkit, LocalBackend
from langchain_fstools.backends.protocol import Backend
from tests.integration.ssh.conftest import connect
from tests.integration.ssh.sshd import Sshd
from tests.unit.search.test_differential import QUERIES, make_tree

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

CALLS: list[tuple[str, dict[str, object]]] = [
    ("glob", {"pattern": "**"}),
    ("glob", {"pattern": "**/*.py"}),
    ("glob", {"pattern": "*", "path": "/deep"}),
    *[
        ("grep", {"pattern": pattern, "output_mode": "content", "head_limit": 0, **options})
        for pattern, options in QUERIES
    ],
    *[
        ("grep", {"pattern": pattern, "output_mode": mode, "head_limit": 0, **options})
        for pattern, options in QUERIES[::4]
        for mode in ("files_with_matches", "count")
    ],
    ("grep", {"pattern": "alpha", "output_mode": "content", "-C": 1, "head_limit": 0}),
    ("grep", {"pattern": "alp", "glob": "**/*.txt", "path": "/deep"}),
    ("grep", {"pattern": "(", "regex": True}),
]


def answers(backend: Backend) -> list[str]:
    tools = {tool.name: tool for tool in FileToolkit(backend, glob_limit=100_000).get_tools()}
    return [str(tools[name].invoke(args)) for name, args in CALLS]


@pytest.mark.parametrize("seed", [0])
def test_remote_rg_engine_and_local_rg_agree(sshd: Sshd, tmp_path: Path, seed: int) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    make_tree(root, seed)
    # Distinct whole-second mtimes, so "newest first" orders the same at SFTP's precision.
    for n, path in enumerate(sorted(root.rglob("*"))):
        os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n), follow_symlinks=False)
    local = answers(LocalBackend(root))
    walk_only = {"use_ripgrep": False, "use_python": False}
    with connect(sshd, root) as remote_rg, connect(sshd, root, **walk_only) as engine:
        assert remote_rg.native_search() is not None
        assert engine.native_search() is None
        assert answers(remote_rg) == local
        assert answers(engine) == local
    neither = {"rg_path": "/nonexistent/rg", "python_path": "/nonexistent/python3"}
    with connect(sshd, root, **neither) as no_rg_on_server:
        assert no_rg_on_server.native_search() is None
        assert answers(no_rg_on_server) == local


def test_async_search_through_remote_rg(sshd: Sshd, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("needle\n")
    (tmp_path / ".gitignore").write_text("b.txt\n")
    (tmp_path / "b.txt").write_text("needle\n")
    with connect(sshd, tmp_path) as backend:
        grep = next(t for t in FileToolkit(backend).get_tools() if t.name == "grep")
        assert asyncio.run(grep.ainvoke({"pattern": "needle"})) == "Found 1 file\n/a.txt"
