"""execute over SSH: exit codes, stderr marks, the output cap, and killing at the deadline."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from langchain_fstools.backends.ssh import SSHBackend

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]


def test_runs_in_the_root_with_exit_codes(ssh_backend: SSHBackend, ssh_root: Path) -> None:
    (ssh_root / "here.txt").write_text("x")
    result = ssh_backend.execute("ls; exit 3", timeout=10, output_limit=10_000)
    assert (result.output, result.exit_code, result.timed_out) == ("here.txt\n", 3, False)
    ok = ssh_backend.execute("true", timeout=10, output_limit=10_000)
    assert (ok.output, ok.exit_code) == ("", 0)


def test_a_signal_reports_128_plus_its_number(ssh_backend: SSHBackend) -> None:
    result = ssh_backend.execute("kill -TERM $$", timeout=10, output_limit=1000)
    assert result.exit_code == 128 + 15


def test_stderr_lines_are_marked(ssh_backend: SSHBackend) -> None:
    result = ssh_backend.execute(
        "echo out; echo err >&2; sleep 0.2; echo more", timeout=10, output_limit=10_000
    )
    assert result.output == "out\n[stderr] err\nmore\n"


def test_output_cap_keeps_head_and_tail(ssh_backend: SSHBackend) -> None:
    result = ssh_backend.execute(
        "i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done",
        timeout=20,
        output_limit=200,
    )
    assert result.exit_code == 0
    assert result.output.startswith("line0\nline1\n")
    assert result.output.endswith("line1998\nline1999\n")
    assert result.dropped_bytes > 10_000
    assert f"[... {result.dropped_bytes:,} bytes of output omitted ...]" in result.output


def test_timeout_kills_the_group_with_its_grandchildren(
    ssh_backend: SSHBackend, ssh_root: Path
) -> None:
    started = time.monotonic()
    result = ssh_backend.execute(
        "sleep 1000 & echo $! > pid; echo started; sleep 1000", timeout=1.5, output_limit=1000
    )
    elapsed = time.monotonic() - started
    assert (result.timed_out, result.exit_code, result.output) == (True, None, "started\n")
    assert elapsed < 1.5 + 2
    grandchild = int((ssh_root / "pid").read_text())
    deadline = time.monotonic() + 5
    while Path(f"/proc/{grandchild}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{grandchild}").exists()


def test_a_background_child_holding_the_output_open_is_killed_too(
    ssh_backend: SSHBackend,
) -> None:
    started = time.monotonic()
    result = ssh_backend.execute("sleep 1000 & echo left", timeout=1, output_limit=1000)
    assert result.timed_out
    assert result.output == "left\n"
    assert time.monotonic() - started < 3


def test_async_execute_does_not_block_the_event_loop(ssh_backend: SSHBackend) -> None:
    async def both() -> tuple[str, float]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        ticker = asyncio.create_task(tick())
        result = await ssh_backend.aexecute("sleep 0.6; echo done", timeout=10, output_limit=100)
        ticker.cancel()
        return result.output, ticks

    output, ticks = asyncio.run(both())
    assert output == "done\n"
    assert ticks >= 5


def test_the_backend_says_it_can_execute(ssh_backend: SSHBackend) -> None:
    assert ssh_backend.supports_execute is True


def test_more_commands_at_once_than_the_server_has_sessions(ssh_backend: SSHBackend) -> None:
    """OpenSSH allows 10 sessions per connection; extra commands wait their turn.

    Only stdout is compared: sixteen logins at once can make the login shell's own
    start-up files (pyenv's rehash, here) complain on stderr.
    """

    async def many() -> list[list[str]]:
        results = await asyncio.gather(
            *(
                ssh_backend.aexecute(f"sleep 0.3; echo {n}", timeout=30, output_limit=100_000)
                for n in range(16)
            )
        )
        return [
            [line for line in result.output.splitlines() if not line.startswith("[stderr] ")]
            for result in results
        ]

    assert asyncio.run(many()) == [[str(n)] for n in range(16)]


def test_close_then_use_again(ssh_backend: SSHBackend) -> None:
    assert ssh_backend.execute("echo 1", timeout=10, output_limit=100).output == "1\n"
    ssh_backend.close()
    assert ssh_backend.execute("echo 2", timeout=10, output_limit=100).output == "2\n"
    assert ssh_backend.stat("/").is_dir
