"""OS sandboxes for local commands: how to wrap a shell's argv.

Only bubblewrap (`bwrap`) is supported. Inside it a command sees the host file system
read-only, the workspace writable, a private `/tmp`, a minimal `/dev`, its own `/proc`,
and no network; it runs in new PID, IPC and UTS namespaces and a new session, and dies
with its parent, so killing the sandbox kills everything in it.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from collections.abc import Sequence

Sandbox = Literal["bwrap"]
"""The sandboxes `LocalBackend(sandbox=...)` accepts."""

SANDBOXES: tuple[Sandbox, ...] = ("bwrap",)


def find_bwrap() -> str:
    """The path of `bwrap` on PATH.

    Raises:
        ValueError: bubblewrap is not installed.
    """
    found = shutil.which("bwrap")
    if found is None:
        raise ValueError(
            "sandbox='bwrap' needs bubblewrap, but no `bwrap` is on PATH;"
            " install it (e.g. apt-get install bubblewrap) or run without a sandbox"
        )
    return found


def bwrap_argv(bwrap: str, workspace: str, argv: Sequence[str]) -> list[str]:
    """Wrap `argv` so that it runs inside bubblewrap with only `workspace` writable.

    Args:
        bwrap: Path of the `bwrap` executable.
        workspace: Host directory mounted read-write at its own path, and the working
            directory of the command.
        argv: The command to run inside.

    Returns:
        The argv to start instead.
    """
    return [
        bwrap,
        *("--ro-bind", "/", "/"),
        *("--dev", "/dev"),
        *("--proc", "/proc"),
        *("--tmpfs", "/tmp"),  # noqa: S108 - a fresh private tmpfs, not the host's /tmp
        *("--bind", workspace, workspace),
        *("--chdir", workspace),
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--die-with-parent",
        "--new-session",
        "--",
        *argv,
    ]


__all__ = ["SANDBOXES", "Sandbox", "bwrap_argv", "find_bwrap"]
