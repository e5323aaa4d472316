"""DockerSandbox's container: made, found again by id, removed, gone, idle."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING

import docker
import pytest

from langchain_fstools.sandboxes.docker import DockerSandbox

if TYPE_CHECKING:
    from tests.integration.docker.engine import DockerEngine

pytestmark = pytest.mark.integration


def _exists(engine: DockerEngine, container_id: str) -> bool:
    try:
        engine.client.containers.get(container_id)
    except docker.errors.NotFound:
        return False
    return True


def test_a_second_object_attaches_by_id_and_sees_the_same_files(
    docker_engine: DockerEngine, docker_sandbox: DockerSandbox
) -> None:
    docker_sandbox.upload_files([("/workspace/shared.txt", b"from the first")])
    second = DockerSandbox.attach(docker_sandbox.id, client=docker_engine.client)
    assert second.id == docker_sandbox.id
    assert second.workspace == "/workspace"
    assert second.download_files(["shared.txt"])[0].content == b"from the first"
    assert second.execute("cat shared.txt").output == "from the first"


def test_another_process_attaches_by_id_and_reads_a_file(
    docker_engine: DockerEngine, docker_sandbox: DockerSandbox
) -> None:
    docker_sandbox.upload_files([("/workspace/handoff.txt", b"resumed elsewhere")])
    reader = (
        "import sys\n"
        "from langchain_fstools.sandboxes.docker import DockerSandbox\n"
        "sandbox = DockerSandbox.attach(sys.argv[1])\n"
        "sys.stdout.buffer.write(sandbox.download_files(['handoff.txt'])[0].content)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", reader, docker_sandbox.id],
        capture_output=True,
        timeout=120,
        check=False,
        env={**os.environ, "DOCKER_HOST": docker_engine.host},
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b"resumed elsewhere"


def test_attaching_to_what_is_not_a_sandbox_is_a_value_error(
    docker_engine: DockerEngine,
) -> None:
    with pytest.raises(ValueError, match="No sandbox container"):
        DockerSandbox.attach("0" * 64, client=docker_engine.client)
    other = docker_engine.client.containers.run(
        docker_engine.image, ["sleep", "60"], detach=True, network_mode="none"
    )
    try:
        with pytest.raises(ValueError, match="not a DockerSandbox's"):
            DockerSandbox.attach(other.id, client=docker_engine.client)
    finally:
        other.remove(force=True)


def test_bad_settings_fail_at_construction(docker_engine: DockerEngine) -> None:
    for settings, wrong in [
        ({"workspace": "workspace"}, "workspace"),
        ({"workspace": "/"}, "workspace"),
        ({"timeout": -1}, "timeout"),
        ({"max_output_bytes": 10}, "max_output_bytes"),
        ({"cpus": 0}, "cpus"),
        ({"idle_timeout": 0}, "idle_timeout"),
        ({"image": "fstools-no-such-image:none"}, "no image"),
    ]:
        with pytest.raises(ValueError, match=wrong):
            docker_engine.sandbox(**settings)


def test_close_removes_the_container_and_later_calls_say_it_is_gone(
    docker_engine: DockerEngine,
) -> None:
    sandbox = docker_engine.sandbox()
    sandbox.execute("sleep 9876 &")
    sandbox.close()
    assert not _exists(docker_engine, sandbox.id)
    result = sandbox.execute("true")
    assert result.exit_code is None
    assert result.output.startswith("Error: the sandbox is gone")
    assert sandbox.download_files(["/workspace/x"])[0].error == result.output
    assert sandbox.upload_files([("/workspace/x", b"")])[0].error == result.output
    sandbox.close()  # closing twice is harmless


def test_a_container_killed_mid_command_gives_a_clear_result(
    docker_engine: DockerEngine, docker_sandbox: DockerSandbox
) -> None:
    other_client = docker.DockerClient(base_url=docker_engine.host)
    killer = threading.Timer(1.0, lambda: other_client.containers.get(docker_sandbox.id).kill())
    killer.start()
    started = time.monotonic()
    try:
        result = docker_sandbox.execute("echo working; sleep 9876", timeout=60)
    finally:
        killer.join()
        other_client.close()
    assert time.monotonic() - started < 30  # the kill, not the deadline, ended it
    assert result.exit_code is None
    assert result.output.startswith("working\n")
    assert result.output.endswith("start a new sandbox.")
    assert docker_sandbox.id[:12] in result.output


def test_a_container_paused_mid_command_is_noticed_before_the_deadline(
    docker_engine: DockerEngine, docker_sandbox: DockerSandbox
) -> None:
    """A paused container never ends its commands' output: the watch lets it go."""
    other_client = docker.DockerClient(base_url=docker_engine.host)
    pauser = threading.Timer(1.0, lambda: other_client.containers.get(docker_sandbox.id).pause())
    pauser.start()
    started = time.monotonic()
    try:
        result = docker_sandbox.execute("echo working; sleep 9876", timeout=120)
    finally:
        pauser.join()
        other_client.close()
    assert time.monotonic() - started < 60  # the watch, not the deadline, ended it
    assert result.exit_code is None
    assert result.output.startswith("working\n")
    assert "paused" in result.output


def test_an_idle_sandbox_ends_itself_but_not_while_a_command_runs(
    docker_engine: DockerEngine,
) -> None:
    sandbox = docker_engine.sandbox(idle_timeout=2)
    try:
        assert sandbox.execute("sleep 4; echo survived", timeout=20).output == "survived\n"
        until = time.monotonic() + 30
        while _exists(docker_engine, sandbox.id) and time.monotonic() < until:
            time.sleep(0.5)
        assert not _exists(docker_engine, sandbox.id)
    finally:
        sandbox.close()


async def test_create_and_close_run_off_the_event_loop(docker_engine: DockerEngine) -> None:
    async with await DockerSandbox.acreate(
        image=docker_engine.image, client=docker_engine.client
    ) as sandbox:
        again = await DockerSandbox.aattach(sandbox.id, client=docker_engine.client)
        assert (await again.aexecute("echo hi")).output == "hi\n"
    assert not _exists(docker_engine, sandbox.id)
