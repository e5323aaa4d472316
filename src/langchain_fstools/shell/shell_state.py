"""A shell that remembers: the working directory and exported variables, command to command.

Each command runs in a fresh `bash -c` (on its own copy-on-write view), so nothing
carries by itself. `remembering` prefixes the command with an `EXIT` trap that writes
(with builtins only) the shell's final directory and exported variables to the state descriptor
(`STATE_FD`, a memory file the session reads once the command ended); `ShellState.read`
parses that record, and the next command of the session starts in that directory with
those variables, as Claude Code's shell does. A command that replaces the shell
(`exec prog`) or is killed records nothing: the state stays as it was.
"""

from __future__ import annotations

import os
import string
from dataclasses import dataclass, field
from typing import Final

STATE_FD: Final = 1023
"""The descriptor a command writes its state to (high, so scripts' own `exec 3>` miss it)."""

NOT_CARRIED: Final = frozenset({"_", "SHLVL", "PWD", "OLDPWD"})
"""Variables the shell sets for itself: never carried to the next command."""

_NAMES: Final = " ".join(f"${{!{c}*}}" for c in "_" + string.ascii_letters)
"""Every variable's name, by first letter (builtins only: no process is started)."""

_TRAP: Final = (
    'trap \'{ printf "%s\\0" "$PWD"; for __fstools_n in '
    + _NAMES
    + '; do [[ ${!__fstools_n@a} == *x* ]] && printf "%s=%s\\0" "$__fstools_n" "${!__fstools_n}"; '
    + f"done; }} 2>/dev/null >&{STATE_FD}' EXIT\n"
)
"""Records the directory, then each exported variable, NUL-separated, when the shell exits."""


def remembering(command: str) -> str:
    """`command` as it runs: after the trap that records the shell's state at exit."""
    return _TRAP + command


@dataclass(frozen=True)
class ShellState:
    """Where the next command starts and with which exported variables.

    Attributes:
        cwd: The working directory (a path inside the sandbox).
        env: The exported variables; None until a command recorded them (the
            session's own environment then).
    """

    cwd: str
    env: dict[str, str] | None = field(default=None, hash=False)

    def read(self, record: bytes) -> ShellState:
        """The state a command recorded (`record`), or this one when it recorded none."""
        parts = record.split(b"\0")
        if len(parts) < 2 or not parts[0].startswith(b"/"):  # noqa: PLR2004 - cwd, then end
            return self
        env: dict[str, str] = {}
        for item in parts[1:]:
            name, sep, value = item.partition(b"=")
            if sep and name and name.decode(errors="replace") not in NOT_CARRIED:
                env[os.fsdecode(name)] = os.fsdecode(value)
        return ShellState(os.fsdecode(parts[0]), env)


__all__ = ["NOT_CARRIED", "STATE_FD", "ShellState", "remembering"]
