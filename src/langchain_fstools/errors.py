"""Typed errors shared by every layer.

Backends raise built-in `OSError` subclasses (`FileNotFoundError`, `IsADirectoryError`,
`NotADirectoryError`, `FileExistsError`, `PermissionError`) with the *virtual* path as
`filename`, plus the typed errors below. Tools raise the tool-level errors. Only
`langchain_fstools.tools.render` turns any of them into text for a model.

Every error compares by value, so tests assert on errors, not on strings.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass


class FsToolsError(Exception):
    """Base class of every error this package raises on purpose."""

    def __eq__(self, other: object) -> bool:
        """Errors are equal when they are of one type with equal fields."""
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        """Hash by type and fields."""
        return hash((type(self), tuple(sorted(vars(self).items()))))


@dataclass(eq=False)
class InvalidPath(FsToolsError):
    """A path the model gave cannot name a file in the workspace."""

    path: str
    reason: str


@dataclass(eq=False)
class OutsideRoot(FsToolsError):
    """A path (or a symlink on its way) leads outside the workspace root."""

    path: str


@dataclass(eq=False)
class SpecialFile(FsToolsError):
    """A device, FIFO or socket, which is never opened."""

    path: str
    kind: str


@dataclass(eq=False)
class VersionConflict(FsToolsError):
    """A conditional write found another version than the one it expected."""

    path: str
    expected: str
    actual: str | None


@dataclass(eq=False)
class WriteLockTimeout(FsToolsError):
    """Another writer held the lock of a file's folder longer than a write waits for it."""

    path: str
    seconds: float


@dataclass(eq=False)
class PartialWrite(FsToolsError):
    """A batch write (`Backend.write_many`) failed after some of its changes took effect.

    Attributes:
        written: The paths (as given) whose new content is in place, or that are removed.
        cause: The error that stopped the batch.
    """

    written: tuple[str, ...]
    cause: Exception


@dataclass(eq=False)
class DiskFull(FsToolsError):
    """A batch write found no room on the disk to stage its files: nothing of it was written.

    Attributes:
        path: The file that did not fit.
        needed: Bytes of new content the batch writes.
        free: Bytes free on the disk once the staged files were removed again.
    """

    path: str
    needed: int
    free: int


@dataclass(eq=False)
class NotInGraph(FsToolsError):
    """A backend that lives in graph state was used without a graph runtime."""

    backend: str
    missing: str


@dataclass(eq=False)
class NotABackend(FsToolsError, TypeError):
    """A backend factory (`backend=lambda rt: ...`) returned something else."""

    returned: str
    """The type of what it returned."""

    def __str__(self) -> str:
        """One sentence naming what was returned and what is needed."""
        return (
            f"the backend factory returned {self.returned}, not a backend instance such as"
            " StateBackend() or LocalBackend('./repo')"
        )


@dataclass(eq=False)
class InvalidStateRecord(FsToolsError, ValueError):
    """A record in the graph state's `files` channel that is not a file record.

    Raised where the record enters the state (the channel's reducer, so the graph's
    input or `update_state` fails) and where a tool meets one that got in another way.
    """

    path: str
    found: str
    """What the record is instead (e.g. `int`, `dict without 'content'`)."""

    def __str__(self) -> str:
        """One sentence naming the state, the path and the fix."""
        return (
            f"the graph state's 'files' channel holds {self.found} at {self.path!r}, not a"
            " file record; build the 'files' input with StateBackend.seed({path: text or"
            " bytes})"
        )


@dataclass(eq=False)
class StoreUnavailable(FsToolsError):
    """The store behind a backend failed (e.g. its database went away).

    Attributes:
        reason: The store's exception type name; the exception is chained.
        cause: What failed, in words, when the store's error says (a refused
            connection, a timeout, the store's HTTP status and message). Default: None.
        lasting: Whether the cause lasts until someone changes the setup (credentials,
            a name that does not resolve), so retrying will not help. Default: False.
    """

    reason: str
    cause: str | None = None
    lasting: bool = False


@dataclass(eq=False)
class ConditionalWritesIgnored(FsToolsError):
    """An object store accepted conditional writes it does not check (s3rver does).

    `ObjectStoreBackend` proves at its first write that a PUT with a wrong `If-Match`
    and a create (`If-None-Match: *`) of an existing key both fail; where one succeeds,
    concurrent writers would overwrite each other silently, so that write and every
    later one fail with this error.

    Attributes:
        store: The store, as obstore describes it (no credentials).
        ignored: The conditions it accepted unchecked (`"If-Match"`, `"If-None-Match"`).
    """

    store: str
    ignored: tuple[str, ...]

    def __str__(self) -> str:
        """One sentence naming the store and the option that accepts the risk."""
        return (
            f"{self.store} ignores conditional writes ({' and '.join(self.ignored)} accepted"
            " unchecked), so concurrent writers would overwrite each other silently;"
            " ObjectStoreBackend refuses to write to it. Use a store that checks them, or"
            ' pass ObjectStoreBackend(..., conditional_writes="none") to accept the risk'
            " (unsafe with concurrent writers: the last one wins)"
        )


class MissingExtra(ImportError):
    """A feature whose optional dependency is not installed.

    The message is one sentence with the `pip install` that adds it. Attributes:
    `feature` (what needs it), `extra` (the package extra), and ImportError's `name`
    (the module that did not import).
    """

    def __init__(self, feature: str, extra: str, module: str) -> None:
        """Name the feature, the extra, and the module that is missing."""
        self.feature = feature
        self.extra = extra
        super().__init__(
            f"{feature} needs the {extra} extra: pip install '.[{extra}]' in a checkout of"
            f" langchain-fstools (pip install 'langchain-fstools[{extra}]' after its first"
            " release)",
            name=module,
        )


@dataclass(eq=False)
class SearchFailed(FsToolsError):
    """The search engine could not run or stopped with an error.

    `reason` says why in the engine's words, with host paths already replaced by
    virtual ones (or left out).
    """

    reason: str


@dataclass(eq=False)
class InvalidArgument(FsToolsError):
    """An argument is out of range or contradicts another."""

    argument: str
    reason: str


@dataclass(eq=False)
class NotReadYet(FsToolsError):
    """An existing file is written or edited before the agent read it in full."""

    path: str
    partially: bool


@dataclass(eq=False)
class ChangedSinceRead(FsToolsError):
    """A file changed on storage after the agent last read it."""

    path: str


@dataclass(eq=False)
class NoMatch(FsToolsError):
    """`old_string` does not occur in the file."""

    path: str


@dataclass(eq=False)
class AmbiguousMatch(FsToolsError):
    """`old_string` occurs more than once and `replace_all` is off."""

    path: str
    count: int


@dataclass(eq=False)
class NoOpEdit(FsToolsError):
    """`old_string` and `new_string` are the same."""

    path: str


@dataclass(eq=False)
class FileAlreadyExists(FsToolsError):
    """An edit with an empty `old_string` names a file that already has content."""

    path: str


@dataclass(eq=False)
class BinaryFile(FsToolsError):
    """A binary file was given to a tool that handles text only."""

    path: str


@dataclass(eq=False)
class UseNotebookEdit(FsToolsError):
    """A text edit was attempted on a Jupyter notebook."""

    path: str


@dataclass(eq=False)
class NeedsWindow(FsToolsError):
    """A text file too large to read whole was read without offset or limit."""

    path: str
    size: int
    limit: int


@dataclass(eq=False)
class UnreadableMedia(FsToolsError):
    """An image or PDF that cannot be read; `reason` says why."""

    path: str
    kind: str
    reason: str


@dataclass(eq=False)
class MissingFile(FsToolsError):
    """A file to read does not exist; `suggestions` holds existing near spellings.

    `looked_in` says where, when the path lies below a mount (`NotInMount.looked_in`).
    """

    path: str
    suggestions: list[str]
    looked_in: str | None = None


class NotInMount(FileNotFoundError):
    """A path below a mount that the mounted backend does not hold.

    Attributes:
        filename: The workspace path.
        mount: The mount directory, with its trailing slash (`"/workspace/"`).
        backend: The mounted backend's kind (`"local"`, `"store"`, ...).
    """

    def __init__(self, path: str, mount: str, backend: str) -> None:
        """Name the path, and the backend mounted where it was looked for."""
        self.mount = mount
        self.backend = backend
        super().__init__(errno.ENOENT, f"not in {self.looked_in}", path)

    @property
    def looked_in(self) -> str:
        """Where the path was looked for, in words (no host path)."""
        return f"the {self.backend} backend mounted at {self.mount}"


@dataclass(eq=False)
class FileTooLarge(FsToolsError):
    """A whole-file operation on a file above the configured byte limit."""

    path: str
    size: int
    limit: int


@dataclass(eq=False)
class BranchNotMerged(FsToolsError):
    """A graph node's branch did not merge (a conflict, a refusal); nothing was applied.

    Attributes:
        branch: The task's id (a branch would be kept under it; a raise keeps none).
        report: What did not merge, and why.
    """

    branch: str
    report: str


@dataclass(eq=False)
class BranchFull(FsToolsError):
    """A change that would take a branch past one of its limits; nothing was changed.

    Attributes:
        path: The path the change was to.
        limit: Which limit: `files` (paths changed) or `bytes` (bytes held).
        maximum: The limit's value.
    """

    path: str
    limit: str
    maximum: int


@dataclass(eq=False)
class ExecutionUnsupported(FsToolsError):
    """The backend cannot run commands."""

    backend: str


@dataclass(eq=False)
class PatchNotUndone(FsToolsError):
    """A patch failed midway, and some of its steps could not be undone.

    Each undo is conditional: a file another writer changed after the patch wrote it
    keeps that writer's work instead of being restored.

    Attributes:
        cause: The error that stopped the patch.
        restored: Files put back as they were before the patch.
        kept: (path, what it holds) for each step left undone.
    """

    cause: Exception
    restored: tuple[str, ...]
    kept: tuple[tuple[str, str], ...]


@dataclass(eq=False)
class PatchParseError(FsToolsError):
    """A patch does not follow the apply_patch grammar; `line` is 1-based in the patch."""

    message: str
    line: int


@dataclass(eq=False)
class ContextNotFound(FsToolsError):
    """A chunk of an `Update File` section matches no place in the file.

    Attributes:
        path: The file being updated.
        chunk: 1-based number of the chunk within its `Update File` section.
        expected: The lines the chunk looked for (`@@` context or ` `/`-` lines).
        closest: The region of the file most like `expected` (empty if none).
        closest_line: 1-based line where `closest` starts (0 if none).
    """

    path: str
    chunk: int
    expected: tuple[str, ...]
    closest: tuple[str, ...]
    closest_line: int


@dataclass(eq=False)
class PatchConflict(FsToolsError):
    """A patch asks for something the workspace does not allow; `reason` says what."""

    path: str
    reason: str


@dataclass(eq=False)
class UnsupportedInvocation(FsToolsError):
    """A shell command calls apply_patch in a form that is refused; `reason` says why."""

    reason: str


@dataclass(eq=False)
class CommandRefused(FsToolsError):
    """The command policy refuses a shell command; `reason` says which part and why."""

    rule: str
    reason: str


@dataclass(eq=False)
class ProcessLimit(FsToolsError):
    """A sandbox session runs as many background processes as it may (`limit`)."""

    limit: int


@dataclass(eq=False)
class SandboxUnavailable(FsToolsError):
    """No OS sandbox can start on this machine, so commands are refused; `reason` says why."""

    reason: str


@dataclass(eq=False)
class SandboxFailed(FsToolsError):
    """A remote sandbox (`SandboxBackend`) failed a call, or its helper gave no answer.

    `reason` says what failed, in words; nothing the call would change was kept.
    """

    reason: str


@dataclass(eq=False)
class CommandTooLarge(FsToolsError):
    """A command, with its environment, is larger than the sandbox takes (bytes); nothing ran."""

    size: int
    limit: int


@dataclass(eq=False)
class NeverReady(FsToolsError):
    """A background process ended before it was ready; `output` is what it printed."""

    process_id: str
    exit_code: int | None
    output: str


@dataclass(eq=False)
class CommandTimedOut(FsToolsError):
    """A command ran past its timeout and was killed; `output` is what it printed."""

    timeout: float
    output: str


@dataclass(eq=False)
class ChangesNotCommitted(FsToolsError):
    """A command ran on a copy-on-write view, and nothing it changed was committed.

    Attributes:
        reason: `protected` (a path no command may change), `stale` (the path also
            changed in the workspace while the command ran), `denied` (a rule),
            `unapproved` (no thread to ask a person in), `unwritable` (the disk's
            own permissions refused the agent's user) or `unreadable` (a workspace
            folder the agent's user may not look into).
        path: The first path found.
        why: For a protected path, why in a few words ("git runs outside the sandbox").
        output: What the command printed, ending with its exit code line.
    """

    reason: str
    path: str
    why: str
    output: str


@dataclass(eq=False)
class SSHConnectionFailed(FsToolsError):
    """The SSH server could not be reached, or the connection to it was lost.

    `reason` is a short description without host paths; the next call reconnects.
    """

    host: str
    reason: str


@dataclass(eq=False)
class SSHAuthenticationFailed(FsToolsError):
    """The SSH server refused every key (or the agent) offered for `username`."""

    host: str
    username: str


@dataclass(eq=False)
class SSHHostKeyRejected(FsToolsError):
    """The SSH server's host key is not in `known_hosts`, or differs from it."""

    host: str


@dataclass(eq=False)
class PermissionDenied(FsToolsError):
    """A permission rule, the mode or a person refused a tool call.

    Attributes:
        tool: The tool called.
        operation: read, write or execute.
        target: The path or command refused.
        reason: What refused it ("permission rule 2", "the plan mode", ...).
    """

    tool: str
    operation: str
    target: str
    reason: str


@dataclass(eq=False)
class StaleApproval(FsToolsError):
    """A file changed between the preview a person approved and the call itself.

    Nothing else is applied in its place: the approved change is the previewed one.
    """

    path: str


@dataclass(eq=False)
class ChangedOutsideAgent(FsToolsError):
    """A file to restore changed since the agent's last change to it."""

    path: str


@dataclass(eq=False)
class ChangeNotKept(FsToolsError):
    """A change whose earlier content was too large to keep in the history."""

    path: str
    tool_call_id: str


@dataclass(eq=False)
class UnknownChange(FsToolsError):
    """No recorded change for a tool call id or a path (none, or trimmed away)."""

    key: str


__all__ = [
    "AmbiguousMatch",
    "BinaryFile",
    "BranchFull",
    "ChangeNotKept",
    "ChangedOutsideAgent",
    "ChangedSinceRead",
    "ChangesNotCommitted",
    "CommandRefused",
    "CommandTimedOut",
    "ConditionalWritesIgnored",
    "ContextNotFound",
    "DiskFull",
    "ExecutionUnsupported",
    "FileAlreadyExists",
    "FileTooLarge",
    "FsToolsError",
    "InvalidArgument",
    "InvalidPath",
    "InvalidStateRecord",
    "MissingExtra",
    "MissingFile",
    "NeedsWindow",
    "NeverReady",
    "NoMatch",
    "NoOpEdit",
    "NotABackend",
    "NotInGraph",
    "NotInMount",
    "NotReadYet",
    "OutsideRoot",
    "PartialWrite",
    "PatchConflict",
    "PatchParseError",
    "PermissionDenied",
    "ProcessLimit",
    "SSHAuthenticationFailed",
    "SSHConnectionFailed",
    "SSHHostKeyRejected",
    "SandboxFailed",
    "SandboxUnavailable",
    "SearchFailed",
    "SpecialFile",
    "StaleApproval",
    "StoreUnavailable",
    "UnknownChange",
    "UnreadableMedia",
    "UnsupportedInvocation",
    "UseNotebookEdit",
    "VersionConflict",
    "WriteLockTimeout",
]
