"""DockerSandbox.execute: output, exit codes, deadlines, floods, the network and limits."""

from __future__ import annotations

import asyncio
import io
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import TYPE_CHECKING

import pytest

from langchain_fstools.sandboxes.docker import DockerSandbox, output_frames
from langchain_fstools.shell.sandbox.limits import Limits, MiB

if TYPE_CHECKING:
    from tests.integration.docker.engine import DockerEngine

pytestmark = pytest.mark.integration

COUNT_SLEEPERS = (
    "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -o 'sleep 98[7]6' | wc -l"
)
"""How many `sleep 9876` processes run (the bracket keeps grep from counting itself)."""


def test_a_command_runs_in_the_workspace_and_says_its_exit_code(
    docker_sandbox: DockerSandbox,
) -> None:
    result = docker_sandbox.execute("pwd; echo out; echo err >&2; exit 3")
    assert result.output == "/workspace\nout\nerr\n"
    assert result.exit_code == 3
    assert not result.truncated
    assert docker_sandbox.execute("true").exit_code == 0


def test_a_timeout_kills_the_command_s_group_and_what_left_it(
    docker_sandbox: DockerSandbox,
) -> None:
    started = time.monotonic()
    result = docker_sandbox.execute(
        "sleep 9876 & setsid sleep 9876 & echo started; wait", timeout=1
    )
    took = time.monotonic() - started
    assert result.exit_code == 124
    assert result.output.startswith("started\n")
    assert "timed out after 1 second " in result.output
    assert took < 20  # the deadline, not the sleeps, ended it
    assert docker_sandbox.execute(COUNT_SLEEPERS).output.strip() == "0"


def test_a_background_process_ends_with_its_command(docker_sandbox: DockerSandbox) -> None:
    started = time.monotonic()
    result = docker_sandbox.execute("sleep 9876 & echo left running", timeout=60)
    assert (result.output, result.exit_code) == ("left running\n", 0)
    assert time.monotonic() - started < 20  # the sleep did not hold the output open
    assert docker_sandbox.execute(COUNT_SLEEPERS).output.strip() == "0"


def test_a_process_that_left_the_group_and_the_token_ends_at_the_deadline(
    docker_sandbox: DockerSandbox,
) -> None:
    """`env -i` drops the token and `setsid` the group: the output is let go after a grace."""
    started = time.monotonic()
    escape = "setsid sh -c ': > /tmp/escaped; exec env -i sleep 9876' &"
    wait = "until [ -e /tmp/escaped ]; do sleep 0.05; done"  # out of the group for sure
    result = docker_sandbox.execute(f"{escape} {wait}; echo started", timeout=1)
    assert result.exit_code == 124
    assert result.output.startswith("started\n")
    assert time.monotonic() - started < 20


def test_a_command_within_its_timeout_is_not_killed(docker_sandbox: DockerSandbox) -> None:
    result = docker_sandbox.execute("sleep 1; echo done", timeout=5)
    assert (result.output, result.exit_code) == ("done\n", 0)


def test_a_negative_timeout_is_refused(docker_sandbox: DockerSandbox) -> None:
    with pytest.raises(ValueError, match="timeout"):
        docker_sandbox.execute("true", timeout=-1)


def test_an_output_flood_keeps_its_first_and_last_bytes_within_the_bound(
    docker_sandbox: DockerSandbox,
) -> None:
    result = docker_sandbox.execute("echo FIRST; yes | head -c 50000000; echo LAST")
    assert result.exit_code == 0
    assert result.truncated
    assert result.output.startswith("FIRST\n")
    assert result.output.endswith("LAST\n")
    assert "bytes of output left out" in result.output
    assert len(result.output.encode()) < docker_sandbox.max_output_bytes + 200


def test_the_sandbox_has_no_network(docker_sandbox: DockerSandbox) -> None:
    interfaces = docker_sandbox.execute("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
    assert interfaces.output.split() == ["lo"]
    probe = (
        "python3 -c \"import socket; socket.create_connection(('10.255.255.1', 80), timeout=3)\""
    )
    result = docker_sandbox.execute(probe)
    assert result.exit_code != 0
    assert "Network is unreachable" in result.output


FORK_64 = """python3 -c '
import os, time
started = 0
try:
    while started < 64:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        started += 1
except OSError as error:
    print("refused:", error.strerror)
print("started", started)
'"""
"""Fork 64 sleeping children, saying when a fork is refused and how many started."""


def test_the_processes_limit_holds_the_whole_container(docker_engine: DockerEngine) -> None:
    with docker_engine.sandbox(limits=Limits(memory=256 * MiB, processes=32)) as sandbox:
        result = sandbox.execute(FORK_64, timeout=20)
        assert "refused: Resource temporarily unavailable" in result.output
        assert int(result.output.split()[-1]) < 32


def test_the_memory_limit_kills_a_command_that_passes_it(docker_engine: DockerEngine) -> None:
    with docker_engine.sandbox(limits=Limits(memory=64 * MiB, processes=64)) as sandbox:
        result = sandbox.execute(
            "python3 -c 'b = bytearray(256 * 1024 * 1024); print(len(b))'", timeout=30
        )
        assert result.exit_code not in {0, None}
        assert "268435456" not in result.output
        assert sandbox.execute("echo alive").output == "alive\n"


def test_rlimits_and_shared_memory_come_from_limits(docker_engine: DockerEngine) -> None:
    limits = Limits(memory=256 * MiB, open_files=100, file_size=4096, tmp_size=8 * MiB)
    with docker_engine.sandbox(limits=limits) as sandbox:
        assert sandbox.execute("ulimit -n").output == "100\n"
        assert sandbox.execute("ulimit -f").output == "8\n"  # in 512-byte blocks
        result = sandbox.execute("df -k /dev/shm | tail -1").output.split()
        assert result[1] == str(8 * 1024)


async def test_a_command_runs_off_the_event_loop(docker_sandbox: DockerSandbox) -> None:
    result = await docker_sandbox.aexecute("echo async", timeout=10)
    assert (result.output, result.exit_code) == ("async\n", 0)


async def test_concurrent_commands_each_get_their_own_output(
    docker_sandbox: DockerSandbox,
) -> None:
    commands = [f"sleep 0.{(n * 3) % 5}; seq {n} {n + 2}; exit {n}" for n in range(8)]
    results = await asyncio.gather(*(docker_sandbox.aexecute(c, timeout=30) for c in commands))
    assert [(r.output, r.exit_code) for r in results] == [
        (f"{n}\n{n + 1}\n{n + 2}\n", n) for n in range(8)
    ]


class _Socket:
    """A hijacked exec connection's raw socket, read to its end already."""

    def __init__(self, response: object) -> None:
        self._response = response

    def read(self, size: int) -> bytes:
        del size
        return b""


def test_output_the_http_reader_took_with_the_headers_is_read_from_it() -> None:
    """Frames read ahead with the response's headers are not lost (docker-py issue 3332)."""
    framed = b"".join(
        bytes([stream, 0, 0, 0]) + len(data).to_bytes(4, "big") + data
        for stream, data in [(1, b"first\n"), (2, b"second\n"), (1, b"x" * 70_000)]
    )
    reader = io.BufferedReader(io.BytesIO(framed))
    response = SimpleNamespace(raw=SimpleNamespace(_fp=SimpleNamespace(fp=reader)))
    assert list(output_frames(_Socket(response))) == [b"first\n", b"second\n", b"x" * 70_000]


def test_commands_that_print_at_once_keep_their_output_on_a_busy_engine(
    docker_sandbox: DockerSandbox,
) -> None:
    """Forty threads of quick commands: each one's output arrives whole."""

    def run(number: int) -> str:
        return docker_sandbox.execute(f"echo {number}").output

    with ThreadPoolExecutor(8) as pool:
        outputs = list(pool.map(run, range(40)))
    assert outputs == [f"{number}\n" for number in range(40)]
