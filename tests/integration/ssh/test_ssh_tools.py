"""The tool-level transcript over SSH: the same answers as on local disk, sync and async.

One difference is allowed and checked apart: SFTP reports whole-second mtimes, so files
written within the same second tie in glob's newest-first order and come out by path;
glob answers are compared as sets of paths.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from langchain_fstools import FileToolkit
from tests.integration.ssh.conftest import connect
from tests.integration.ssh.sshd import Sshd
from tests.unit.tools.harness import Harness
from tests.unit.tools.test_conformance import CALLS, FILES

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]


def transcript(h: Harness, *, use_async: bool) -> list[tuple[str, Any]]:
    for path, data in FILES.items():
        h.seed(path, data)
    out: list[tuple[str, Any]] = []
    for name, args in CALLS:
        message = asyncio.run(h.acall(name, **args)) if use_async else h.call(name, **args)
        content = message.content
        if name == "glob" and isinstance(content, str):
            content = sorted(content.split("\n"))
        out.append((message.status, content))
    out.extend(("bytes", h.content(path)) for path in sorted(FILES) if path != "/docs/long.md")
    return out


@pytest.mark.parametrize(
    ("use_ripgrep", "use_python"), [(True, True), (False, True), (False, False)]
)
def test_ssh_agrees_with_local_call_for_call(
    sshd: Sshd, tmp_path: Path, use_ripgrep: bool, use_python: bool
) -> None:
    reference = transcript(Harness("local", tmp_path / "reference"), use_async=False)
    for use_async in (False, True):
        h = Harness("local", tmp_path / f"ssh-{use_async}")
        with connect(sshd, h.root, use_ripgrep=use_ripgrep, use_python=use_python) as backend:
            h.toolkit = FileToolkit(backend)
            h.tools = {tool.name: tool for tool in h.toolkit.get_tools()}
            got = transcript(h, use_async=use_async)
        for n, (expected, answer) in enumerate(zip(reference, got, strict=True)):
            assert answer == expected, f"async={use_async} step {n}: {CALLS[n : n + 1]}"
