"""CommandPolicy: which shell commands the `execute` tool may run.

The command line goes through the one shell analyser (`shell.policy.analysis`), and every
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
(see `shell.sandbox.sandbox` and docs/sandbox.md).

Example:
    ```python
    from langchain_fstools import FileToolkit, LocalBackend
    from langchain_fstools.shell.policy.policy import CommandPolicy

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
from langchain_fstools.shell.policy.analysis import (
    Analysis,
    Match,
    SimpleCommand,
    Word,
    analyse,
    command_pattern,
)
from langchain_fstools.shell.policy.places import places, protected, resolved

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
"""Harmless shell builtins an allow list never needs to name, in a line that writes no
file through a redirection (`printf ... >> .git/config` needs `printf` allowed)."""

_SAFE_DEVICES = frozenset(
    {"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/full"}
)
_SAFE_DEVICE_DIRS = ("/dev/fd/", "/dev/shm/", "/dev/tcp/", "/dev/udp/")  # noqa: S108 - not a temp file


@dataclass(frozen=True)
class CommandPolicy:
    """Which shell commands `execute` may run; `check` says why one may not.

    Commands are judged as they will run, by the shell analyser
    (`shell.policy.analysis.analyse`): every simple command of the line, behind wrappers, in
    substitutions and in nested scripts, with quotes and escapes removed. A command
    line is checked in this order; the first rule that refuses wins:

    1. Dangerous commands (unless `block_dangerous=False`): privilege escalation
       (`sudo`, `su`, `doas`, ...), shutdown and reboot, formatting or partitioning
       disks (`mkfs*`, `fdisk`, ...), writing to a device (`> /dev/sda`,
       `dd of=/dev/...`, `tee /dev/...`; `/dev/null` and the like are fine), recursive
       `rm`, `chmod`, `chown` and `find -delete` of `/`, a top-level directory or a
       home directory however it is reached (`../../..`, `/home/*`, `cd / && rm -rf *`,
       `pushd /; rm -rf *`, `cd ~ && rm -rf .`; and `--no-preserve-root`; see
       `shell.policy.places`), and fork bombs. What cannot be known fails closed: a target
       computed at run time (`$X`, `$(pwd)/..`, `${HOME:?}/`), or a relative one after
       a change to a folder not known before the line runs (`cd "$D"`, `popd`,
       `CDPATH=/ cd etc`).
    2. `deny` (best effort): a command matching any deny pattern is refused; so is one
       that cannot be known before it runs (a command name built from `$VAR` or
       `$(...)`, `eval` or `sh -c` of a computed script, `source` of a file, a code
       string given to `trap`, `mapfile -C`, `coproc`, `hash -p`, `env -S`, setting
       `BASH_ENV` or `BASH_FUNC_*`, a line that does not parse) when a deny pattern
       could match it, one carrying code the analyser cannot read (`python3 -c`,
       `perl -e`, an awk `system()`, `sed e`, `git -c alias.x=!...`,
       `tar --to-command`, `ssh -o ProxyCommand=...`, `man -P`, `vim -c`; see
       `shell.policy.code_strings`) under any deny pattern, and a command not known as plain
       (`PLAIN_COMMANDS`) that names a denied command among its arguments (an
       unlisted wrapper, `uv run`, `npm exec`).
    3. `allow`: when given, the line must be static (`Analysis.static`: no expansion,
       substitution, arithmetic, assignment (`VAR=... cmd`, `export VAR=...`, `read`)
       or computed variable name anywhere, since those can run hidden code through an
       allowed command) and every command must match an allow pattern (or be a
       harmless builtin of `ALWAYS_ALLOWED`, in a line without a redirection to a
       file). Wrappers that only run another command (`env`, `timeout`, `xargs`,
       `bash -c`, ...) need no pattern of their own; `sudo`, `doas`, `setpriv`,
       `unshare`, ... do.

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
    files = [target for target in analysis.writes if not _is_sink(target)]
    for found in analysis.commands:
        if found.wrapper:
            continue
        matches = [found.match(command_pattern(p)) for p in allow]
        if Match.YES in matches:
            continue
        if found.name in ALWAYS_ALLOWED and not files:
            continue
        if found.name in ALWAYS_ALLOWED:
            return CommandRefused(
                "allow",
                f"`{found.show()}` needs no allow pattern only in a line without a redirection"
                f" to a file, and this line writes {files[0]}; write files with the file tools",
            )
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
    where = places(analysis)
    for found in analysis.commands:
        refusal = _dangerous_command(found, where)
        if refusal is not None:
            return refusal
    return None


def _unsafe_target(target: Word, where: Sequence[str | None]) -> str | None:
    """Why a recursive command's target may be a protected folder, or None.

    "computed" (its value is only known at run time), "moved" (relative, after a
    change to an unknown folder), or the protected path it is or reaches.
    """
    if target.value is None:
        return "computed"
    path = target.pattern or target.value
    for place in where:
        reached = resolved(path, place)
        if reached is None:
            return "moved"
        if protected(reached, pattern=target.pattern is not None):
            return reached
    return None


def _target_refusal(rule: str, command: str, action: str, target: Word, why: str) -> CommandRefused:
    """The refusal of `command` acting recursively on `target` (see `_unsafe_target`)."""
    raw = target.text
    match why:
        case "computed":
            said = f"the target {raw} is computed at run time and could be"
            fix = "write the path out"
        case "moved":
            said = f"the line changes to a folder not known before it runs, so {raw} could be"
            fix = "name the path from the workspace or in full"
        case _:
            said = f"{raw} is" if why in {raw, target.pattern} else f"{raw} reaches {why},"
            fix = "name a directory inside the workspace"
    return CommandRefused(
        rule,
        f"`{command}` would recursively {action} everything under {raw}; {said} a root,"
        f" top-level or home directory; {fix}",
    )


def _dangerous_command(found: SimpleCommand, where: Sequence[str | None]) -> CommandRefused | None:  # noqa: PLR0911 - one return per rule
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
        return _recursive_on_protected(found, name, where)
    if name == "find":
        return _find_on_protected(found, where)
    return None


def _find_on_protected(found: SimpleCommand, where: Sequence[str | None]) -> CommandRefused | None:
    """`find / -delete` (or `-exec rm|chmod ...`) of a protected directory."""
    args = {a for a in found.arguments if a is not None}
    acts = {"-delete"} & args or (
        {"-exec", "-execdir", "-ok", "-okdir"} & args
        and {"rm", "chmod", "chown", "chgrp", "shred"} & args
    )
    if not acts:
        return None
    for word in found.words[1:]:
        if word.value is not None and word.value.startswith(("-", "(", "!")):
            break
        why = _unsafe_target(word, where)
        if why is not None:
            return _target_refusal("recursive_delete", found.show(), "delete or change", word, why)
    return None


def _recursive_on_protected(
    found: SimpleCommand, name: str, where: Sequence[str | None]
) -> CommandRefused | None:
    options: list[str] = []
    targets: list[Word] = []
    for word in found.words[1:]:
        value = word.value
        if value is not None and value.startswith("-") and value != "-" and not targets:
            options.append(value)
        else:
            targets.append(word)
    if "--no-preserve-root" in options:
        return CommandRefused("recursive_delete", f"`{name} --no-preserve-root` is not allowed")
    recursive = "--recursive" in options or any(
        not o.startswith("--") and ("r" in o or "R" in o) for o in options
    )
    if not recursive:
        return None
    for target in targets:
        why = _unsafe_target(target, where)
        if why is not None:
            rule = "recursive_delete" if name == "rm" else "recursive_permissions"
            action = "delete" if name == "rm" else "change"
            return _target_refusal(rule, found.show(), action, target, why)
    return None


def _dd_target(name: str, argument: str) -> str:
    if name == "dd":
        return argument[3:] if argument.startswith("of=") else ""
    return argument


def _is_sink(path: str) -> bool:
    """Whether a redirection to `path` writes no file (`/dev/null`, `/dev/stderr`, ...)."""
    normal = posixpath.normpath(re.sub("/+", "/", path)) if path else ""
    return normal in _SAFE_DEVICES or normal.startswith("/dev/fd/")


def _is_device(path: str) -> bool:
    normal = posixpath.normpath(re.sub("/+", "/", path)) if path else ""
    if not normal.startswith("/dev/"):
        return False
    return normal not in _SAFE_DEVICES and not normal.startswith(_SAFE_DEVICE_DIRS)


__all__ = ["ALWAYS_ALLOWED", "DISK_TOOLS", "POWER", "PRIVILEGED", "CommandPolicy"]
