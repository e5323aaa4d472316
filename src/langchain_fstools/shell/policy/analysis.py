"""The one shell analyser: which simple commands a bash command line will run.

`analyse` parses a command line with tree-sitter-bash and lists every simple command
it runs, as it will run: each word with its quotes and backslashes removed
(`\\rm`, `'rm'`, `"r"m`, `$'\\x72m'` are all `rm`) and the command named by its last
path component (`/bin/rm` is `rm`). Commands are found

1. in lists, pipelines, subshells, groups, `if`/`for`/`while`/`case` bodies, function
   bodies, with any redirections and here-strings;
2. inside command substitutions (`$(...)`, backticks) and process substitutions,
   wherever they appear (arguments, assignments, the command name, here-documents);
3. behind wrappers, which are listed themselves and then the command they run:
   `env` (with `VAR=x` assignments and options), `command`, `builtin`, `exec`, `nice`,
   `nohup`, `timeout`, `time`, `stdbuf`, `setsid`, `ionice`, `chroot`, `sudo`,
   `doas`, `xargs` (whose command gets more arguments at run time: `open_ended`),
   and `find -exec`/`-execdir`/`-ok`/`-okdir`;
4. in the scripts of `bash`/`sh`/`zsh`/... `-c '...'`, `su -c '...'`, `eval '...'`,
   `env -S '...'`, alias values, and scripts fed to a shell by a here-string or a
   here-document, which are parsed in turn (up to `MAX_DEPTH` levels).

What cannot be known before the line runs is listed as an `unknown` command, which
every command pattern may match (`Match.MAYBE`), so that a rule fails closed: a
command name built from `$VAR`, `$(...)` or a file-name pattern (`r?`); `eval` or
`sh -c` of a computed script; `source`/`.` of a file; a shell reading a script file
or its standard input; a line that does not parse; nesting deeper than `MAX_DEPTH`.
A command carrying code the analyser cannot read (`python3 -c`, an awk `system()`,
`sed e`, `git -c alias.x=!...`; see `shell.policy.code_strings`) is marked (`code`): every
deny pattern may match it (`SimpleCommand.could_run`).

A line is static (`Analysis.static`) when every word of every command is known before
it runs and it sets no variable (`VAR=x cmd`, `VAR=x;`, `export`, `env VAR=x`, a `for`
variable, `read`): any program may read a variable (git reads `XDG_CONFIG_HOME`), so
only a static line can be allowed by a rule.

Consumers: the command policy (`shell.policy.policy`), the permission rules
(`permissions.rules.Permission(commands=...)`) and the apply_patch invocation parser
(`patch.invocation`), which use `parse` and `word` for the tree itself.
"""

from __future__ import annotations

import fnmatch
import itertools
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from enum import IntEnum
from functools import cache
from typing import TYPE_CHECKING

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from langchain_fstools.shell.policy.code_strings import code_string

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

MAX_DEPTH = 4
"""How many scripts deep (`bash -c "sh -c '...'"`) commands are looked for."""

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"})
"""Shells whose scripts are parsed in turn."""

_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    # name: (options that take a value, positional arguments before the command)
    "env": (frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}), 0),
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "nohup": (frozenset(), 0),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata", "-p", "-P", "-u"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "setsid": (frozenset(), 0),
    "chroot": (frozenset({"--userspec", "--groups"}), 1),
    "sudo": (
        frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user"}),
        0,
    ),
    "doas": (frozenset({"-u", "-C"}), 0),
    "xargs": (
        frozenset({"-I", "-n", "-P", "-d", "-E", "-L", "-s", "-a", "--max-args", "--delimiter"}),
        0,
    ),
    "flock": (frozenset({"-w", "--wait", "--timeout", "-E", "--conflict-exit-code"}), 1),
    "setpriv": (
        frozenset(
            {
                "--reuid",
                "--regid",
                "--ruid",
                "--euid",
                "--rgid",
                "--egid",
                "--groups",
                "--inh-caps",
                "--ambient-caps",
                "--bounding-set",
                "--securebits",
                "--pdeathsig",
                "--selinux-label",
                "--apparmor-profile",
                "--landlock-access",
                "--landlock-rule",
            }
        ),
        0,
    ),
    "unshare": (
        frozenset(
            {"-S", "--setuid", "-G", "--setgid", "-R", "--root", "-w", "--wd", "--map-user"}
            | {"--map-group", "--map-users", "--map-groups", "--propagation", "--monotonic"}
            | {"--boottime"}
        ),
        0,
    ),
    "nsenter": (
        frozenset({"-t", "--target", "-S", "--setuid", "-G", "--setgid", "-w", "--wd", "-r"})
        | frozenset({"--root"}),
        0,
    ),
    "taskset": (frozenset(), 1),
    "chrt": (frozenset({"-T", "--sched-runtime", "-P", "--sched-period", "-D"}), 1),
    "prlimit": (frozenset({"-p", "--pid", "-o", "--output"}), 0),
    "strace": (
        frozenset({"-o", "-e", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-P", "-S", "-X"})
        | frozenset({"-U"}),
        0,
    ),
    "runuser": (
        frozenset({"-u", "--user", "-g", "--group", "-G", "--supp-group", "-s", "--shell", "-w"}),
        0,
    ),
    "pkexec": (frozenset({"--user"}), 0),
    "busybox": (frozenset(), 0),
    "watch": (frozenset({"-n", "--interval", "-q", "--equexit"}), 0),
}
_TRANSPARENT = frozenset(_WRAPPERS) - {
    "sudo",
    "doas",
    "chroot",
    "setpriv",
    "unshare",
    "nsenter",
    "runuser",
    "pkexec",
}
"""Wrappers that add no power of their own; `sudo`, `doas`, `chroot`, ... do."""
_SCRIPT_OPTIONS = {
    "su": frozenset({"-c", "--command"}),
    "runuser": frozenset({"-c", "--command"}),
    "flock": frozenset({"-c", "--command"}),
    "script": frozenset({"-c", "--command"}),
}
"""Options whose value is a command line to run."""
_NO_COMMAND_OPTIONS = {"taskset": {"-p", "--pid"}, "chrt": {"-p", "--pid"}}
"""Options with which a wrapper acts on a running process and runs no command."""
SINK_VARIABLES = frozenset(
    {"BASH_ENV", "ENV", "BASH_CMDS", "BASH_ALIASES", "PROMPT_COMMAND", "PS0", "PS1", "PS2"}
    | {"PS3", "PS4", "SHELLOPTS", "BASHOPTS", "BASH_LOADABLES_PATH", "EXECIGNORE"}
)
"""Variables whose value bash runs, or reads as code or configuration (and `BASH_FUNC_*`)."""
LOADER_VARIABLES = frozenset(
    {"PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "PYTHONPATH", "PYTHONSTARTUP"}
    | {"PYTHONHOME", "NODE_OPTIONS", "NODE_PATH", "PERL5OPT", "PERL5LIB", "RUBYOPT", "CDPATH"}
    | {"GLOBIGNORE", "IFS", "SHELL", "EDITOR", "VISUAL", "PAGER", "GIT_DIR"}
)
"""Variables that change which program or code a later command runs (and every `GIT_*`)."""
_NAME_BUILTINS = frozenset(
    {"declare", "typeset", "local", "export", "readonly", "unset", "read", "mapfile"}
    | {"readarray", "getopts", "wait", "let", "printf", "test", "[", "[["}
)
"""Builtins that take variable names, which bash may evaluate (`a[$(cmd)]`)."""
_READ_BUILTINS = frozenset({"read", "mapfile", "readarray", "getopts"})
"""Builtins that set variables from their input."""
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v"})
"""`[[ ]]` operators that evaluate their operands as arithmetic (or names)."""
_SUBSTRING = re.compile(r"^\$\{[^}:]*:(?![-=+?])(.*)\}$", re.DOTALL)
"""`${s:offset:length}`: the offset and length are arithmetic."""
_ARITHMETIC_SYNTAX = re.compile(r"^\$?\(\(|\)\)$|^\[\[|\]\]$|(?<![\w])-[a-zA-Z]+\b")
"""Brackets and test operators, removed before looking for names in arithmetic."""
_NAMED = re.compile(r"[A-Za-z_$]")
_DYNAMIC_NODES = {
    "simple_expansion": "a parameter expansion",
    "expansion": "a parameter expansion",
    "command_substitution": "a command substitution",
    "process_substitution": "a process substitution",
    "arithmetic_expansion": "an arithmetic expansion",
    "c_style_for_statement": "an arithmetic `for`",
    "subscript": "an array subscript",
}
"""Constructs that compute words or evaluate arithmetic: a command using one is not static."""
PLAIN_COMMANDS = frozenset(
    {"echo", "printf", "cat", "ls", "pwd", "true", "false", ":", "test", "[", "cd", "grep"}
    | {"head", "tail", "wc", "sort", "uniq", "cut", "tr", "diff", "stat", "file", "which"}
    | {"type", "basename", "dirname", "realpath", "readlink", "date", "touch", "mkdir", "cp"}
    | {"mv", "ln", "rm", "rmdir", "chmod", "chown", "chgrp", "tee", "sed", "awk", "export"}
    | {"set", "exit", "return", "shift", "sleep", "id", "whoami", "uname", "env", "python"}
    | {"python3", "pytest", "git", "make", "npm", "node", "uv", "pip", "cargo", "go", "rg"}
    | {"command", "find", "man", "help", "info", "whereis", "whatis"}
)
"""Commands known not to run a command named by their arguments (a deny pattern's name
as an argument of another command makes that command fail closed; see `could_run`).
`env`, `command`, `find`, `git`, interpreters and build tools run code, but not an
argument as a command name, or only in forms the analyser follows (`command rm`,
`find -exec`); what they run from their own files is for the sandbox to contain."""
_RUNNERS = {
    "uv": frozenset({"run", "tool"}),
    "npm": frozenset({"exec", "x"}),
    "git": frozenset({"bisect"}),
}
"""Forms of `PLAIN_COMMANDS` that run a command named by their arguments (`uv run rm`)."""
_GLOBAL_OPTIONS = {
    "git": frozenset(
        {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env"}
    ),
}
"""Options taking a value that a command takes before its subcommand (`git -C dir push`)."""
_EXEC_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_SHELL_VALUED = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
_SHELL_NOOP = frozenset({"--version", "--help", "-n"})
_WRITE_REDIRECTS = frozenset({">", ">>", "&>", "&>>", ">|", ">&", "<>"})
_GLOB_CHARS = frozenset("*?[")
_BRACE = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
_FALLBACK_SPLIT = re.compile(r"\$\(|[;&|\n(){}`]")
_FALLBACK_REDIRECT = re.compile(r"(?<![<0-9])>{1,2}\|?\s*(/dev/[^\s;&|)]+)")
_FALLBACK_FORK_BOMB = re.compile(r"(\S+)\s*\(\s*\)\s*\{[^}]*?\1\s*\|\s*\1")
_DOUBLE_QUOTED_ESCAPE = re.compile(r"\\([\\\"$`\n])")
_ANSI_C_ESCAPE = re.compile(
    r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)", re.DOTALL
)
_ANSI_C_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}


class Match(IntEnum):
    """Whether a command pattern matches a command: no, perhaps (unknowable), yes."""

    NO = 0
    MAYBE = 1
    YES = 2


@dataclass(frozen=True, slots=True)
class Word:
    """One shell word.

    Attributes:
        text: The word as written.
        value: The word the command receives (quotes and escapes removed), or None
            when it is computed at run time (`$VAR`, `$(...)`, `{a,b}`).
        pattern: For a word with unquoted `*`, `?` or `[`: the `fnmatch` pattern of
            the file names it expands to (if none exists it stays `value`). Else None.
    """

    text: str
    value: str | None
    pattern: str | None = None


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One simple command as it will run.

    Attributes:
        words: The command's words, its name first.
        wrapper: It only runs the next listed command (`env`, `timeout 5`,
            `bash -c`, ...): a rule that names it applies, but it needs no rule itself.
        open_ended: More arguments are added at run time (the command `xargs` runs).
        unknown: Why what runs cannot be known before it runs (then every pattern
            may match it), or None.
        code: Why it runs code the analyser cannot read (`python3 -c`, `sed e`, `git
            -c alias.x=!...`; see `shell.policy.code_strings`), or None: then every deny
            pattern may match it (`could_run`), while an allow pattern is matched as
            usual (allowing `python` allows what Python runs).
    """

    words: tuple[Word, ...]
    wrapper: bool = False
    open_ended: bool = False
    unknown: str | None = None
    code: str | None = None

    @property
    def name(self) -> str | None:
        """The command's name (last path component), or None when not known."""
        first = self.words[0] if self.words else None
        if self.unknown is not None or first is None or first.value is None or first.pattern:
            return None
        return posixpath.basename(first.value) or first.value

    @property
    def arguments(self) -> tuple[str | None, ...]:
        """The values of the arguments (None where computed at run time)."""
        return tuple(word.value for word in self.words[1:])

    def could_run(self, pattern: Sequence[str]) -> Match:
        """Like `match`, and MAYBE when the command may run what `pattern` names.

        For deny rules, failing closed: a command carrying code the analyser cannot
        read (`code`) may run anything; `git -C dir push` is matched as `git push`; and
        `mywrapper rm -rf x` may run `rm`, so a deny pattern for `rm` fails closed on
        it, unless the command is one of `PLAIN_COMMANDS` (and not one of their forms
        that run a command named by their arguments, `uv run`, `npm exec`).
        """
        found = self.match(pattern)
        stripped = _without_global_options(self)
        if stripped is not self:
            found = max(found, stripped.match(pattern))
        if found is Match.NO and self.code is not None:
            return Match.MAYBE
        plain = self.name in PLAIN_COMMANDS and not (
            set(self.arguments) & _RUNNERS.get(self.name or "", frozenset())
        )
        if found is not Match.NO or plain or self.wrapper:
            return found
        for index in range(1, len(self.words)):
            rest = SimpleCommand(self.words[index:], open_ended=self.open_ended)
            if rest.match(pattern) is not Match.NO:
                return Match.MAYBE
        return Match.NO

    def show(self, words: int = 4) -> str:
        """The first `words` words as written, for messages."""
        raw = [word.text for word in self.words]
        return " ".join(raw[:words]) + (" ..." if len(raw) > words else "")

    def why_unknown(self) -> str:
        """Why it may match a pattern it does not visibly match, for messages."""
        if self.unknown is not None:
            return self.unknown
        if self.code is not None and all(w.value is not None for w in self.words):
            return self.code
        return f"`{self.show()}` has words computed at run time"

    def match(self, pattern: Sequence[str]) -> Match:
        """Whether the command pattern `pattern` (see `command_pattern`) matches.

        The first pattern word is matched against the command's name, the others
        against its arguments in order, each an `fnmatch` glob; a longer command
        matches too (`git push` matches `git push -f`).
        """
        if self.unknown is not None:
            return Match.MAYBE
        first = self.words[0]
        named = Word(
            first.text,
            None if first.value is None else posixpath.basename(first.value) or first.value,
            None if first.pattern is None else posixpath.basename(first.pattern),
        )
        result = Match.YES
        for index, glob in enumerate(pattern):
            if index < len(self.words):
                found = _match_word(named if index == 0 else self.words[index], glob)
            else:
                found = Match.MAYBE if self.open_ended else Match.NO
            result = min(result, found)
            if result is Match.NO:
                break
        return result


@dataclass(frozen=True, slots=True)
class Analysis:
    """What a command line runs, as far as can be known before it runs.

    Attributes:
        commands: Every simple command, in the order found (wrappers before what they
            run; unknowns where they occur).
        writes: Files written by output redirections (`> f`, `>> f`), where known.
        fork_bombs: Names of functions that start copies of themselves without end.
        parsed: False when the line is not valid shell syntax (an unknown is listed).
        dynamic: Why the line is not fully static (an expansion, a substitution,
            arithmetic, a computed variable name, an unknown command), first reason
            first; empty when every word of every command is known before it runs.
    """

    commands: tuple[SimpleCommand, ...]
    writes: tuple[str, ...]
    fork_bombs: tuple[str, ...]
    parsed: bool
    dynamic: tuple[str, ...] = ()

    @property
    def static(self) -> bool:
        """Whether every word of every command is known before the line runs.

        Only a static line can be allowed by a rule: anything computed could turn a
        static-looking allowed command into another one (`git status $((v))` where
        `v='x[$(rm f)]'` runs `rm f`).
        """
        return not self.dynamic


def analyse(command: str) -> Analysis:
    """List what `command` runs (see the module docstring).

    Args:
        command: A shell command line.

    Returns:
        Its simple commands, output files and fork bombs.
    """
    walker = _Walker()
    walker.script(command, depth=0)
    unknown = [f"{c.unknown}" for c in walker.commands if c.unknown is not None]
    return Analysis(
        tuple(walker.commands),
        tuple(walker.writes),
        tuple(walker.fork_bombs),
        walker.parsed,
        tuple(dict.fromkeys([*walker.dynamic, *unknown])),
    )


def command_pattern(pattern: str) -> tuple[str, ...]:
    """The words of a command pattern such as `"git push"` or `"python*"`.

    Raises:
        ValueError: the pattern is empty or not valid shell words.
    """
    try:
        words = shlex.split(pattern)
    except ValueError as exc:
        raise ValueError(f"command pattern {pattern!r} is not valid shell words: {exc}") from None
    if not words:
        raise ValueError("a command pattern must not be empty")
    return tuple(words)


@cache
def _language() -> Language:
    return Language(tree_sitter_bash.language())


def parse(source: str) -> Node:
    """The tree-sitter-bash syntax tree of `source` (its root node)."""
    return Parser(_language()).parse(source.encode("utf-8", "surrogateescape")).root_node


def node_text(node: Node) -> str:
    """The source text of `node`."""
    return (node.text or b"").decode("utf-8", "surrogateescape")


def word(node: Node) -> Word:
    """The shell word `node` (a word, string, concatenation, ...) as a command gets it."""
    value, pattern = _word_value(node)
    return Word(node_text(node), value, pattern if pattern is not None and value else None)


def shell_script(words: Sequence[Word]) -> int | None:
    """Where the script of `sh -c SCRIPT` (any shell of `SHELLS`) is in `words`, or None."""
    if not words or words[0].value is None:
        return None
    name = posixpath.basename(words[0].value)
    if name not in SHELLS:
        return None
    index = _shell_operand(words)
    if index >= len(words) or not _has_c_flag(words[1:index]):
        return None
    return index


# ----- matching ----------------------------------------------------------------------------


def _without_global_options(found: SimpleCommand) -> SimpleCommand:
    """`git -C dir --no-pager push` as `git push`: options before the subcommand dropped."""
    valued = _GLOBAL_OPTIONS.get(found.name or "")
    if valued is None:
        return found
    index = 1
    while index < len(found.words):
        value = found.words[index].value
        if value is None or not value.startswith("-"):
            break
        index += 2 if value in valued else 1
    if index == 1:
        return found
    return SimpleCommand(
        (found.words[0], *found.words[index:]),
        open_ended=found.open_ended,
        unknown=found.unknown,
    )


def _match_word(found: Word, glob: str) -> Match:
    if found.value is None:
        return Match.MAYBE
    if found.pattern is None:
        return Match.YES if fnmatch.fnmatchcase(found.value, glob) else Match.NO
    could = (
        any(char in glob for char in _GLOB_CHARS)
        or fnmatch.fnmatchcase(glob, found.pattern)
        or fnmatch.fnmatchcase(found.value, glob)
    )
    return Match.MAYBE if could else Match.NO


# ----- words -------------------------------------------------------------------------------


def _word_value(node: Node) -> tuple[str | None, str | None]:  # noqa: PLR0911 - one per kind
    """A word's value and, when it has unquoted glob characters, its fnmatch pattern."""
    kind = node.type
    text = node_text(node)
    if kind in {"word", "number"}:
        return _bare(text)
    if kind == "raw_string":
        return text[1:-1], None
    if kind == "ansi_c_string":
        return _ansi_c(text[2:-1]), None
    if kind in {"string", "translated_string"}:
        if any(child.type != "string_content" for child in node.named_children):
            return None, None
        body = text[text.index('"') + 1 : -1]
        return _DOUBLE_QUOTED_ESCAPE.sub(lambda m: "" if m[1] == "\n" else m[1], body), None
    if kind in {"concatenation", "command_name"}:
        if kind == "concatenation" and _braced(text):
            return None, None
        parts = [_word_value(child) for child in node.named_children]
        if not parts or any(value is None for value, _ in parts):
            return None, None
        value = "".join(value or "" for value, _ in parts)
        if all(pattern is None for _, pattern in parts):
            return value, None
        return value, "".join(p if p is not None else _escape(v or "") for v, p in parts)
    return None, None


def _bare(text: str) -> tuple[str | None, str | None]:
    """An unquoted word: escapes removed, glob characters kept in the pattern."""
    if _braced(text):
        return None, None
    value: list[str] = []
    pattern: list[str] = []
    magic = False
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            index += 1
            escaped = text[index]
            if escaped != "\n":
                value.append(escaped)
                pattern.append(_escape(escaped))
        else:
            value.append(char)
            pattern.append(char)
            magic = magic or char in _GLOB_CHARS
        index += 1
    return "".join(value), "".join(pattern) if magic else None


def _braced(text: str) -> bool:
    """Whether a word may undergo brace expansion (`{a,b}`, `{1..3}`): computed."""
    return _BRACE.search(text.replace("\\{", "").replace("\\}", "")) is not None


def _escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def _ansi_c(body: str) -> str:
    def decode(match: re.Match[str]) -> str:
        code = match[1]
        if code[0] in "xuU":
            return chr(int(code[1:], 16))
        if code[0] in "01234567":
            return chr(int(code, 8))
        if code[0] == "c" and len(code) == 2:  # noqa: PLR2004 - `\cX`
            return chr(ord(code[1].upper()) ^ 0x40)
        return _ANSI_C_SIMPLE.get(code, code)

    return _ANSI_C_ESCAPE.sub(decode, body)


# ----- walking the tree --------------------------------------------------------------------


@dataclass
class _Walker:
    """Collects commands, writes and fork bombs from a line and its nested scripts."""

    commands: list[SimpleCommand] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    fork_bombs: list[str] = field(default_factory=list)
    parsed: bool = True
    dynamic: list[str] = field(default_factory=list)

    def script(self, source: str, *, depth: int) -> None:
        """Analyse one script: the whole line, or a script it runs."""
        if depth > MAX_DEPTH:
            self._unknown(source, f"`{_shorten(source)}` nests scripts too deeply to check")
            return
        root = parse(source)
        if root.has_error:
            self.parsed = False
            self._unknown(source, "the command could not be parsed")
            self._fallback(source)
        for node in _nodes(root):
            if node.type == "command":
                self._command(node, depth)
            elif node.type == "file_redirect":
                self._redirect(node)
            elif node.type == "function_definition":
                self._function(node)
            elif node.type in {"declaration_command", "unset_command"}:
                self._declaration(node)
            elif node.type == "variable_assignment":
                self._assignment(node)
            elif node.type in {"for_statement", "select_statement"}:
                self._loop_variable(node)
            self._judge(node)

    def _judge(self, node: Node) -> None:
        """Note why `node` makes the line not static, if it does.

        Arithmetic that reads a variable (`(( v ))`, `$((v))`, `[[ $v -eq 0 ]]`,
        `${s:v}`, `a[i]`) evaluates the variable's value, whose subscripts run command
        substitutions (`v='x[$(rm f)]'`), and `${v@P}` expands a value as a prompt, which
        runs them too: those are also unknown commands, so deny rules fail closed.
        """
        kind = node.type
        text = node_text(node)
        why = _DYNAMIC_NODES.get(kind)
        if kind == "compound_statement" and text.startswith("(("):
            why = "arithmetic"
        elif kind == "test_command" and any(
            node_text(child) in _ARITHMETIC_TESTS
            for child in _nodes(node)
            if child.type in {"test_operator", "unary_expression"} or not child.is_named
        ):
            why = "arithmetic or a variable name"
        elif kind == "heredoc_body" and node.named_children:
            why = "a here-document that expands parameters"
        if why is None:
            return
        self.dynamic.append(f"`{_shorten(text)}` uses {why}")
        if _evaluates_values(kind, text):
            self._unknown(text, f"`{_shorten(text)}` may run code hidden in a variable's value")

    def _declaration(self, node: Node) -> None:
        """`declare`/`export`/`local`/`unset` ...: names with subscripts are computed."""
        keyword = node_text(node.children[0]) if node.children else ""
        for child in node.named_children:
            text = node_text(child)
            value = word(child).value if child.type != "variable_assignment" else text
            if value is None or "[" in value:
                self.dynamic.append(f"`{keyword}` is given the computed name `{_shorten(text)}`")
            elif keyword == "export" and value.startswith("-") and "f" in value:
                self._unknown(text, "`export -f` passes a function to every program run")

    def _assignment(self, node: Node) -> None:
        """An assignment makes the line not static; to a variable bash runs as code, unknown.

        Any variable may be one a program reads (`HOME`, `XDG_CONFIG_HOME`,
        `PYTEST_ADDOPTS`, `LESSOPEN`, ...) or may already be exported, so `X=... cmd`,
        `X=...; cmd` and `export X=...` all change what a static-looking command does.
        """
        name = node.child_by_field_name("name")
        text = node_text(name).partition("[")[0] if name is not None else ""
        if text in SINK_VARIABLES or text.startswith("BASH_FUNC_"):
            self._unknown(node_text(node), f"setting `{text}` makes bash run code from it")
        else:
            self.dynamic.append(_setting(text))

    def _loop_variable(self, node: Node) -> None:
        """`for HOME in cfg; do ...`: the loop sets a variable, as an assignment does."""
        variable = node.child_by_field_name("variable")
        if variable is not None:
            self.dynamic.append(_setting(node_text(variable)))

    def _unknown(self, text: str, reason: str) -> None:
        self.commands.append(SimpleCommand((Word(text, None),), open_ended=True, unknown=reason))

    def _command(self, node: Node, depth: int) -> None:
        name = node.child_by_field_name("name")
        if name is None:
            return
        parts = [name, *node.children_by_field_name("argument")]
        self._simple(_joined_words(parts), depth, stdin=_stdin(node))

    def _simple(  # noqa: C901, PLR0912 - one branch per way a command runs another
        self,
        words: tuple[Word, ...],
        depth: int,
        *,
        stdin: Word | None = None,
        open_ended: bool = False,
    ) -> None:
        """Record a simple command, then whatever command it runs in turn."""
        first = words[0]
        if first.value is None or first.pattern is not None:
            what = "a file-name pattern" if first.pattern else "computed at run time"
            reason = f"the command name `{first.text}` is {what}"
            self.commands.append(SimpleCommand(words, open_ended=open_ended, unknown=reason))
            return
        name = posixpath.basename(first.value) or first.value
        sink = _code_sink(name, words)
        code = code_string(name, [w.value for w in words[1:]], stdin=stdin is not None)
        if sink is not None:
            self.commands.append(SimpleCommand(words, open_ended=True, unknown=sink))
            return
        self.dynamic += _not_static(name, words)
        computed = _computed_name(name, words)
        if computed is not None:
            self._unknown(" ".join(w.text for w in words), computed)
        inner = _wrapped(name, words)
        scripts = list(_scripts(name, words, stdin))
        runs_other = (inner is not None and inner < len(words)) or bool(scripts)
        wrapper = runs_other and (name in _TRANSPARENT or name in SHELLS or name == "eval")
        self.commands.append(
            SimpleCommand(words, wrapper=wrapper, open_ended=open_ended, code=code)
        )
        if inner is not None and inner < len(words):
            rest = words[inner:]
            if name == "xargs":
                rest = _xargs_replaced(words[1:inner], rest)
            self._simple(rest, depth, open_ended=open_ended or name == "xargs")
        for script in scripts:
            if script.value is None:
                self._unknown(script.text, f"the script `{_shorten(script.text)}` is computed")
            else:
                self.script(script.value, depth=depth + 1)
        if name in {"source", "."}:
            self._unknown(first.text, f"`{_shorten(' '.join(w.text for w in words))}` runs a file")
        elif name in SHELLS and not scripts and _runs_input(words):
            self._unknown(first.text, f"`{name}` runs a script file or its standard input")
        elif name == "script" and not scripts:
            self._unknown(first.text, "`script` runs a shell on its standard input")
        if name == "find":
            for start, end in _find_actions(words):
                unknown = tuple(Word(w.text, None) if w.value == "{}" else w for w in words)
                self._simple(unknown[start:end], depth, open_ended=open_ended)

    def _redirect(self, node: Node) -> None:
        operators = {child.type for child in node.children if not child.is_named}
        destination = node.child_by_field_name("destination")
        if destination is None or not (operators & _WRITE_REDIRECTS):
            return
        target = word(destination).value
        duplicates = bool(operators & {">&", "<&"}) and target is not None
        if duplicates and (target == "-" or (target or "").isdigit()):
            return  # `2>&1`, `>&-`: a descriptor, not a file
        if target is not None:
            self.writes.append(target)

    def _function(self, node: Node) -> None:
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name_node is None or body is None:
            return
        name = node_text(name_node)
        calls = 0
        backgrounded = False
        for current in _nodes(body):
            if current.type == "command":
                called = current.child_by_field_name("name")
                calls += called is not None and word(called).value == name
            backgrounded = backgrounded or current.type == "&"
        if calls >= 2 or (calls and backgrounded):  # noqa: PLR2004 - two copies per call
            self.fork_bombs.append(name)

    def _fallback(self, source: str) -> None:
        """Word-level commands of a line tree-sitter could not parse: err on refusing."""
        for segment in _FALLBACK_SPLIT.split(source):
            try:
                found = shlex.split(segment)
            except ValueError:
                found = segment.split()
            while found and re.match(r"^\w+=", found[0]):
                found.pop(0)
            if found:
                self.commands.append(SimpleCommand(tuple(Word(w, w) for w in found)))
        self.writes.extend(_FALLBACK_REDIRECT.findall(source))
        self.fork_bombs.extend(m.group(1) for m in _FALLBACK_FORK_BOMB.finditer(source))


def _joined_words(parts: Sequence[Node]) -> tuple[Word, ...]:
    """The words of a command; parts with no space between them are one word.

    tree-sitter-bash splits some words bash keeps whole (`/bin/'r'\\m` is read as
    `/bin/'r'` and `\\m`): touching parts are joined as the shell joins them.
    """
    groups: list[list[Node]] = []
    for part in parts:
        if groups and groups[-1][-1].end_byte == part.start_byte:
            groups[-1].append(part)
        else:
            groups.append([part])
    return tuple(_join([word(part) for part in group]) for group in groups)


def _join(words: Sequence[Word]) -> Word:
    if len(words) == 1:
        return words[0]
    text = "".join(w.text for w in words)
    if any(w.value is None for w in words):
        return Word(text, None)
    value = "".join(w.value or "" for w in words)
    if all(w.pattern is None for w in words):
        return Word(text, value)
    return Word(text, value, "".join(w.pattern or _escape(w.value or "") for w in words))


def _nodes(root: Node) -> Iterator[Node]:
    """Every node under `root`, in source order."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children))


def _stdin(command: Node) -> Word | None:
    """The static text a here-string or here-document feeds `command`, if any."""
    redirects = list(command.children_by_field_name("redirect"))
    parent = command.parent
    if parent is not None and parent.type == "redirected_statement":
        body = parent.child_by_field_name("body")
        if body is not None and body.id == command.id:
            redirects += parent.children_by_field_name("redirect")
    for redirect in redirects:
        if redirect.type == "herestring_redirect" and redirect.named_children:
            text = word(redirect.named_children[-1])
            return Word(text.text, None if text.value is None else text.value + "\n")
        if redirect.type == "heredoc_redirect":
            return _heredoc(redirect)
    return None


def _heredoc(redirect: Node) -> Word:
    start = next((c for c in redirect.named_children if c.type == "heredoc_start"), None)
    body = next((c for c in redirect.named_children if c.type == "heredoc_body"), None)
    text = node_text(body) if body is not None else ""
    quoted = start is not None and any(q in node_text(start) for q in "'\"\\")
    expands = body is not None and bool(body.named_children)
    return Word(text, text if quoted or not expands else None)


def _wrapped(name: str, words: tuple[Word, ...]) -> int | None:  # noqa: C901 - wrapper forms
    """Where the command run by a wrapper (`env`, `timeout 5`, `xargs`, ...) starts."""
    if name not in _WRAPPERS:
        return None
    valued, positional = _WRAPPERS[name]
    values = {w.value for w in words}
    if name == "runuser" and not {"-u", "--user"} & values:
        positional = 1  # `runuser USER [-c COMMAND]`
    if (name == "watch" and not {"-x", "--exec"} & values) or (
        values & _NO_COMMAND_OPTIONS.get(name, set())
    ):
        return None  # `watch` joins its words into a script; `taskset -p` runs nothing
    index = 1
    while index < len(words):
        value = words[index].value
        if value is None:
            return index
        if value == "--":
            index += 1
            break
        if name == "command" and value in {"-v", "-V"}:
            return None  # only describes the command
        if value.startswith("-") and (value != "-" or name == "env"):
            index += 2 if value in valued else 1
        elif name == "env" and "=" in value:
            index += 1
        else:
            break
    index += positional
    if index < len(words) and words[index].value in _SCRIPT_OPTIONS.get(name, ()):
        return None  # `flock FILE -c SCRIPT`: the script is parsed instead
    return index


def _scripts(name: str, words: tuple[Word, ...], stdin: Word | None) -> Iterator[Word]:
    """The scripts a command runs: `sh -c`, `su -c`, `eval`, `env -S`, aliases, stdin."""
    arguments = words[1:]
    if name == "eval" and arguments:
        values = [w.value for w in arguments]
        text = " ".join(w.text for w in arguments)
        joined = None if None in values else " ".join(v or "" for v in values)
        yield Word(text, joined)
    elif name == "alias":
        for argument in arguments:
            if argument.value is not None and "=" in argument.value:
                yield Word(argument.text, argument.value.partition("=")[2])
    elif name in _SCRIPT_OPTIONS:
        yield from (s for f, s in itertools.pairwise(arguments) if f.value in _SCRIPT_OPTIONS[name])
    elif name in {"watch", "sg"}:
        yield from _joined_scripts(name, arguments)
    elif name in SHELLS:
        index = shell_script(words)
        if index is not None:
            yield words[index]
        elif stdin is not None and _shell_operand(words) == len(words):
            yield stdin


def _joined_scripts(name: str, arguments: tuple[Word, ...]) -> Iterator[Word]:
    """The script `watch` or `sg GROUP [-c]` joins from its words."""
    if name == "watch" and not {"-x", "--exec"} & {w.value for w in arguments}:
        yield _joined_script(_after_options(arguments, _WRAPPERS["watch"][0]))
    elif name == "sg" and len(arguments) > 1:
        rest = arguments[2:] if arguments[1].value == "-c" else arguments[1:]
        if rest:
            yield _joined_script(rest)


def _joined_script(words: Sequence[Word]) -> Word:
    """The script a command joins from its words (`watch`, `sg`), or a computed one."""
    values = [w.value for w in words]
    text = " ".join(w.text for w in words)
    return Word(text, None if None in values else " ".join(v or "" for v in values))


def _after_options(words: Sequence[Word], valued: frozenset[str]) -> Sequence[Word]:
    index = 0
    while index < len(words):
        value = words[index].value
        if value == "--":
            return words[index + 1 :]
        if value is None or not value.startswith("-"):
            break
        index += 2 if value in valued else 1
    return words[index:]


_SINK_OPTIONS = {
    "mapfile": ("-C", "`mapfile -C` runs a callback string"),
    "readarray": ("-C", "`readarray -C` runs a callback string"),
    "hash": ("-p", "`hash -p` makes a command name run another file"),
    "complete": ("-C", "`complete -C` runs a command string"),
    "compgen": ("-C", "`compgen -C` runs a command string"),
    "bind": ("-x", "`bind -x` runs a command string"),
    "enable": ("-f", "`enable -f` loads a builtin from a shared object"),
}


def _code_sink(name: str, words: tuple[Word, ...]) -> str | None:  # noqa: PLR0911 - one per sink
    """Why `words` run a string as code in a way the analyser does not follow, or None."""
    arguments = [w.value for w in words[1:]]
    if name in _SCRIPT_OPTIONS:
        return _joined_script_option(name, arguments)
    if name == "trap":
        actions = [a for a in arguments if a is None or not a.startswith("-")]
        if actions and actions[0] not in {"", "-"} and len(actions) > 1:
            return "`trap` runs a string as code when a signal comes"
        return None
    if name in _ALWAYS_SINKS:
        return _ALWAYS_SINKS[name]
    if name in _SINK_OPTIONS:
        option, reason = _SINK_OPTIONS[name]
        if any(a is None or (a.startswith("-") and option[1] in a[1:]) for a in arguments):
            return reason
        return None
    if name == "env":
        return _env_sink(arguments)
    return None


_ALWAYS_SINKS = {
    "coproc": "`coproc` runs a command the analyser does not follow",
    "parallel": "`parallel` builds its commands at run time",
}


def _joined_script_option(name: str, arguments: Sequence[str | None]) -> str | None:
    """`su -lc 'cmd'`, `--command='cmd'`: a script option in a spelling not followed."""
    for value in arguments:
        if value is None or value.startswith("--"):
            if value is not None and value.startswith("--command="):
                return f"`{name} {value}` runs a command string in a form not followed"
            continue
        if value.startswith("-") and len(value) > 2 and "c" in value[1:]:  # noqa: PLR2004
            return f"`{name} {value}` runs a command string in a form not followed"
    return None


def _env_sink(arguments: Sequence[str | None]) -> str | None:
    """`env -S...`, `env --split-string=...`, `env BASH_ENV=...`, `env BASH_FUNC_x%%=...`."""
    for value in arguments:
        if value is None:
            return None  # a computed word: the command it runs is unknown anyway
        if value.startswith("--split-string") or (
            value.startswith("-") and not value.startswith("--") and "S" in value
        ):
            return "`env -S` splits a string into a command at run time"
        assigned = value.partition("=")[0] if "=" in value else None
        if assigned in SINK_VARIABLES or (assigned or "").startswith("BASH_FUNC_"):
            return f"setting `{assigned}` makes bash run code from it"
        if not value.startswith("-") and "=" not in value:
            break
    return None


def _not_static(name: str, words: tuple[Word, ...]) -> list[str]:
    """Why the simple command `words` (named `name`) is not static."""
    found: list[str] = []
    if any(w.value is None for w in words):
        found.append(f"`{_shorten(' '.join(w.text for w in words))}` has computed words")
    if name == "env":
        found += [
            _setting(w.value.partition("=")[0])
            for w in words[1:]
            if w.value and "=" in w.value and not w.value.startswith("-")
        ]
    values = {w.value for w in words[1:]}
    if name in _READ_BUILTINS or (name == "printf" and "-v" in values):
        found.append(f"`{name}` sets variables, which may change what later commands run")
    return found


def _setting(variable: str) -> str:
    """Why setting `variable` makes a line not static."""
    if _changes_what_runs(variable):
        return f"setting `{variable}` changes what later commands run"
    return f"setting `{variable}` may change what later commands run (any program may read it)"


def _evaluates_values(kind: str, text: str) -> bool:
    """Whether the construct `text` evaluates a variable's value as arithmetic or a prompt."""
    if kind in {"expansion", "simple_expansion"}:
        substring = _SUBSTRING.match(text)
        return "@P" in text or (substring is not None and bool(_NAMED.search(substring[1])))
    if kind == "subscript":
        index = text.partition("[")[2].rpartition("]")[0]
        return bool(_NAMED.search(index))
    if kind == "c_style_for_statement":
        text = text.partition("))")[0]
    if kind in {"arithmetic_expansion", "compound_statement", "c_style_for_statement"} or (
        kind == "test_command"
    ):
        return bool(_NAMED.search(_ARITHMETIC_SYNTAX.sub(" ", text).replace("for ((", "")))
    return False


def _changes_what_runs(variable: str) -> bool:
    return variable in LOADER_VARIABLES or variable.startswith("GIT_")


def _computed_name(name: str, words: tuple[Word, ...]) -> str | None:
    """Why a builtin taking variable names may evaluate code in one, or None.

    Bash evaluates the subscript of a name such as `x[$(rm f)]` as arithmetic, which
    runs the substitution: `test -v`, `printf -v`, `read`, `declare`, ... given such a
    name run hidden code, although every word is static.
    """
    if name not in _NAME_BUILTINS:
        return None
    values = [w.value for w in words[1:]]
    if name == "let":
        return "`let` evaluates arithmetic"
    if name in {"test", "[", "printf"}:
        flagged = [v for f, v in itertools.pairwise(values) if f == "-v"]
    else:
        flagged = values
    for value in flagged:
        if value is None or "[" in value.partition("=")[0]:
            return f"`{name}` is given the computed variable name `{value or '...'}`"
    return None


def _shell_operand(words: Sequence[Word]) -> int:
    """Index of a shell's first operand (after its options), or the word count."""
    index = 1
    while index < len(words):
        value = words[index].value
        if value is None:
            return index  # computed: an operand as far as can be known
        if value == "--":
            return index + 1
        if not value.startswith(("-", "+")) or value == "-":
            return index
        index += 2 if value in _SHELL_VALUED else 1
    return min(index, len(words))


def _has_c_flag(options: Sequence[Word]) -> bool:
    return any(
        w.value is not None
        and w.value.startswith("-")
        and not w.value.startswith("--")
        and "c" in w.value[1:]
        for w in options
    )


def _runs_input(words: tuple[Word, ...]) -> bool:
    """Whether a shell without `-c` runs a file or its input (not just `--version`)."""
    return not any(w.value in _SHELL_NOOP for w in words[1:])


def _xargs_replaced(options: tuple[Word, ...], command: tuple[Word, ...]) -> tuple[Word, ...]:
    """`command` with the words `xargs -I STR` fills in at run time made unknown."""
    replace: str | None = None
    for index, option in enumerate(options):
        value = option.value or ""
        if value == "-I" and index + 1 < len(options):
            replace = options[index + 1].value
        elif value.startswith("-I") and len(value) > 2:  # noqa: PLR2004 - `-ISTR`
            replace = value[2:]
        elif value.startswith("-i"):
            replace = value[2:] or "{}"
    if not replace:
        return command
    return tuple(Word(w.text, None) if w.value and replace in w.value else w for w in command)


def _find_actions(words: tuple[Word, ...]) -> list[tuple[int, int]]:
    """The spans of commands `find -exec ... ;` runs."""
    spans: list[tuple[int, int]] = []
    index = 1
    while index < len(words):
        if words[index].value in _EXEC_ACTIONS:
            start = index + 1
            end = start
            while end < len(words) and words[end].value not in {";", "+"}:
                end += 1
            if end > start:
                spans.append((start, end))
            index = end
        index += 1
    return spans


def _shorten(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = [
    "LOADER_VARIABLES",
    "MAX_DEPTH",
    "PLAIN_COMMANDS",
    "SHELLS",
    "SINK_VARIABLES",
    "Analysis",
    "Match",
    "SimpleCommand",
    "Word",
    "analyse",
    "command_pattern",
    "node_text",
    "parse",
    "shell_script",
    "word",
]
