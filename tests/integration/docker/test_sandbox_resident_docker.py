"""SandboxBackend(DockerSandbox): the resident helper (`backends.sandbox.resident`) for real.

The backend's `python3` is a wrapper written through `execute` (as a user could) that
counts its starts in the container, so a test sees which calls started a Python; the
server and its workers are found and killed through `execute`, as a provider's own
process would be.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

import pytest

from langchain_fstools.backends.sandbox import SandboxBackend
from langchain_fstools.core.results import Write
from langchain_fstools.errors import StoreUnavailable
from tests.unit.backends.test_sandbox_resident import each_thread_reads_what_it_wrote

if TYPE_CHECKING:
    from langchain_fstools.sandboxes.docker import DockerSandbox

pytestmark = pytest.mark.integration

COUNTING = "/tmp/counting-python3"


def _counting_backend(docker_sandbox: DockerSandbox) -> SandboxBackend:
    written = docker_sandbox.execute(
        f"printf '#!/bin/sh\\necho >> /tmp/starts\\nexec python3 \"$@\"\\n' > {COUNTING}"
        f" && chmod 755 {COUNTING}"
    )
    assert written.exit_code == 0, written.output
    return SandboxBackend(docker_sandbox, python=COUNTING)


def _starts(docker_sandbox: DockerSandbox) -> int:
    return len(docker_sandbox.execute("cat /tmp/starts 2>/dev/null").output.splitlines())


def _server(docker_sandbox: DockerSandbox, backend: SandboxBackend) -> int | None:
    """The live server's pid, read in the container as the client reads it."""
    folder = backend.transport.folder
    found = docker_sandbox.execute(
        f"for f in {folder}/run-*/pid; do read p < $f && read x c t y < /proc/$p/stat"
        ' && [ "$t" != Z ] && echo "$p $c"; done'
    ).output.split()
    return int(found[0]) if found and found[1].startswith("(fstools-") else None


def test_the_server_starts_once_and_answers_later_calls_without_a_python_start(
    docker_sandbox: DockerSandbox,
) -> None:
    backend = _counting_backend(docker_sandbox)
    backend.write_bytes("/a.txt", b"one")
    started = _starts(docker_sandbox)
    server = _server(docker_sandbox, backend)
    assert server is not None
    for number in range(4):
        backend.write_bytes(f"/{number}.txt", b"%d" % number)
        assert backend.read_bytes(f"/{number}.txt") == b"%d" % number
    assert _starts(docker_sandbox) == started
    assert _server(docker_sandbox, backend) == server


def test_a_server_killed_between_calls_is_replaced_and_the_next_call_answers(
    docker_sandbox: DockerSandbox,
) -> None:
    backend = _counting_backend(docker_sandbox)
    backend.write_bytes("/a.txt", b"one")
    first = _server(docker_sandbox, backend)
    assert first is not None
    docker_sandbox.execute(f"kill -KILL {first}")
    started = _starts(docker_sandbox)
    assert backend.read_bytes("/a.txt") == b"one"
    assert _starts(docker_sandbox) == started + 1  # the loader answered, and started one
    second = _server(docker_sandbox, backend)
    assert second not in {None, first}
    assert backend.read_bytes("/a.txt") == b"one"
    assert _starts(docker_sandbox) == started + 1


def test_a_write_whose_worker_is_killed_changes_nothing_and_says_so(
    docker_sandbox: DockerSandbox,
) -> None:
    """The worker waits for the workspace while a command runs, and is killed there.

    The command runs from a backend without the server, so the server's only child is
    the write's worker.
    """
    backend = SandboxBackend(docker_sandbox)
    backend.write_bytes("/a.txt", b"one")
    server = _server(docker_sandbox, backend)
    assert server is not None
    holder = SandboxBackend(docker_sandbox, resident_idle=0)  # its helper: no worker
    command = threading.Thread(
        target=holder.execute, args=("sleep 6",), kwargs={"timeout": 30, "output_limit": 1000}
    )
    command.start()
    time.sleep(2)  # the command holds the workspace
    failures: list[StoreUnavailable] = []

    def write() -> None:
        try:
            backend.write_bytes("/a.txt", b"two")
        except StoreUnavailable as error:
            failures.append(error)

    writer = threading.Thread(target=write)
    writer.start()
    killed = ""
    deadline = time.monotonic() + 3
    while not killed and time.monotonic() < deadline:  # the worker: a child of the server
        killed = docker_sandbox.execute(
            "for f in /proc/[0-9]*/stat; do read p c t pp y < $f 2>/dev/null"
            f' && [ "$pp" = {server} ] && kill -KILL $p && echo $p; done'
        ).output.strip()
    writer.join(timeout=60)
    command.join(timeout=60)
    assert killed
    assert [error.cause for error in failures] == [
        "the sandbox's helper ended before it answered; check the file, then try again"
    ]
    assert backend.read_bytes("/a.txt") == b"one"
    assert [info.path for info in backend.list_dir("/")] == ["/a.txt"]  # no temporary


def test_threads_on_one_backend_are_all_answered_right(docker_sandbox: DockerSandbox) -> None:
    backend = SandboxBackend(docker_sandbox)
    backend.write_bytes("/start.txt", b"")
    assert each_thread_reads_what_it_wrote(backend, 6, 3, b"x" * 5000) == []


def test_a_recorded_command_runs_in_a_worker_with_its_own_execute_environment(
    docker_sandbox: DockerSandbox,
) -> None:
    """DockerSandbox gives each `execute` its own token (`FSTOOLS_EXEC`); the command sees its own."""
    backend = _counting_backend(docker_sandbox)
    backend.write_bytes("/a.txt", b"one")
    assert backend.execute("true", timeout=30, output_limit=1000).exit_code == 0
    started = _starts(docker_sandbox)
    tokens = [
        backend.execute("echo $FSTOOLS_EXEC", timeout=30, output_limit=1000).output.strip()
        for _ in range(2)
    ]
    assert _starts(docker_sandbox) == started  # no Python started: the server's workers ran them
    assert all(len(token) == 16 for token in tokens)
    assert tokens[0] != tokens[1]


KILLER = """\
end=$(( $(date +%s) + {seconds} ))
while [ "$(date +%s)" -lt "$end" ]; do
    for f in /proc/[0-9]*/stat; do
        read p c t pp y < $f 2>/dev/null && [ "$pp" = {server} ] || continue
        sleep {delay}; kill -KILL $p 2>/dev/null && echo "$p" >> /tmp/killed
    done
done
"""
"""Kills every worker of the server `delay` seconds after it finds it, for `seconds`."""


@pytest.mark.parametrize("delay", ["0.01", "0.03"])
def test_a_batch_whose_worker_is_killed_is_whole_or_absent_at_the_next_call(
    docker_sandbox: DockerSandbox, delay: str
) -> None:
    backend = SandboxBackend(docker_sandbox)
    old = [Write(f"/f{number}.txt", b"old %d\n" % number) for number in range(300)]
    backend.write_many(old)
    server = _server(docker_sandbox, backend)
    assert server is not None
    killer = threading.Thread(
        target=docker_sandbox.execute,
        args=(KILLER.format(seconds=6, server=server, delay=delay),),
        kwargs={"timeout": 30},
    )
    killer.start()
    time.sleep(1)
    new = [Write(f"/f{number}.txt", b"new %d\n" % number * 5000) for number in range(300)]
    with pytest.raises(StoreUnavailable) as caught:
        backend.write_many(new)
    assert caught.value.cause == (
        "the sandbox's helper ended before it answered; check the file, then try again"
    )
    killer.join(timeout=60)
    assert docker_sandbox.execute("cat /tmp/killed").output.strip()
    backend.stat("/")  # the next call settles what the killed worker left
    found = docker_sandbox.execute(
        "for f in /workspace/f*.txt; do read word number < $f; echo $word; done | sort | uniq -c"
    ).output.split()
    assert found in (["300", "old"], ["300", "new"])
    journal = f"{backend.transport.folder}/journal-*"
    left = docker_sandbox.execute(f"find {journal} -mindepth 1 ! -empty").output
    assert not left.strip()  # no record left unsettled, no part with data left
    # (an empty part stays a minute: it may be a live commit's between making and locking it)
    names = sorted(info.path for info in backend.list_dir("/"))
    assert names == sorted(write.path for write in old)  # no temporary left
