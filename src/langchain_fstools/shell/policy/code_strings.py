"""Code the shell analyser cannot read: programs a command takes as argument text.

`python3 -c '...'` runs Python the analyser does not parse, so it may run any command;
so may `perl -e`, `node -e`, an awk program calling `system()`, a sed script with the
`e` command, `git -c alias.x='!...'`, `tar --to-command`, `ssh -o ProxyCommand=...`,
`man -P`, `vim -c`, `make --eval` and their like. `code_string` says why a command
carries such code, or None; the analyser marks the command (`SimpleCommand.code`) and
every deny pattern may then match it, so a deny rule fails closed on it. An allow rule
that names the command still allows it: allowing `python` allows what Python runs.

What is recognised:

1. Interpreters (`INTERPRETERS`: Python, Perl, Ruby, Node, PHP, Lua, ...) given a
   program as an option (`-c`, `-e`, `--eval`, bundled as in `perl -ne`), or reading
   it from standard input (no script operand: `python3 <<EOF`, `curl x | python3`),
   or given a computed word before their script operand (it could be `-c`).
2. awk (`awk`, `gawk`, `mawk`, `nawk`) whose program calls `system`, pipes to or from
   a command (`|`), or loads an extension (`@load`, `-l`); a computed program.
3. sed (`sed`, `gsed`) whose script has the `e` command or the `e` flag of `s`, or
   cannot be read (an unknown command, a computed script); not under `--sandbox`.
4. Options whose value is a command or code (`CODE_OPTIONS`): `tar --to-command`,
   `rsync -e`, `man -P`, `vim -c`/`+cmd`, `gdb -ex`, `emacs --eval`, `make --eval`,
   `zip -TT`, `scp -S`, ...; `ssh`/`scp`/`sftp -o` with a `*Command` or `Match`
   option; `less +'!cmd'`; `make SHELL=...`.
5. git: `-c` of any key but a few that run nothing (`SAFE_GIT_KEYS`), `--config-env`,
   `--exec-path`, `--upload-pack`, `--receive-pack`, `--template`, `rebase -x`,
   `difftool -x`, `submodule foreach`, `bisect run`, `filter-branch`.

What a command runs from its own files (`python script.py`, a Makefile, `awk -f`) is
not here: that is for the sandbox to contain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Sequence


@dataclass(frozen=True, slots=True)
class Interpreter:
    """How an interpreter takes its program.

    Attributes:
        code: Options whose value is program text (`-c`, `-e`, `--eval`).
        valued: Other options that take a value (the next word, or attached).
        ends: Options after which the rest belongs to something else (`python -m`).
        noop: Options with which it runs no program (`--version`).
    """

    code: frozenset[str]
    valued: frozenset[str] = frozenset()
    ends: frozenset[str] = frozenset()
    noop: frozenset[str] = frozenset({"--version", "-V", "--help", "-h"})


INTERPRETERS: Final[dict[str, Interpreter]] = {
    "python": Interpreter(frozenset({"-c"}), frozenset({"-W", "-X", "-Q"}), frozenset({"-m"})),
    "perl": Interpreter(
        frozenset({"-e", "-E"}),
        frozenset({"-I", "-x", "-d", "-D"}),
        noop=frozenset({"-v", "-V", "--version", "-h", "--help"}),
    ),
    "ruby": Interpreter(frozenset({"-e"}), frozenset({"-r", "-I", "-C", "-E", "--encoding"})),
    "node": Interpreter(
        frozenset({"-e", "--eval", "-p", "--print"}),
        frozenset({"-r", "--require", "--import", "--loader", "--experimental-loader", "-C"})
        | frozenset({"--conditions", "--input-type", "--env-file", "--title"}),
        noop=frozenset({"-v", "--version", "-h", "--help"}),
    ),
    "bun": Interpreter(frozenset({"-e", "--eval", "-p", "--print"}), frozenset({"-r"})),
    "php": Interpreter(frozenset({"-r", "-B", "-R", "-E"}), frozenset({"-c", "-d", "-z"})),
    "lua": Interpreter(frozenset({"-e"}), frozenset({"-l"})),
    "Rscript": Interpreter(frozenset({"-e"})),
    "julia": Interpreter(frozenset({"-e", "-E", "--eval", "--print"}), frozenset({"-L"})),
    "osascript": Interpreter(frozenset({"-e"}), frozenset({"-l"})),
    "pwsh": Interpreter(
        frozenset({"-c", "-command", "-Command", "-encodedcommand", "-EncodedCommand", "-ec"})
    ),
    "expect": Interpreter(frozenset({"-c"}), frozenset({"-f"})),
    "tclsh": Interpreter(frozenset()),
    "wish": Interpreter(frozenset()),
}
"""Interpreters by family (`python3.12`, `pypy3` are `python`; see `family`)."""

CODE_OPTIONS: Final[dict[str, frozenset[str]]] = {
    "tar": frozenset(
        {"--checkpoint-action", "--to-command", "--use-compress-program", "-I"}
        | {"--info-script", "--new-volume-script", "-F", "--rsh-command", "--rmt-command"}
    ),
    "rsync": frozenset({"-e", "--rsh", "--rsync-path"}),
    "man": frozenset({"-P", "--pager", "-H", "--html"}),
    "vim": frozenset({"-c", "--cmd"}),
    "gdb": frozenset({"-ex", "--ex", "-eval-command", "--eval-command", "-iex", "--iex"})
    | frozenset({"-init-eval-command", "--init-eval-command"}),
    "emacs": frozenset({"--eval", "-eval", "--execute", "-execute"}),
    "emacsclient": frozenset({"-e", "--eval"}),
    "make": frozenset({"--eval", "-E"}),
    "zip": frozenset({"-TT", "--unzip-command"}),
    "scp": frozenset({"-S"}),
    "sftp": frozenset({"-S", "-D"}),
    "awk": frozenset({"-l", "--load"}),
}
"""Options whose value is a command or code, by family."""

SAFE_GIT_KEYS: Final = frozenset(
    {"user.name", "user.email", "init.defaultbranch", "core.quotepath", "core.autocrlf"}
    | {"core.safecrlf", "core.filemode", "core.eol", "safe.directory", "push.default"}
    | {"pull.rebase", "pull.ff", "fetch.prune", "protocol.version", "i18n.logoutputencoding"}
    | {"log.date", "merge.conflictstyle", "diff.noprefix", "status.short", "column.ui"}
)
"""`git -c` keys that run no program (and every `color.*` and `advice.*`)."""

_FAMILIES: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (re.compile(r"(python|pypy)[0-9.]*"), "python"),
    (re.compile(r"perl[0-9.]*"), "perl"),
    (re.compile(r"ruby[0-9.]*"), "ruby"),
    (re.compile(r"nodejs|node[0-9.]*"), "node"),
    (re.compile(r"php[0-9.]*"), "php"),
    (re.compile(r"lua(jit)?[0-9.]*"), "lua"),
    (re.compile(r"powershell|pwsh"), "pwsh"),
    (re.compile(r"g?awk|mawk|nawk|busybox-awk"), "awk"),
    (re.compile(r"g?sed"), "sed"),
    (re.compile(r"n?vim|vi|view|ex|gvim|vimdiff|rvim|gview"), "vim"),
    (re.compile(r"autossh"), "ssh"),
    (re.compile(r"emacs[0-9.]*"), "emacs"),
    (re.compile(r"g?make|gmake"), "make"),
    (re.compile(r"gtar|bsdtar"), "tar"),
)
_SSH_CODE_KEYS: Final = frozenset(
    {"proxycommand", "localcommand", "knownhostscommand", "match", "permitlocalcommand"}
)
_AWK_CODE = re.compile(r"system\s*\(|\||@load")
_BUNDLING: Final = frozenset({"tar", "rsync", "scp", "sftp", "man"})
"""Commands whose short options bundle (`tar -xIf`, `rsync -avze`)."""
_MAKE_CODE_VARIABLES: Final = frozenset({"SHELL", ".SHELLFLAGS", "MAKEFLAGS", "MAKEFILES"})
_GIT_VALUED: Final = frozenset(
    {"-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--list-cmds"}
)
_GIT_CODE_OPTIONS: Final = frozenset(
    {"--upload-pack", "--receive-pack", "--exec", "--template", "--extcmd"}
    | {"--open-files-in-pager"}
)
_GIT_CODE_SUBCOMMANDS: Final = {
    "filter-branch": "`git filter-branch` runs shell code",
    "filter-repo": "`git filter-repo` runs Python code",
}
_GIT_SCRIPTED: Final = {"submodule": "foreach", "bisect": "run"}
_GIT_SHORT_CODE: Final = {"rebase": "-x", "difftool": "-x", "grep": "-O"}
"""Short options whose value is a command, by git subcommand (`grep -O` is a pager)."""


def family(name: str) -> str:
    """The family of a command name (`python3.12` is `python`, `gawk` is `awk`)."""
    for pattern, found in _FAMILIES:
        if pattern.fullmatch(name):
            return found
    return name


def code_string(name: str, arguments: Sequence[str | None], *, stdin: bool = False) -> str | None:
    """Why the command `name arguments` runs code the analyser cannot read, or None.

    Args:
        name: The command's name (its last path component).
        arguments: Its arguments' values (None where computed at run time).
        stdin: Whether a here-string or here-document feeds it.
    """
    kind = family(name)
    if kind in INTERPRETERS:
        return _interpreter(kind, INTERPRETERS[kind], arguments)
    reason: str | None = None
    if kind == "awk":
        reason = _awk(arguments)
    elif kind == "sed":
        reason = _sed(arguments)
    elif kind == "git":
        reason = _git(arguments)
    elif kind in {"ssh", "scp", "sftp"}:
        reason = _ssh(kind, arguments)
    elif kind in {"less", "more"}:
        reason = _less(kind, arguments)
    elif kind == "vim" and (stdin or any(_vim_command(a) for a in arguments)):
        reason = "`vim` runs editor commands, which can run any command"
    elif kind == "make" and any(
        a is not None and a.partition("=")[0] in _MAKE_CODE_VARIABLES for a in arguments
    ):
        reason = "`make` is given a shell or its flags, which can run any command"
    if reason is None and kind in CODE_OPTIONS:
        reason = _code_option(kind, CODE_OPTIONS[kind], arguments)
    return reason


def _interpreter(kind: str, spec: Interpreter, arguments: Sequence[str | None]) -> str | None:
    """`python3 -c CODE`, `perl -ne CODE`, `python3 <<EOF`, `python3 $ARGS`."""
    program = f"`{kind}` is given a program as text ({{}}), which can run any command"
    noop = False
    index = 0
    while index < len(arguments):
        value = arguments[index]
        if value is None:
            return f"`{kind}` is given a computed word where an option could be"
        if value == "-":
            return program.format("read from standard input")
        if value == "--" or not value.startswith("-"):
            return None  # a script operand: a file the command runs
        found = _option(value, spec)
        if found == "code":
            return program.format(value)
        if found == "ends":
            return None
        noop = noop or value in spec.noop
        index += 2 if found == "valued" else 1
    return None if noop else program.format("read from standard input")


def _option(value: str, spec: Interpreter) -> str | None:  # noqa: PLR0911 - one per outcome
    """What an interpreter option is: "code", "ends", "valued" (takes the next word), None."""
    if value.startswith("--") or value in spec.code | spec.ends | spec.valued:
        option = value.partition("=")[0]
        if option in spec.code:
            return "code"
        if option in spec.ends:
            return "ends"
        return "valued" if option in spec.valued and "=" not in value else None
    for index, letter in enumerate(value[1:], start=1):
        option = f"-{letter}"
        if option in spec.code:
            return "code"
        if option in spec.ends:
            return "ends"
        if option in spec.valued:
            return "valued" if index == len(value) - 1 else None
    return None


def _code_option(kind: str, options: frozenset[str], arguments: Sequence[str | None]) -> str | None:
    """An option of `options` anywhere: `--opt`, `--opt=v`, `-o v`, `-ov`, bundled `-xo`."""
    short = [o for o in options if len(o) == 2]  # noqa: PLR2004 - `-o`
    for value in arguments:
        if value is None or not value.startswith("-") or value in {"-", "--"}:
            continue
        option = value.partition("=")[0]
        found = option in options
        if not found and not value.startswith("--"):
            found = any(value.startswith(o) for o in short) or (
                kind in _BUNDLING and any(f"-{letter}" in options for letter in value[1:])
            )
        if found:
            return f"`{kind} {option}` takes a command or code to run"
    return None


def _vim_command(value: str | None) -> bool:
    """`+cmd` (not `+N` or `+/pattern`) runs an editor command; a computed word may."""
    if value is None:
        return True
    return value.startswith("+") and not re.fullmatch(r"\+[0-9]*|\+/.*", value)


def _less(kind: str, arguments: Sequence[str | None]) -> str | None:
    for value in arguments:
        if value is None or (value.startswith("+") and ("!" in value or "|" in value)):
            return f"`{kind} +...` runs a command given as an initial command"
    return None


def _ssh(kind: str, arguments: Sequence[str | None]) -> str | None:
    """`ssh -o ProxyCommand=...` (or `-oLocalCommand ...`, `Match exec`)."""
    for index, value in enumerate(arguments):
        if value is None:
            continue
        option: str | None = None
        if value == "-o" and index + 1 < len(arguments):
            option = arguments[index + 1]
            if option is None:
                return f"`{kind} -o` is given a computed option"
        elif value.startswith("-o") and len(value) > 2:  # noqa: PLR2004
            option = value[2:]
        if option is not None:
            key = re.split(r"[=\s]", option.strip(), maxsplit=1)[0].lower()
            if key in _SSH_CODE_KEYS:
                return f"`{kind} -o {key}` runs a local command"
    return None


@dataclass(frozen=True, slots=True)
class _Scripted:
    """How awk or sed takes its program: an option's value, a file, or the first operand."""

    program: frozenset[str]
    file: frozenset[str]
    valued: frozenset[str]
    suffixed: frozenset[str] = frozenset()
    """Short options whose value can only be attached (`sed -i.bak`)."""
    bundles: bool = False


_AWK: Final = _Scripted(
    frozenset({"-e", "--source"}),
    frozenset({"-f", "--file", "-E", "--exec"}),
    frozenset({"-F", "-v", "--assign", "--field-separator"}),
)
_SED: Final = _Scripted(
    frozenset({"-e", "--expression"}),
    frozenset({"-f", "--file"}),
    frozenset({"-l", "--line-length"}),
    frozenset({"-i"}),
    bundles=True,
)


def _programs(spec: _Scripted, arguments: Sequence[str | None]) -> list[str | None]:
    """The program texts a command is given (None: computed, so unknown)."""
    programs: list[str | None] = []
    from_file = False
    index = 0
    while index < len(arguments):
        value = arguments[index]
        if value is None:
            return [None]
        if value in {"-", "--"} or not value.startswith("-"):
            if not programs and not from_file:
                programs.append(_at(arguments, index + (value == "--")))
            break
        option, equals, attached = value.partition("=")
        if spec.bundles and not value.startswith("--"):
            option, attached = _bundled(value, spec)
            equals = "=" if attached else ""
        if option in spec.program:
            programs.append(attached if equals else _at(arguments, index + 1))
        from_file = from_file or option in spec.file
        takes = not equals and option in spec.program | spec.file | spec.valued
        index += 2 if takes else 1
    return programs


def _bundled(value: str, spec: _Scripted) -> tuple[str, str]:
    """The option of a bundle (`-ne`, `-i.bak`) that takes a value, and what is attached."""
    for position, letter in enumerate(value[1:], start=1):
        option = f"-{letter}"
        if option in spec.program | spec.file | spec.valued | spec.suffixed:
            return option, value[position + 1 :]
    return value, ""


def _awk(arguments: Sequence[str | None]) -> str | None:
    """An awk program that runs commands (`system`, `|`, `@load`), or a computed one."""
    for program in _programs(_AWK, arguments):
        if program is None or _AWK_CODE.search(program):
            return "the awk program runs commands (`system`, `|` or `@load`), or is computed"
    return None


def _at(arguments: Sequence[str | None], index: int) -> str | None:
    return arguments[index] if index < len(arguments) else ""


def _sed(arguments: Sequence[str | None]) -> str | None:
    """A sed script with the `e` command or flag, or one that cannot be read."""
    if "--sandbox" in arguments:
        return None
    for script in _programs(_SED, arguments):
        if script is None or _sed_runs(script):
            return "the sed script runs a command (`e`), or cannot be read"
    return None


_SED_SIMPLE: Final = frozenset("=dDgGhHnNpPxzFlLqQ")
_SED_KNOWN: Final = _SED_SIMPLE | frozenset("{}syaicrRwW#btT:")
"""The sed commands read here (`e` is not: it runs a command)."""


def _sed_runs(script: str) -> bool:
    """Whether a sed script may run a command (the `e` command or flag); unreadable: True."""
    index = 0
    while True:
        while index < len(script) and script[index] in " \t\n;":
            index += 1
        if index >= len(script):
            return False
        after = _sed_command(script, _sed_address(script, index))
        if after is None:
            return True
        index = after


def _sed_command(script: str, index: int) -> int | None:
    """Past the sed command at `index`; None when it runs a command or cannot be read."""
    if index < 0 or index >= len(script):
        return None if index < 0 else index
    char = script[index]
    index += 1
    if char not in _SED_KNOWN:
        return None  # `e`, or a command not known here
    if char in "sy":
        return _sed_replacement(script, index, flags=char == "s")
    if char in "aicrRwW#":
        return _line_end(script, index)
    label = char in "btT:"
    while index < len(script) and (
        script[index] not in ";\n" if label else script[index].isdigit()
    ):
        index += 1
    return index


def _sed_replacement(script: str, index: int, *, flags: bool) -> int | None:
    """Past `s/re/new/FLAGS` or `y/abc/xyz/`; None when it has the `e` flag or is unended."""
    index = _sed_delimited(script, index, parts=2)
    while flags and 0 <= index < len(script) and script[index] in "gpiImM0123456789ew":
        if script[index] == "e":
            return None
        if script[index] == "w":
            return _line_end(script, index)
        index += 1
    return None if index < 0 else index


def _line_end(script: str, index: int) -> int:
    """Past a text or file name running to the end of the line (backslash-newline joins)."""
    while index < len(script) and script[index] != "\n":
        index += 2 if script[index] == "\\" else 1
    return index


def _sed_address(script: str, index: int) -> int:
    """Past the address (`3`, `$`, `/re/I`, `\\%re%`, `a,b`, `first~step`, `!`); -1: unreadable."""
    for _ in range(2):
        if index < len(script) and (script[index].isdigit() or script[index] in "$+~"):
            while index < len(script) and (script[index].isdigit() or script[index] in "$+~"):
                index += 1
        elif index < len(script) and script[index] in "/\\":
            if script[index] == "\\":
                index += 1
            index = _sed_delimited(script, index, parts=1)
            if index < 0:
                return -1
            while index < len(script) and script[index] in "IM":
                index += 1
        if index < len(script) and script[index] == ",":
            index += 1
            continue
        break
    while index < len(script) and script[index] in " \t!":
        index += 1
    return index


def _sed_delimited(script: str, index: int, *, parts: int) -> int:
    """Past `parts` parts ended by the delimiter at `index` (escapes skipped); -1: unended."""
    if index >= len(script) or script[index] in "\n\\":
        return -1
    delimiter = script[index]
    index += 1
    for _ in range(parts):
        while index < len(script) and script[index] != delimiter:
            index += 2 if script[index] == "\\" else 1
        if index >= len(script):
            return -1
        index += 1
    return index


def _git(arguments: Sequence[str | None]) -> str | None:  # noqa: C901, PLR0911 - git's forms
    """`git -c KEY=...` of a key that can run a program, and git's command-running options."""
    index = 0
    while index < len(arguments):
        value = arguments[index]
        if value is None:
            return "`git` is given a computed option"
        if value == "-c":
            reason = _git_key(_at(arguments, index + 1))
            if reason is not None:
                return reason
            index += 2
            continue
        if value.startswith(("--config-env", "--exec-path=")):
            return f"`git {value.partition('=')[0]}` can make git run any program"
        if not value.startswith("-"):
            break
        index += 2 if value in _GIT_VALUED else 1
    subcommand = _at(arguments, index)
    rest = arguments[index + 1 :]
    if subcommand in _GIT_CODE_SUBCOMMANDS:
        return _GIT_CODE_SUBCOMMANDS[subcommand]
    if subcommand in _GIT_SCRIPTED and _GIT_SCRIPTED[subcommand] in rest:
        return f"`git {subcommand} {_GIT_SCRIPTED[subcommand]}` runs a command"
    for option in rest:
        if option is None:
            continue
        name = option.partition("=")[0]
        short = _GIT_SHORT_CODE.get(subcommand or "")
        if name in _GIT_CODE_OPTIONS or (short is not None and option.startswith(short)):
            return f"`git {subcommand} {name}` runs a command"
        if subcommand == "clone" and name in {"-c", "--config"}:
            return "`git clone --config` can make git run any program"
    return None


def _git_key(setting: str | None) -> str | None:
    if setting is None:
        return "`git -c` is given a computed setting"
    key = setting.partition("=")[0].lower()
    if key in SAFE_GIT_KEYS or key.startswith(("color.", "advice.")):
        return None
    return f"`git -c {key}` can make git run a program (an alias, a hook, a filter, a pager)"


__all__ = ["CODE_OPTIONS", "INTERPRETERS", "SAFE_GIT_KEYS", "Interpreter", "code_string", "family"]
