"""A shell that remembers: the working directory and exported variables, command to command.

Each command runs in a fresh `bash -c` (on its own copy-on-write view), so nothing
carries by itself. `remembering` prefixes the command with an `EXIT` trap that writes
(with builtins only: `printf` and `export -p`) the shell's final directory and exported
variables to the state descriptor (`STATE_FD`, a memory file the session reads once the
command ended); `ShellState.read` parses that record (undoing bash's quoting), and the
next command of the session starts in that directory with those variables, as Claude
Code's shell does. A command that replaces the shell (`exec prog`) or is killed records
nothing: the state stays as it was.

The record is bounded (`STATE_LIMIT`): the memory file (`state_record`) is sized and
sealed so that no write makes it grow, so a command cannot make the agent hold or parse
more, and what the next command is started with (sent to the sandbox in one message)
stays small. A record that fills it is not read: the state stays as it was, and the
command's result says so (the limit `shell_state`).
"""

from __future__ import annotations

import fcntl
import os
import re
from dataclasses import dataclass, field
from typing import Final

STATE_FD: Final = 1023
"""The descriptor a command writes its state to (high, so scripts' own `exec 3>` miss it)."""

STATE_LIMIT: Final = 32 << 10
"""The most bytes of state (directory and exported variables) a command leaves the next:
well under a message of the sandbox's protocol (`supervisor.MESSAGE_SIZE`), so what is
carried never makes the next command too large to start."""

NOT_CARRIED: Final = frozenset({"_", "SHLVL", "PWD", "OLDPWD"})
"""Variables the shell sets for itself: never carried to the next command."""

_TRAP: Final = f'trap \'{{ printf "%s\\0" "$PWD"; export -p; }} 2>/dev/null >&{STATE_FD}\' EXIT\n'
"""Records the directory (NUL-ended), then `export -p`'s declarations, when the shell exits."""

_DECLARATION: Final = re.compile(rb"declare -[A-Za-z]+ ([A-Za-z_][A-Za-z0-9_]*)(?:=(.*))?")
_DOUBLE_QUOTED: Final = re.compile(rb'\\(["\\$`])')
_ANSI_C: Final = re.compile(
    rb"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|c(.)|(.))",
    re.DOTALL,
)
_ESCAPES: Final = {
    b"a": b"\a",
    b"b": b"\b",
    b"e": b"\x1b",
    b"E": b"\x1b",
    b"f": b"\f",
    b"n": b"\n",
    b"r": b"\r",
    b"t": b"\t",
    b"v": b"\v",
}


def state_record() -> int:
    """A memory file for one command's state record, which no write can grow past the limit."""
    fd = os.memfd_create("fstools-state", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, STATE_LIMIT)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
    return fd


def recorded(fd: int) -> bytes | None:
    """The record a command left in `state_record()`'s `fd`; None if it filled it (too large).

    The file is `STATE_LIMIT` bytes of zeros where nothing was written; a record holds no
    NUL but the one after the directory.
    """
    data = os.pread(fd, STATE_LIMIT, 0)
    if len(data) == STATE_LIMIT and data[-1:] != b"\0":
        return None
    end = max(len(data.rstrip(b"\0")), data.find(b"\0") + 1)
    return data[:end]


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
        """The state a command recorded (`record`), or this one when it recorded none.

        Declarations the same as the last ones read give the same variables, found
        once (most commands change none).
        """
        cwd, ended, declarations = record.partition(b"\0")
        if not ended or not cwd.startswith(b"/"):
            return self
        last = _LAST_READ[0] if _LAST_READ else None
        if last is not None and last[0] == declarations:
            return ShellState(os.fsdecode(cwd), dict(last[1]))
        env = _variables(declarations)
        _LAST_READ[:] = [(declarations, dict(env))]
        return ShellState(os.fsdecode(cwd), env)


_LAST_READ: list[tuple[bytes, dict[str, str]]] = []
"""The last declarations `ShellState.read` parsed, and their variables."""


def _variables(declarations: bytes) -> dict[str, str]:
    """The exported variables `export -p`'s `declarations` set (with a value)."""
    env: dict[str, str] = {}
    for line in declarations.split(b"\n"):
        found = _DECLARATION.fullmatch(line)
        if found is None or found.group(2) is None:
            continue  # an exported variable without a value has no place in env
        name = os.fsdecode(found.group(1))
        value = _unquoted(found.group(2))
        if value is not None and name not in NOT_CARRIED:
            env[name] = os.fsdecode(value)
    return env


def _unquoted(value: bytes) -> bytes | None:
    """A value as `export -p` quotes it (`"..."` or `$'...'`), unquoted; None if neither."""
    if len(value) >= 2 and value[:1] == b'"' and value[-1:] == b'"':  # noqa: PLR2004
        return _DOUBLE_QUOTED.sub(rb"\1", value[1:-1])
    if len(value) >= 3 and value[:2] == b"$'" and value[-1:] == b"'":  # noqa: PLR2004
        return _ANSI_C.sub(_ansi_c_escape, value[2:-1])
    return None


def _ansi_c_escape(found: re.Match[bytes]) -> bytes:
    octal, hexadecimal, short, long, control, other = found.groups()
    if octal is not None:
        return bytes([int(octal, 8) & 0xFF])
    if hexadecimal is not None:
        return bytes([int(hexadecimal, 16)])
    if short is not None or long is not None:
        return chr(int(short or long, 16)).encode("utf-8", "surrogateescape")
    if control is not None:
        return bytes([control[0] & 0x1F])
    return _ESCAPES.get(other, other)


__all__ = [
    "NOT_CARRIED",
    "STATE_FD",
    "STATE_LIMIT",
    "ShellState",
    "recorded",
    "remembering",
    "state_record",
]
