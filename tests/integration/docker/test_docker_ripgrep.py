"""ripgrep in a Docker sandbox that lacks it: this environment's `rg` uploaded once, or,
where it cannot run there, the package's engine, with the same answers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from langchain_fstools import FileToolkit
from langchain_fstools.backends.sandbox import SandboxBackend
from langchain_fstools.search import ripgrep

if TYPE_CHECKING:
    from pathlib import Path

    from langchain_fstools.sandboxes.docker import DockerSandbox

pytestmark = pytest.mark.integration

FILES = {
    "/workspace/app.py": b"def needle():\n    return 1\n",
    "/workspace/.gitignore": b"*.log\n",
    "/workspace/debug.log": b"needle in an ignored log\n",
    "/workspace/sub/mod.py": b"x = 1\nneedle = 2\n",
}

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("grep", {"pattern": "needle", "output_mode": "content", "-n": True}),
    ("grep", {"pattern": "needle"}),
    ("glob", {"pattern": "**/*.py"}),
    ("grep", {"pattern": "needle", "path": "/sub/mod.py", "output_mode": "count"}),
]


def answers(backend: SandboxBackend) -> list[str]:
    tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
    return [str(tools[name].invoke(args)) for name, args in CALLS]


def uploads(sandbox: DockerSandbox, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Paths the provider is asked to upload from now on."""
    asked: list[str] = []
    upload = sandbox.upload_files

    def counted(files: list[tuple[str, bytes]]) -> Any:
        asked.extend(path for path, _ in files)
        return upload(files)

    monkeypatch.setattr(sandbox, "upload_files", counted)
    return asked


def test_a_sandbox_without_rg_searches_with_the_uploaded_one(
    docker_sandbox: DockerSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert docker_sandbox.execute("rm /usr/bin/rg && ! command -v rg").exit_code == 0
    assert not [r.error for r in docker_sandbox.upload_files(list(FILES.items())) if r.error]
    engine = answers(SandboxBackend(docker_sandbox, use_ripgrep=False))
    asked = uploads(docker_sandbox, monkeypatch)
    backend = SandboxBackend(docker_sandbox)
    assert answers(backend) == engine
    assert backend.searches_with_ripgrep
    assert [path.rsplit("/", 1)[1][:3] for path in asked if "/rg-" in path] == ["rg-"]
    again = SandboxBackend(docker_sandbox)  # another backend: the upload is found there
    assert answers(again) == engine
    assert again.searches_with_ripgrep
    assert len([path for path in asked if "/rg-" in path]) == 1
    assert "needle" in engine[0]
    assert "debug.log" not in engine[1]


def test_an_rg_that_cannot_run_there_leaves_the_engine_answering_the_same(
    docker_sandbox: DockerSandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert docker_sandbox.execute("rm /usr/bin/rg").exit_code == 0
    assert not [r.error for r in docker_sandbox.upload_files(list(FILES.items())) if r.error]
    engine = answers(SandboxBackend(docker_sandbox, use_ripgrep=False))
    musl = tmp_path / "rg"  # as a musl build: its loader is missing on a glibc image
    musl.write_bytes(b"#!/lib/ld-musl-x86_64.so.1\n")
    monkeypatch.setattr(ripgrep, "find_ripgrep", lambda: str(musl))
    asked = uploads(docker_sandbox, monkeypatch)
    backend = SandboxBackend(docker_sandbox)
    assert answers(backend) == engine
    assert not backend.searches_with_ripgrep
    again = SandboxBackend(docker_sandbox)
    assert answers(again) == engine
    assert not again.searches_with_ripgrep
    assert len([path for path in asked if "/rg-" in path]) == 1  # not sent twice
