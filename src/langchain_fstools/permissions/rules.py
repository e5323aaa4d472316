"""Permission rules for file tool calls: allow, deny, or ask a person.

A pure module: rules and a mode in, a decision out. What a call touches is declared by
the tool (`FileTool.targets`); the approval gate adds the canonical form the backend
resolves each path to (symlinks followed), so a link into a denied folder is denied
and a link into `.git/` is protected; a backend view (`backends.guarded.GuardedBackend`)
enforces the same decisions at call time, on both forms again.

How `Policy.decide` answers for one target (an operation on a virtual path, or a
command to execute):

    1. The path is normalised (`paths.normalize`: `/SRC/../.git/config` is
       `/.git/config`) and compared case-insensitively, against the path itself and
       each of its parent directories (`.ssh` covers `/.ssh/id_rsa`).
    2. Rules are tried in order; the first that matches gives the action.
    3. No rule matches: the mode's default (`MODE_DEFAULTS`).
    4. `plan` mode denies every write and execute, whatever a rule says.
    5. `bypass` mode turns an `ask` into `allow`; a `deny` stays a deny.
    6. A protected path (`PROTECTED_PATHS`: `.git/`, `.ssh/`, `.env*`, shell rc files,
       the agent's configuration) is never allowed without a person: in every mode an
       `allow` becomes `ask` (a `deny` stays a deny).

A command is decided as it will run: the shell analyser (`shell.policy.analysis.analyse`)
lists every simple command of the line (quotes and escapes removed, `/bin/rm` as
`rm`, behind wrappers such as `env`, `sudo`, `xargs`, `bash -c '...'` and
`find -exec`, inside `$(...)` and backticks), and each is decided by steps 2 to 5. A
wrapper that only runs another command (`env`, `timeout`, `bash -c`, ...) is decided
only by a rule that names it. A command that cannot be known before it runs (a name
built from `$VAR` or `$(...)`, `eval` of a computed script, `source` of a file) gets
the strictest action among the rules that could match it and the mode's default; one
carrying code the analyser cannot read (`python3 -c`, `sed e`, `git -c alias...`;
`shell.policy.code_strings`) could match every deny rule. An allow holds only for a static
line: one that sets any variable (`XDG_CONFIG_HOME=cfg git status`) asks.

Several targets (a patch touching many files, a command list, a path and its resolved
form) give the strictest of their decisions: deny over ask over allow.

Example:
    ```python
    from langchain_fstools.permissions.rules import Permission, Policy

    policy = Policy(
        [
            Permission(operations=["read", "write"], paths=["/secrets/**"], action="deny"),
            Permission(operations=["execute"], commands=["pytest", "git status"]),
        ],
        mode="accept_edits",
    )
    policy.decide_path("write", "/src/app.py").action  # "allow"
    policy.decide_command("rm -rf build").action  # "ask"
    ```
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Final, Literal, get_args

from langchain_fstools.core import paths
from langchain_fstools.core.globs import compile_globs
from langchain_fstools.errors import FsToolsError
from langchain_fstools.shell.policy.analysis import Match, SimpleCommand, analyse, command_pattern
from langchain_fstools.shell.sandbox.sandbox import SHELL_FILES
from langchain_fstools.shell.sandbox.unreadable import Unreadable
from langchain_fstools.tools.targets import Operation, Target

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

Action = Literal["allow", "deny", "ask"]
"""What happens to a call: it runs, it is refused, or a person decides."""

Mode = Literal["default", "accept_edits", "plan", "bypass"]
"""How much the agent may do without asking."""

MODE_DEFAULTS: Final[Mapping[str, Mapping[str, Action]]] = {
    "default": {"read": "allow", "write": "ask", "execute": "ask"},
    "accept_edits": {"read": "allow", "write": "allow", "execute": "ask"},
    "plan": {"read": "allow", "write": "deny", "execute": "deny"},
    "bypass": {"read": "allow", "write": "allow", "execute": "allow"},
}
"""Each mode's action for a call no rule matches."""


AGENT_CONFIGURATION: Final = (".fstools", ".claude", ".codex", ".deepagents", ".agents")
"""Where agents keep their own settings and instructions."""

PROTECTED_PATHS: Final = (
    ".git",
    ".gitconfig",
    ".gitmodules",
    ".ssh",
    ".env*",
    *SHELL_FILES,
    *AGENT_CONFIGURATION,
)
"""Globs (any depth, with their contents) that always need a person, in every mode."""

_RANK: Final[Mapping[str, int]] = {"allow": 0, "ask": 1, "deny": 2}


@dataclass(frozen=True)
class Permission:
    """One rule: for these operations, on these paths or commands, do this.

    A rule with `paths` matches only file targets; one with `commands` only commands;
    one with neither matches every target of its operations.

    Args:
        operations: Which operations it covers: `"read"`, `"write"`, `"execute"`.
        paths: Globs over virtual paths (`backends.globs` meaning, case-insensitive);
            a glob also covers everything below a directory it matches. Default: any.
        commands: Command patterns, matched word by word against each simple command
            of a command line as it will run (`"git status"` matches
            `git status -s` and `/usr/bin/git status`, not `git stash`; each word
            is an `fnmatch` glob, the first matched against the command's name).
            Default: any.
        action: `"allow"`, `"deny"` or `"ask"`. Default: `"allow"`.

    Raises:
        ValueError: an unknown operation or action, a malformed glob, an empty or
            unbalanced command pattern, or `commands` on a rule that does not cover
            `execute`.
    """

    operations: Sequence[Operation]
    paths: Sequence[str] = ()
    commands: Sequence[str] = ()
    action: Action = "allow"
    _match_path: Callable[[str], bool] = field(init=False, repr=False, compare=False)
    _patterns: tuple[tuple[str, ...], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Validate and compile the rule up front."""
        unknown = [op for op in self.operations if op not in get_args(Operation)]
        if unknown or not self.operations:
            raise ValueError(f"operations must be read, write or execute; got {unknown}")
        if self.action not in get_args(Action):
            raise ValueError(f"action must be allow, deny or ask; got {self.action!r}")
        if self.commands and "execute" not in self.operations:
            raise ValueError("commands only apply to rules covering the execute operation")
        if isinstance(self.paths, str) or isinstance(self.commands, str):
            raise TypeError("paths and commands are lists, not single strings")
        object.__setattr__(self, "operations", tuple(self.operations))
        object.__setattr__(self, "paths", tuple(self.paths))
        object.__setattr__(self, "commands", tuple(self.commands))
        try:
            matcher = _path_matcher(self.paths)
        except FsToolsError as exc:
            raise ValueError(f"invalid path glob in {self.paths}: {exc}") from None
        object.__setattr__(self, "_match_path", matcher)
        object.__setattr__(self, "_patterns", tuple(map(command_pattern, self.commands)))

    def matches_path(self, operation: Operation, path: str) -> bool:
        """Whether the rule covers `operation` on canonical `path`."""
        return operation in self.operations and not self.commands and self._match_path(path)

    def matches_command(self, command: SimpleCommand) -> Match:
        """Whether the rule covers running the simple command `command`.

        `Match.MAYBE` when it could, but what runs is only known at run time.
        """
        if "execute" not in self.operations or self.paths:
            return Match.NO
        if not self._patterns:
            return Match.YES
        if self.action == "deny":  # best effort, failing closed: see `could_run`
            return max(command.could_run(pattern) for pattern in self._patterns)
        return max(command.match(pattern) for pattern in self._patterns)


@dataclass(frozen=True)
class Verdict:
    """A decision and why: the reason names the rule, mode or protection that gave it.

    Attributes:
        action: allow, deny or ask.
        reason: Why, for people and models (e.g. "the plan mode allows no writes").
        target: The path or command the decision is about.
        operation: The operation decided.
        network: For a command: the network it will have, in words, or None.
    """

    action: Action
    reason: str
    target: str
    operation: Operation
    network: str | None = None


class Policy:
    """Rules plus a mode, answering allow, deny or ask for each target.

    Args:
        rules: Tried in order; the first match decides. Default: none.
        mode: `"default"` (reads allowed, writes and execute ask), `"accept_edits"`
            (writes allowed too, execute asks), `"plan"` (no writes, no execute) or
            `"bypass"` (everything allowed). Default: `"default"`.
        protected: Globs that always ask (see the module docstring).
            Default: `PROTECTED_PATHS`.

    Raises:
        ValueError: an unknown mode or a malformed protected glob.
    """

    def __init__(
        self,
        rules: Sequence[Permission] = (),
        *,
        mode: Mode = "default",
        protected: Sequence[str] = PROTECTED_PATHS,
    ) -> None:
        """Keep the rules; compile the protected globs."""
        if mode not in MODE_DEFAULTS:
            raise ValueError(f"mode must be one of {sorted(MODE_DEFAULTS)}; got {mode!r}")
        self.rules = tuple(rules)
        self.mode: Mode = mode
        self.protected = tuple(protected)
        outside_git = tuple(glob for glob in self.protected if glob.strip("/") != ".git")
        try:
            self._protected = _path_matcher(self.protected) if self.protected else None
            self._protected_for_commands = _path_matcher(outside_git) if outside_git else None
        except FsToolsError as exc:
            raise ValueError(f"invalid protected glob: {exc}") from None

    def is_protected(self, path: str) -> bool:
        """Whether canonical `path` (or a directory above it) is protected."""
        return self._protected is not None and self._protected(path)

    def decide_change(self, path: str) -> Verdict:
        """Decide a command's change of `path`: a write, but `.git` is not protected here.

        What git would run (its configuration and hooks) is judged for commands by
        `shell.sandbox.protected` instead, so that git's ordinary writes (objects, refs, the
        index) are a command's like any others and `git commit` works.
        """
        return self._decide("write", path, self._protected_for_commands)

    def decide_path(self, operation: Operation, path: str) -> Verdict:
        """Decide a read or write of `path` (any spelling; normalised here).

        A path that cannot be normalised is allowed through: the tool refuses it with
        its own error, and no file can be reached by it.
        """
        return self._decide(operation, path, self._protected)

    def _decide(
        self, operation: Operation, path: str, protected: Callable[[str], bool] | None
    ) -> Verdict:
        try:
            canonical = paths.normalize(path)
        except FsToolsError:
            return Verdict("allow", "the path is invalid; the tool refuses it", path, operation)
        for index, rule in enumerate(self.rules):
            if rule.matches_path(operation, canonical):
                found = Verdict(rule.action, f"permission rule {index + 1}", canonical, operation)
                break
        else:
            found = self._mode_default(operation, canonical)
        found = self._mode_override(found)
        if found.action == "allow" and protected is not None and protected(canonical):
            return Verdict("ask", f"the protected path {canonical}", canonical, operation)
        return found

    def unreadable(self) -> Unreadable | None:
        """What commands must not see: what a rule denies, or asks before, reading.

        None when no rule does. A rule that asks hides the path too (fail closed: no
        person can be asked in the middle of a command); in `bypass`, where it asks
        no one, it hides nothing. Hidden from commands exactly as the file tools
        decide (`decide_path`, protected paths aside: they ask about the file tools'
        reads but stay visible to commands, which guard them by their changes), and
        looked for only below the literal start of each hiding glob
        (`shell.sandbox.unreadable`, which asks about a path only once no folder
        above it is hidden).
        """
        hiding = [rule for _index, rule in self._hiding_rules()]
        if not hiding:
            return None
        globs = [glob for rule in hiding for glob in rule.paths or ("**",)]
        starts = {_literal_start(glob) for glob in globs}
        named = compile_globs([glob.lower() for glob in globs])

        def hidden(path: str) -> bool:
            # searched from the top, a path is asked about only below folders not hidden:
            # one that no hiding glob names itself is not hidden (told at once)
            if not named(path.lower().strip("/")):
                return False
            try:
                paths.normalize(path)
            except FsToolsError:  # no tool can name it (a backslash, bytes not UTF-8)
                return True  # but a command can: hidden, failing closed
            return self._decide("read", path, None).action != "allow"

        return Unreadable(
            hidden=hidden,
            starts=tuple(sorted(starts)),
            why=lambda path: self._decide("read", path, None).reason,
        )

    def _hiding_rules(self) -> list[tuple[int, Permission]]:
        """The path rules (with their index) that keep reads from a person or refuse them."""
        return [
            (index, rule)
            for index, rule in enumerate(self.rules)
            if "read" in rule.operations
            and not rule.commands
            and self._mode_override(Verdict(rule.action, "", "", "read")).action != "allow"
        ]

    def _unmasked(self, command: str) -> Verdict | None:
        """How a command that no one can keep from a hidden path is decided (None: none is).

        Where the backend cannot hide paths from commands (`Target.masked` false: SSH,
        Landlock alone, `sandbox=None`), a command could read what a rule keeps from
        reads: it asks before it runs, and in `bypass`, which asks no one, a rule that
        denies reading refuses it. Decided on the rules alone: which paths the command
        would read cannot be known before it runs.
        """
        hiding = self._hiding_rules()
        if not hiding:
            return None
        index, rule = hiding[0]
        what = ", ".join(rule.paths) if rule.paths else "any path"
        verb = "denies" if rule.action == "deny" else "asks before"
        reason = (
            f"permission rule {index + 1} (it {verb} reading {what}, and commands here"
            " cannot be kept from it)"
        )
        action: Action = "deny" if self.mode == "bypass" else "ask"
        return Verdict(action, reason, command, "execute")

    def by_mode(self, verdict: Verdict) -> bool:
        """Whether `verdict` is the mode's own (no rule and no protected path gave it)."""
        return verdict.reason == self._mode_default(verdict.operation, verdict.target).reason

    def decide_command(self, command: str, *, contained: bool = False) -> Verdict:
        """Decide running `command`: the strictest decision over its simple commands.

        An `allow` holds only for a static line (`Analysis.static`): a line with any
        expansion, substitution, arithmetic, assignment or computed name asks instead
        (in `bypass` it runs, inside the sandbox), since a rule cannot see what it will
        run.

        A `contained` command (copy-on-write, no network) has no lasting effect before
        its changes are committed, and those are reviewed by their effect
        (`permissions.command_review`): where the mode would ask, it runs; deny and
        ask rules still hold, and `plan` runs nothing.
        """
        analysis = analyse(command)
        found = (self._decide_simple_command(c, command, contained) for c in analysis.commands)
        verdicts = [verdict for verdict in found if verdict is not None]
        if not verdicts:
            verdict = self._mode_override(self._command_default(command, contained))
        else:
            verdict = max(verdicts, key=lambda v: _RANK[v.action])
        if contained and verdict.action == "allow":
            return verdict  # what it cannot see before it runs is reviewed after
        if verdict.action == "allow" and not analysis.static and self.mode != "bypass":
            reason = f"{verdict.reason}, but {analysis.dynamic[0]}, so a person decides"
            return Verdict("ask", reason, command, "execute")
        return verdict

    def decide(self, target: Target) -> Verdict:
        """Decide one target."""
        if target.operation == "execute":
            verdict = self.decide_command(target.command or "", contained=target.contained)
            unmasked = None if target.masked else self._unmasked(verdict.target)
            if unmasked is not None and _RANK[unmasked.action] > _RANK[verdict.action]:
                verdict = unmasked
            return replace(verdict, network=target.network)
        if target.path is None:
            verdict = self._mode_override(self._mode_default(target.operation, "(unknown)"))
            if verdict.action == "allow":
                return Verdict("ask", "a patch naming no file", "(unknown)", target.operation)
            return verdict
        return self.decide_path(target.operation, target.path)

    def decide_all(self, targets: Sequence[Target]) -> Verdict | None:
        """The strictest decision over `targets` (None when there are none)."""
        verdicts = [self.decide(target) for target in targets]
        return max(verdicts, key=lambda v: _RANK[v.action]) if verdicts else None

    def _decide_simple_command(
        self,
        simple: SimpleCommand,
        command: str,
        contained: bool,  # noqa: FBT001 - private, as `decide_command` was told
    ) -> Verdict | None:
        """The strictest action any reading of `simple` gets (None: a wrapper no rule names).

        Rules are tried in order; a rule that may match adds its action and the search
        goes on, a rule that surely matches adds its action and ends it.
        """
        possible: list[Verdict] = []
        for index, rule in enumerate(self.rules):
            match = rule.matches_command(simple)
            if match is Match.NO:
                continue
            reason = f"permission rule {index + 1}"
            if match is Match.MAYBE:
                reason += f" (it could match: {simple.why_unknown()})"
            possible.append(Verdict(rule.action, reason, command, "execute"))
            if match is Match.YES:
                break
        else:
            if not simple.wrapper:
                possible.append(self._command_default(command, contained))
        verdicts = [self._mode_override(verdict) for verdict in possible]
        return max(verdicts, key=lambda v: _RANK[v.action]) if verdicts else None

    def _command_default(self, command: str, contained: bool) -> Verdict:  # noqa: FBT001
        """The mode's action for a command no rule matches; a contained one runs."""
        verdict = self._mode_default("execute", command)
        if contained and verdict.action == "ask":
            reason = "a contained command (its changes are reviewed when it ends)"
            return Verdict("allow", reason, command, "execute")
        return verdict

    def _mode_default(self, operation: Operation, target: str) -> Verdict:
        action = MODE_DEFAULTS[self.mode][operation]
        return Verdict(action, f"the {self.mode} mode", target, operation)

    def _mode_override(self, verdict: Verdict) -> Verdict:
        if self.mode == "plan" and verdict.operation != "read":
            return Verdict("deny", "the plan mode", verdict.target, verdict.operation)
        if self.mode == "bypass" and verdict.action == "ask":
            return Verdict("allow", "the bypass mode", verdict.target, verdict.operation)
        return verdict


def _literal_start(glob: str) -> tuple[str, ...]:
    """The lower-cased components every path `glob` matches starts with (`()`: any).

    A glob without `/` matches a name at any depth (`core.globs`); otherwise the
    components before the first one holding a wildcard, class, brace or escape.
    """
    if "/" not in glob.rstrip("/"):
        return ()
    start: list[str] = []
    for part in glob.strip("/").lower().split("/"):
        if any(char in part for char in "*?[{\\"):
            break
        start.append(part)
    return tuple(start)


def _path_matcher(globs: Sequence[str]) -> Callable[[str], bool]:
    """A case-insensitive predicate over canonical paths, covering their parents."""
    if not globs:
        return lambda _path: True
    match = compile_globs([g.lower() for g in globs])

    def matches(path: str) -> bool:
        parts = path.lower().strip("/").split("/")
        return any(match("/".join(parts[:depth])) for depth in range(1, len(parts) + 1))

    return matches


__all__ = [
    "AGENT_CONFIGURATION",
    "MODE_DEFAULTS",
    "PROTECTED_PATHS",
    "SHELL_FILES",
    "Action",
    "Mode",
    "Operation",
    "Permission",
    "Policy",
    "Target",
    "Verdict",
]
