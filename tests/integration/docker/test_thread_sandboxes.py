"""A thread's sandbox outlives its worker: another process attaches it through the store
of sandbox ids (`ThreadSandboxes`), finds the files the first one wrote, and approves the
change set the first one left waiting (a real Docker Engine; SQLite files shared)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from langgraph.store.memory import InMemoryStore

from langchain_fstools.backends.sandbox import ThreadSandboxes
from langchain_fstools.sandboxes.docker import DockerSandbox

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.integration.docker.engine import DockerEngine

pytestmark = pytest.mark.integration

REPOSITORY = Path(__file__).resolve().parents[3]


def worker(phase: str, folder: Path, engine: DockerEngine) -> Any:
    """Run one phase of `thread_process` in a fresh interpreter; its JSON report."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.integration.docker.thread_process",
            phase,
            str(folder),
            engine.host,
            engine.image,
        ],
        cwd=REPOSITORY,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def two_workers(docker_engine: DockerEngine, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """The reports of the starting worker and the resuming one; the sandbox removed after."""
    first = worker("start", tmp_path, docker_engine)
    try:
        yield first, worker("resume", tmp_path, docker_engine)
    finally:
        DockerSandbox.attach(first["sandbox"], client=docker_engine.client).close()


def test_another_process_attaches_the_threads_sandbox_and_approves_its_waiting_command(
    two_workers: tuple[Any, Any],
) -> None:
    first, second = two_workers
    assert first["results"]["w"][0] == "success"
    assert first["waiting"] == ["execute"]
    assert "Nothing is kept yet" in first["results"]["x"][1]
    assert first["files"] == ["note.txt"]
    assert second["sandbox"] == first["sandbox"]
    assert second["waiting"] == []
    status, content = second["results"]["x"]
    assert status == "success"
    assert "they are kept" in content
    assert second["files"] == ["copy.txt", "note.txt"]
    status, content = second["results"]["r"]
    assert status == "success"
    assert "from the first worker" in content


def test_a_sandbox_that_ended_is_replaced_and_its_id_recorded(
    docker_engine: DockerEngine,
) -> None:
    made: list[DockerSandbox] = []

    def create() -> DockerSandbox:
        made.append(docker_engine.sandbox())
        return made[-1]

    sandboxes = ThreadSandboxes(
        create=create,
        attach=lambda sandbox_id: DockerSandbox.attach(sandbox_id, client=docker_engine.client),
        store=InMemoryStore(),
    )
    try:
        first = sandboxes.get_or_create("t")
        assert sandboxes.get_or_create("t").id == first.id
        assert sandboxes.get_or_create("other").id != first.id
        made[0].close()
        replaced = sandboxes.get_or_create("t")
        assert replaced.id not in {first.id, made[1].id}
        assert sandboxes.get_or_create("t").id == replaced.id
    finally:
        for sandbox in made:
            sandbox.close()
