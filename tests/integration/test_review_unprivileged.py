"""The change-set review as an unprivileged agent (issue 48): the same holes stay closed.

CI runs as root; here the whole agent (`create_agent`, the middleware, the sandbox)
runs as `nobody` through `setpriv`, on the system's `python3` with the project's
packages on its path (the agent's own interpreter lives under a home `nobody` cannot
enter), in a workspace `nobody` owns. A set-uid file an unprivileged agent commits
gives every local user that agent's identity, so the bit is never kept there either.
"""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.unprivileged import NOBODY, folder_of_nobody, run_child

pytestmark = pytest.mark.integration

CHILD = """
import json, subprocess, sys
from pathlib import Path
from langchain_fstools import LocalBackend
from tests.e2e.agent_runs import run_command

GIT = "git -c user.name=t -c user.email=t@e -c init.defaultBranch=main -c commit.gpgsign=false"
root, command, mode = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
root.mkdir()
(root / "a.txt").write_text("a\\n")
(root / "app.py").write_text("VALUE = 1\\n")
(root / ".gitignore").write_text("build/\\n__pycache__/\\n")
setup = f"{GIT} init -q && {GIT} add -A && {GIT} commit -qm a"
subprocess.run(["bash", "-c", setup], cwd=root, check=True)
outcome = run_command(LocalBackend(root, execute=True), command, mode=mode)
status = outcome.message.status if outcome.message is not None else None
print(json.dumps({"status": status, "text": outcome.text, "asked": outcome.asked}))
"""


@pytest.fixture
def place() -> Iterator[Path]:
    """A folder `nobody` owns, outside every home."""
    with folder_of_nobody(CHILD, "fstools-review-") as base:
        yield base


def as_nobody(place: Path, command: str, mode: str) -> dict[str, Any]:
    """Run one `execute` call through `create_agent` as `nobody`; what came back."""
    return run_child(place, str(place / "ws"), command, mode)


def test_the_agent_runs_as_nobody(place: Path) -> None:
    outcome = as_nobody(place, "id -u > id.txt", "bypass")

    assert outcome["status"] == "success", outcome
    assert (place / "ws" / "id.txt").stat().st_uid == NOBODY


def test_an_unprivileged_agents_set_uid_file_is_committed_without_the_bit(place: Path) -> None:
    shell = shutil.which("sh")

    outcome = as_nobody(
        place, f"mkdir -p build && cp {shell} build/sh && chmod 6755 build/sh", "bypass"
    )

    assert outcome["status"] == "success", outcome
    assert "A /build/sh (mode 755; its set-uid/set-gid bit is not kept)" in outcome["text"]
    mode = (place / "ws" / "build" / "sh").stat().st_mode
    assert not mode & (stat.S_ISUID | stat.S_ISGID)


def test_an_unprivileged_agents_commondir_is_refused(place: Path) -> None:
    marker = place / "ran"
    command = (
        "mkdir -p evil && cp -r .git/objects .git/refs evil/"
        f" && printf '[core]\\n\\tfsmonitor = touch {marker}\\n' > evil/config"
        " && echo ../evil > .git/commondir"
    )

    outcome = as_nobody(place, command, "bypass")

    assert outcome["status"] == "error", outcome
    assert "it changed /.git/commondir" in outcome["text"]
    assert not (place / "ws" / ".git" / "commondir").exists()
    subprocess.run(["git", "status"], cwd=place / "ws", capture_output=True, check=False)
    assert not marker.exists()


def test_an_unprivileged_agents_compiled_cache_asks(place: Path) -> None:
    command = f"mkdir -p __pycache__ && echo x > __pycache__/app.{sys.implementation.cache_tag}.pyc"

    outcome = as_nobody(place, command, "default")

    assert outcome["asked"], outcome
    assert not (place / "ws" / "__pycache__").exists()
