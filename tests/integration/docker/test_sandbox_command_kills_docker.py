"""SandboxBackend(DockerSandbox): a command whose helper is killed while it runs keeps nothing.

The helper is killed for real inside the container (SIGKILL, as the OOM killer or a
provider's deadline kills it) while its command runs, with a process of the command
left running that writes later. Another backend on the same sandbox (any worker) then
finds the workspace as before the command, the leftover process killed, and the next
command's set read against that state.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest

from langchain_fstools.backends.sandbox import SandboxBackend
from langchain_fstools.errors import StoreUnavailable

if TYPE_CHECKING:
    from langchain_fstools.sandboxes.docker import DockerSandbox

pytestmark = pytest.mark.integration

TREE = "cd /workspace && find . -printf '%y %m %p %l\\n' | sort && cat src/a.py"
"""What the test compares of the workspace, asked of the container itself."""

PROCESSES = "cat /proc/[0-9]*/cmdline | tr '\\0' ' ' | tr -d ' '"
"""The container's processes' command lines, spaces left out (the image has no `ps`)."""


def test_a_helper_killed_mid_command_keeps_nothing_of_the_command(
    docker_sandbox: DockerSandbox,
) -> None:
    backend = SandboxBackend(docker_sandbox)
    backend.write_bytes("/src/a.py", b"a = 1\n")
    backend.write_bytes("/old.txt", b"old\n")
    before = docker_sandbox.execute(TREE).output
    command = (
        "echo more >> src/a.py; rm old.txt; mkdir new; echo x > new/x.txt;"
        " (sleep 2; echo late > late.txt) & kill -9 $PPID; sleep 30"
    )
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):
        backend.execute_changes(command, timeout=60, output_limit=10_000)
    assert docker_sandbox.execute("cat /workspace/src/a.py").output == "a = 1\nmore\n"

    other = SandboxBackend(docker_sandbox)  # another worker: its first call settles
    assert other.read_bytes("/src/a.py") == b"a = 1\n"
    time.sleep(max(0.0, started + 3 - time.monotonic()))
    assert docker_sandbox.execute(TREE).output == before  # no late.txt: the group was killed
    assert "sleep30" not in docker_sandbox.execute(PROCESSES).output
    result = other.execute_changes("echo new > n.txt", timeout=30, output_limit=10_000)
    assert result.changes is not None
    assert [(c.kind.value, c.path) for c in result.changes.changes] == [("A", "/n.txt")]
