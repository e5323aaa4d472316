"""SandboxBackend(DockerSandbox): a batch whose helper the provider kills mid-set is whole or absent.

The sandbox's `python3` for one backend is a wrapper (written through `execute`, as a
user could) that holds a batch's helper at its n-th file-system call; the backend's
timeout then makes Docker kill it there, for real. Another backend on the same sandbox
(any worker) then finds the set whole or absent.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

import pytest

from langchain_fstools.backends.protocol import ABSENT
from langchain_fstools.backends.sandbox import SandboxBackend
from langchain_fstools.core.results import Deletion, Write
from tests.unit.backends.test_sandbox_journal import HELPER_OP, RUN_LOADER

if TYPE_CHECKING:
    from langchain_fstools.sandboxes.docker import DockerSandbox

pytestmark = pytest.mark.integration

HOLDING_PYTHON = (
    HELPER_OP
    + """\
with open("/tmp/hold-at") as setting:
    hold_at = int(setting.read()) if op in ("write", "write_and_delete") else 0
calls = [0]
def counted(real):
    def call(*args, **kwargs):
        calls[0] += 1
        if calls[0] == hold_at:
            time.sleep(600)
        return real(*args, **kwargs)
    return call
for name in ("open", "write", "fsync", "rename", "replace", "link", "unlink", "rmdir", "mkdir"):
    setattr(os, name, counted(getattr(os, name)))
"""
    + RUN_LOADER
    + """\
finally:
    if op in ("write", "write_and_delete"):
        with open("/tmp/calls", "w") as out:
            out.write(str(calls[0]))
"""
)

BEFORE = {"/src/a.py": b"a = 1\n", "/src/b.py": b"b = 1\n", "/old.txt": b"old\n"}
AFTER = {"/src/a.py": b"a = 2\n", "/src/b.py": b"b = 2\n", "/new/c.py": b"c = 1\n"}


def _batch(backend: SandboxBackend) -> None:
    backend.write_many(
        [
            Write("/src/a.py", AFTER["/src/a.py"]),
            Write("/src/b.py", AFTER["/src/b.py"]),
            Write("/new/c.py", AFTER["/new/c.py"], ABSENT),
        ],
        [Deletion("/old.txt")],
    )


def _files(sandbox: DockerSandbox, backend: SandboxBackend) -> dict[str, bytes]:
    listed = [info.path for info in backend.walk("/") if info.kind.value == "file"]
    found = {path: backend.read_bytes(path) for path in listed}
    leftovers = sandbox.execute("find /workspace -name '*.fstools-tmp'").output
    assert not leftovers.strip(), leftovers
    return found


def _reset(sandbox: DockerSandbox, backend: SandboxBackend) -> None:
    assert sandbox.execute("rm -rf /workspace/* && mkdir -p /workspace/src").exit_code == 0
    backend.write_many([Write(path, data) for path, data in BEFORE.items()], [])


def test_a_batch_killed_by_the_provider_mid_set_is_whole_or_absent(
    docker_sandbox: DockerSandbox,
) -> None:
    python = docker_sandbox.execute("command -v python3").output.strip()
    wrapper = HOLDING_PYTHON.format(python=python)
    written = docker_sandbox.execute(
        f"printf %s {shlex.quote(wrapper)} > /tmp/holding-python3"
        " && chmod 755 /tmp/holding-python3 && echo 0 > /tmp/hold-at"
    )
    assert written.exit_code == 0, written.output
    plain = SandboxBackend(docker_sandbox)
    holding = SandboxBackend(  # its own Python start per call, not the resident helper's
        docker_sandbox, python="/tmp/holding-python3", timeout=3, resident_idle=0
    )
    _reset(docker_sandbox, plain)
    _batch(holding)  # counts the batch's calls
    total = int(docker_sandbox.execute("cat /tmp/calls").output)
    assert _files(docker_sandbox, plain) == AFTER

    for point, expected in ((4, BEFORE), (total - 4, AFTER)):
        _reset(docker_sandbox, plain)
        docker_sandbox.execute(f"echo {point} > /tmp/hold-at")
        with pytest.raises(Exception, match=r"(?i)time|sandbox"):
            _batch(holding)
        docker_sandbox.execute("echo 0 > /tmp/hold-at")
        assert _files(docker_sandbox, plain) == expected, f"held at call {point} of {total}"
