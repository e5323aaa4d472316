"""CommandPolicy: which shell commands the `execute` tool may run.

The command line goes through the one shell analyser (`shell.analysis`), and every
simple command in it is checked as it will run: those in pipelines and lists (`;`,
`&&`, `||`, `|`, `&`), subshells, command substitutions, function bodies, behind
wrappers (`env`, `nice`, `timeout`, `nohup`, `xargs`, `command`, `exec`, `sudo`, ...),
run by `find -exec`, and in scripts given to `sh -c` / `bash -c` / `eval` or fed to a
shell by a here-string (parsed in turn). Command names are compared as the shell would
resolve them: `\\rm`, `'rm'`, `"r"m` and `/bin/rm` are all `rm`. What cannot be known
before it runs (`$CMD`, `eval "$X"`, `source file`) is refused whenever a deny pattern
could match it or an allow list is given.

A policy is a guard against mistakes, not a security boundary: a command can still
run a script file it wrote first, or a program that runs others. What contains
commands is the OS sandbox `LocalBackend(root, execute=True)` runs them in by default
(see `shell.sandbox` and docs/sandbox.md).

Example:
    ```python
    from langchain_fstools import FileToolkit, LocalBackend
    from langchain_fstools.shell.policy import CommandPolicy

    policy = CommandPolicy(allow=["pytest", "python", "git status", "git diff"])
    tools = FileToolkit(LocalBackend("./repo"), command_policy=policy).get_tools()
    ```
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from langchain_fstools.errors import CommandRefused
from langchain_fstools.shell.analysis import (
    Analysis,
    Match,
    SimpleCommand,
    analyse,
    command_pattern,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

PRIVILEGED = frozenset({"sudo", "su", "doas", "pkexec", "run0"})
"""Commands that run others with elevated privileges."""

POWER = frozenset({"shutdown", "reboot", "halt", "poweroff", "telinit"})
"""Commands that stop or restart the machine (`init 0|6` and `systemctl reboot` too)."""

DISK_TOOLS = frozenset(
    {"mkfs", "mke2fs", "mkswap", "wipefs", "fdisk", "sfdisk", "cfdisk", "parted"}
)
"""Commands that format or partition disks (and every `mkfs.*`)."""

ALWAYS_ALLOWED = frozenset(
    {":", "[", "cd", "echo", "exit", "export", "false", "printf", "pwd", "set", "test", "true"}
)
"""Harmless shell builtins an allow list never needs to name."""

_SAFE_DEVICES = frozenset(
    {"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/full"}
)
_SAFE_DEVICE_DIRS = ("/dev/fd/", "/dev/shm/", "/dev/tcp/", "/dev/udp/")  # noqa: S108 - not a temp file
_HOME_EXPANSION = re.compile(r'^"?\$\{?HOME\}?"?/?\*?$')


@dataclass(frozen=True)
class CommandPolicy:
    """Which shell commands `execute` may run; `check` says why one may not.

    Commands are judged as they will run, by the shell analyser
    (`shell.analysis.analyse`): every simple command of the line, behind wrappers, in
    substitutions and in nested scripts, with quotes and escapes removed. A command
    line is checked in this order; the first rule that refuses wins:

    1. Dangerous commands (unless `block_dangerous=False`): privilege escalation
       (`sudo`, `su`, `doas`, ...), shutdown and reboot, formatting or partitioning
       disks (`mkfs*`, `fdisk`, ...), writing to a device (`> /dev/sda`,
       `dd of=/dev/...`, `tee /dev/...`; `/dev/null` and the like are fine), recursive
       `rm`, `chmod`, `chown` and `find -delete` of `/`, a top-level directory or a
       home directory however it is reached (`../../..`, `cd / && rm -rf *`,
       `cd ~ && rm -rf .`; and `--no-preserve-root`), and fork bombs. These judge
       what can be known.
    2. `deny` (best effort): a command matching any deny pattern is refused; so is one
       that cannot be known before it runs (a command name built from `$VAR` or
       `$(...)`, `eval` or `sh -c` of a computed script, `source` of a file, a code
       string given to `trap`, `mapfile -C`, `coproc`, `hash -p`, `env -S`, setting
       `BASH_ENV` or `BASH_FUNC_*`, a line that does not parse) when a deny pattern
       could match it, and a command not known as plain (`PLAIN_COMMANDS`) that names
       a denied command among its arguments (an unlisted wrapper).
    3. `allow`: when given, the line must be static (`Analysis.static`: no expansion,
       substitution, arithmetic or computed variable name anywhere, since those can
       run hidden code through an allowed command) and every command must match an
       allow pattern (or be a harmless builtin of `ALWAYS_ALLOWED`). Wrappers that
       only run another command (`env`, `timeout`, `xargs`, `bash -c`, ...) need no
       pattern of their own; `sudo`, `doas`, `setpriv`, `unshare`, ... do.

    A pattern is a command prefix in shell words, each word an `fnmatch` glob: `"curl"`
    matches every `curl` command, `"git push"` matches `git push --force` but not
    `git status`, `"python*"` matches `python3`. The command's name is matched by its
    last path component.

    Args:
        deny: Patterns of commands never run. Default: none.
        allow: Patterns of the only commands that run, or None for any command.
            Default: None.
        block_dangerous: Refuse the dangerous commands listed above. Default: True.

    Raises:
        ValueError: a pattern is empty or not valid shell words.
    """

    deny: Sequence[str] = ()
    allow: Sequence[str] | None = None
    block_dangerous: bool = True

    def __post_init__(self) -> None:
        """Freeze the pattern lists; refuse empty or unbalanced patterns."""
        object.__setattr__(self, "deny", tuple(self.deny))
        if self.allow is not None:
            object.__setattr__(self, "allow", tuple(self.allow))
        for pattern in (*self.deny, *(self.allow or ())):
            command_pattern(pattern)

    def check(self, command: str) -> CommandRefused | None:
        """Return why `command` may not run, or None if it may.

        Args:
            command: The command line, as the model wrote it.

        Returns:
            The refusal (its `rule` names the rule, its `reason` says what matched), or
            None.
        """
        analysis = analyse(command)
        if self.block_dangerous:
            refusal = _dangerous(analysis)
            if refusal is not None:
                return refusal
        for found in analysis.commands:
            refusal = _denied(found, self.deny)
            if refusal is not None:
                return refusal
        if self.allow is not None:
            return _outside_allow_list(analysis, self.allow)
        return None


def _denied(found: SimpleCommand, deny: Sequence[str]) -> CommandRefused | None:
    for pattern in deny:
        match found.could_run(command_pattern(pattern)):
            case Match.YES:
                return CommandRefused(
                    "deny", f"`{found.show()}` matches the deny pattern {pattern!r}"
                )
            case Match.MAYBE:
                return CommandRefused(
                    "deny",
                    f"{found.why_unknown()}, so it cannot be known before it runs and could"
                    f" match the deny pattern {pattern!r}",
                )
            case _:
                pass
    return None


def _outside_allow_list(analysis: Analysis, allow: Sequence[str]) -> CommandRefused | None:
    for found in analysis.commands:
        if found.wrapper:
            continue
        matches = [found.match(command_pattern(p)) for p in allow]
        if Match.YES in matches or found.name in ALWAYS_ALLOWED:
            continue
        if found.unknown is not None or Match.MAYBE in matches:
            return CommandRefused(
                "allow",
                f"{found.why_unknown()}, so it cannot be checked against the allow list",
            )
        allowed = ", ".join(allow) or "none"
        return CommandRefused(
            "allow", f"`{found.show()}` is not one of the allowed commands ({allowed})"
        )
    if not analysis.static:
        return CommandRefused(
            "allow",
            f"{analysis.dynamic[0]}, so what it runs cannot be checked against the allow list;"
            " write every word out",
        )
    return None


# ----- the dangerous commands ----------------------------------------------------------


def _dangerous(analysis: Analysis) -> CommandRefused | None:
    for name in analysis.fork_bombs:
        return CommandRefused(
            "fork_bomb",
            f"the function `{name}` starts copies of itself without end (a fork bomb)",
        )
    for target in analysis.writes:
        if _is_device(target):
            return CommandRefused("device_write", f"writing to the device {target} is not allowed")
    moved = any(found.name == "cd" and _cd_leaves(found) for found in analysis.commands)
    for found in analysis.commands:
        refusal = _dangerous_command(found, moved=moved)
        if refusal is not None:
            return refusal
    return None


def _cd_leaves(found: SimpleCommand) -> bool:
    """Whether a `cd` may go to `/`, a top-level or home directory, or above the workspace."""
    targets = [a for a in found.arguments if a is None or not a.startswith("-") or a == "-"]
    if not targets:
        return True  # `cd` alone goes home
    target = targets[0]
    return target is None or target == "-" or _is_protected(target) or _climbs(target)


def _climbs(path: str) -> bool:
    """Whether a relative path only climbs (`..`, `../../..`, `../*`): toward `/`."""
    if path.startswith(("/", "~")):
        return False
    parts = [p for p in posixpath.normpath(path).split("/") if p not in {"", "."}]
    return bool(parts) and parts[0] == ".." and all(p in {"..", "*", ".*"} for p in parts)


def _reaches_protected(value: str | None, raw: str, *, moved: bool) -> bool:
    """Whether a target names `/`, a top-level or home directory, however spelled."""
    if value is None:
        return _HOME_EXPANSION.match(raw) is not None
    if _is_protected(value) or _climbs(value):
        return True
    return moved and posixpath.normpath(value) in {".", "*", ".*"}


def _dangerous_command(found: SimpleCommand, *, moved: bool) -> CommandRefused | None:  # noqa: PLR0911 - one return per rule
    name = found.name
    args = found.arguments
    if name is None:
        return None
    if name in PRIVILEGED:
        return CommandRefused(
            "privilege", f"`{name}` runs commands with elevated privileges, which is not allowed"
        )
    if (
        name in POWER
        or (name == "init" and args[:1] in (("0",), ("6",)))
        or (name == "systemctl" and {"poweroff", "reboot", "halt", "kexec"} & set(args))
    ):
        return CommandRefused("power", f"`{found.show()}` would stop or restart the machine")
    if name in DISK_TOOLS or name.startswith("mkfs."):
        return CommandRefused("disk", f"`{name}` formats or partitions disks")
    devices = [a for a in args if a is not None and _is_device(_dd_target(name, a))]
    if devices and name in {"dd", "tee", "cp", "shred"}:
        return CommandRefused(
            "device_write", f"writing to the device {_dd_target(name, devices[0])} is not allowed"
        )
    if name in {"rm", "chmod", "chown", "chgrp"}:
        return _recursive_on_protected(found, name, moved=moved)
    if name == "find":
        return _find_on_protected(found, moved=moved)
    return None


def _find_on_protected(found: SimpleCommand, *, moved: bool) -> CommandRefused | None:
    """`find / -delete` (or `-exec rm|chmod ...`) of a protected directory."""
    args = found.arguments
    acts = {"-delete"} & {a for a in args if a is not None} or (
        {"-exec", "-execdir", "-ok", "-okdir"} & {a for a in args if a is not None}
        and {"rm", "chmod", "chown", "chgrp", "shred"} & {a for a in args if a is not None}
    )
    if not acts:
        return None
    for value, word in zip(args, found.words[1:], strict=True):
        if value is not None and value.startswith(("-", "(", "!")):
            break
        if _reaches_protected(value, word.text, moved=moved):
            return CommandRefused(
                "recursive_delete",
                f"`{found.show()}` would delete or change everything under {word.text}, a root,"
                " top-level or home directory; name a directory inside the workspace",
            )
    return None


def _recursive_on_protected(
    found: SimpleCommand, name: str, *, moved: bool
) -> CommandRefused | None:
    args = found.arguments
    raws = [word.text for word in found.words[1:]]
    options: list[str] = []
    targets: list[tuple[str | None, str]] = []
    for value, raw in zip(args, raws, strict=True):
        if value is not None and value.startswith("-") and value != "-" and not targets:
            options.append(value)
        else:
            targets.append((value, raw))
    if "--no-preserve-root" in options:
        return CommandRefused("recursive_delete", f"`{name} --no-preserve-root` is not allowed")
    recursive = "--recursive" in options or any(
        not o.startswith("--") and ("r" in o or "R" in o) for o in options
    )
    if not recursive:
        return None
    for value, raw in targets:
        if _reaches_protected(value, raw, moved=moved):
            action = "delete" if name == "rm" else "change"
            return CommandRefused(
                "recursive_delete" if name == "rm" else "recursive_permissions",
                f"`{name}` would recursively {action} {raw}, a root, top-level or home"
                " directory; name a directory inside the workspace",
            )
    return None


def _dd_target(name: str, argument: str) -> str:
    if name == "dd":
        return argument[3:] if argument.startswith("of=") else ""
    return argument


def _is_device(path: str) -> bool:
    normal = posixpath.normpath(re.sub("/+", "/", path)) if path else ""
    if not normal.startswith("/dev/"):
        return False
    return normal not in _SAFE_DEVICES and not normal.startswith(_SAFE_DEVICE_DIRS)


def _is_protected(path: str) -> bool:
    """Whether `path` is `/`, a top-level directory (or `/*`), or a home directory."""
    collapsed = re.sub("/+", "/", path)
    if collapsed.startswith("/"):
        return posixpath.normpath(collapsed).count("/") <= 1
    if collapsed.startswith("~"):
        _, _, rest = collapsed.partition("/")
        return posixpath.normpath(rest or ".") in {".", "*", ".*"}
    return False


__all__ = ["ALWAYS_ALLOWED", "DISK_TOOLS", "POWER", "PRIVILEGED", "CommandPolicy"]
