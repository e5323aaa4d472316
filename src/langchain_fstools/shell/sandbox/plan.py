"""How a session's supervisor starts: its command line, environment and private folder.

`Confinement.session` (`shell.sandbox.sandbox`) builds the plan; `shell.session.session`
starts the supervisor from it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from langchain_fstools.shell.sandbox.limits import remove_dead_cgroups, running

if TYPE_CHECKING:
    from collections.abc import Mapping

    from langchain_fstools.shell.sandbox.limits import Limits


@dataclass(frozen=True)
class SessionPlan:
    """How a session's supervisor starts (`Confinement.session` builds it).

    Attributes:
        argv: The supervisor's command line.
        env: Its environment (the control socket's number is added).
        folder: The session's private host folder (upper layers live there, at the
            same path inside the sandbox); removed when the session closes.
        cwd: Where commands start unless the shell state says otherwise.
        command_env: Variables set over every command's environment (`TMPDIR`).
        temporary: Another host folder to remove at the end (a private `TMPDIR`), or None.
        limits: The session's limits: its memory and processes are held by a cgroup
            where this machine can make one (`shell.sandbox.limits`), and each command is told
            which it hit. None: no limits.
        masked: The real paths the session's sandbox masked at its start, with what each
            was then (device, inode and change time; None: nothing there). Each
            command masks over its own view what is masked now and not as this says
            (`Confinement.command_masks`).
    """

    argv: list[str]
    env: dict[str, str]
    folder: str
    cwd: str
    command_env: dict[str, str] = field(default_factory=dict)
    temporary: str | None = None
    limits: Limits | None = None
    masked: Mapping[str, tuple[int, int, int] | None] = field(default_factory=dict)


_FOLDER_PREFIX: Final = "fstools-session-"


def session_folder() -> str:
    """A new private folder for a session, named after this process.

    Folders (and the commands' views in them) that sessions of processes no longer
    running left behind (a process killed before it could remove its own) are removed
    first, if this user owns them; so are such processes' cgroups.
    """
    with contextlib.suppress(OSError):
        for left in Path(tempfile.gettempdir()).glob(f"{_FOLDER_PREFIX}*"):
            owner = left.name.removeprefix(_FOLDER_PREFIX).partition("-")[0]
            if owner.isdigit() and not running(int(owner)) and left.lstat().st_uid == os.getuid():
                shutil.rmtree(left, ignore_errors=True)
    remove_dead_cgroups()
    return tempfile.mkdtemp(prefix=f"{_FOLDER_PREFIX}{os.getpid()}-")


__all__ = ["SessionPlan", "session_folder"]
