"""The one place where errors become text for a model.

Each error becomes one sentence saying what went wrong and what to do next. Only
virtual paths appear; a host path never does, because backends raise errors that carry
virtual paths only and unexpected errors are reported by type, not by message.
"""

from __future__ import annotations

import errno
import logging
from typing import TYPE_CHECKING

from langchain_fstools import errors
from langchain_fstools.core.wording import plural
from langchain_fstools.formats import syntax
from langchain_fstools.formats.syntax import LANGUAGES
from langchain_fstools.formats.text import render_row

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pydantic import ValidationError

    from langchain_fstools.formats.syntax import SyntaxReport

logger = logging.getLogger(__name__)


def render_error(exc: BaseException, *, tool: str, reader: str | None = None) -> str:
    """Return the model-facing sentence for `exc` raised by `tool`.

    `reader` names who must have read a file before writing it, where reads travel
    with the calls (`"this MCP client"`, see `mcp.handles`); None for the agent itself.
    """
    if isinstance(exc, errors.NotReadYet) and reader is not None:
        return _not_read_by_client(exc, reader)
    message = _known(exc)
    if message is None:
        logger.error("%s failed unexpectedly", tool, exc_info=exc)
        message = (
            f"Error: {tool} failed unexpectedly ({type(exc).__name__}); "
            "check the arguments and try again, or use another tool."
        )
    return message


def _not_read_by_client(exc: errors.NotReadYet, reader: str) -> str:
    """The refusal naming the client, and how its read reaches the change."""
    seen = "has read only part of" if exc.partially else "has not read"
    whole = "all of it " if exc.partially else "it "
    return (
        f"Error: {reader} {seen} {exc.path}: read {whole}with read_file, then retry "
        "passing the read_handle its answer ends with as this call's read_handle."
    )


def _not_undone(
    cause: Exception, restored: tuple[str, ...], kept: tuple[tuple[str, str], ...]
) -> str:
    """A patch that failed midway and could be undone only in part: who holds what."""
    why = (_known(cause) or f"Error: {type(cause).__name__}.").removeprefix("Error: ")
    lines = [f"Error: the patch failed and was only partly undone. Why it failed: {why}"]
    if restored:
        lines.append("Restored as before the patch: " + ", ".join(restored) + ".")
    lines += [f"Not restored: {path} holds {holds}." for path, holds in kept]
    lines.append("Read these files again before changing them.")
    return "\n".join(lines)


def render_validation_error(exc: ValidationError) -> str:
    """The model-facing sentence for arguments that do not fit the tool's schema."""
    problems = "; ".join(
        f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
        for error in exc.errors()[:5]
    )
    return f"Error: invalid arguments ({problems}). Fix them and call the tool again."


def render_syntax_reports(reports: Sequence[SyntaxReport]) -> str:
    """The note a change that introduced syntax errors gets (`syntax_check="report"`)."""
    count = sum(len(report.problems) for report in reports)
    return (
        f"Syntax check: this change introduced {_errors_phrase(count)}; fix"
        f" {'it' if count == 1 else 'them'} with another edit:\n{_syntax_lines(reports)}"
    )


_SHOWN_PROBLEMS = 5


def _errors_phrase(count: int) -> str:
    return f"{count} syntax error{'' if count == 1 else 's'}"


def _syntax_lines(reports: Sequence[SyntaxReport]) -> str:
    rows = []
    for report in reports:
        where = report.path if report.cell is None else f"cell {report.cell} of {report.path}"
        rows.append(f"{where} ({LANGUAGES.get(report.language, report.language)}):")
        rows.extend(
            f"  line {problem.line}, column {problem.column} ({problem.message}): "
            f"{problem.excerpt or '(empty line)'}"
            for problem in report.problems[:_SHOWN_PROBLEMS]
        )
        if len(report.problems) > _SHOWN_PROBLEMS:
            rows.append(f"  ... and {len(report.problems) - _SHOWN_PROBLEMS} more")
    return "\n".join(rows)


def _known(exc: BaseException) -> str | None:
    """The message of an error this package knows, by family; None for any other."""
    for family in _FAMILIES:
        message = family(exc)
        if message is not None:
            return message
    return None


def _path_error(exc: BaseException) -> str | None:  # noqa: PLR0911 - one return per error kind
    """Paths: invalid, outside, special, missing, too large to handle at once."""
    match exc:
        case errors.InvalidPath(path=path, reason=reason):
            return (
                f"Error: invalid path {path!r}: {reason}."
                " Use an absolute workspace path such as /src/app.py."
            )
        case errors.OutsideRoot(path=path):
            return f"Error: {path!r} is outside the workspace. Use a path inside /."
        case errors.SpecialFile(path=path, kind=kind):
            return f"Error: {path} is a {kind}, not a regular file; it cannot be read or written."
        case errors.FileTooLarge(path=path, size=size, limit=limit):
            return (
                f"Error: {path} is {plural(size, 'byte')}, above the {limit:,}-byte limit for this"
                " operation; work on a smaller file or read it in windows with offset and limit."
            )
        case errors.MissingFile(path=path, suggestions=[_, *_] as suggestions, looked_in=where):
            return (
                f"Error: {path} does not exist{_in(where)}."
                f" Did you mean {' or '.join(suggestions)}?"
            )
        case errors.MissingFile(path=path, looked_in=where):
            return f"Error: {path} does not exist{_in(where)}. Check the path with ls or glob."
        case errors.NeedsWindow(path=path, size=size, limit=limit):
            return (
                f"Error: {path} is {plural(size, 'byte')}, more than the"
                f" {plural(limit, 'byte')} read_file returns at once. Read it in windows with"
                " offset and limit, or find the place with grep."
            )
    return None


def _in(where: str | None) -> str:
    """` in the local backend mounted at /workspace/`, or nothing outside a mount."""
    return "" if where is None else f" in {where}"


def _content_error(exc: BaseException) -> str | None:
    """Content this tool cannot handle: binary files, notebooks, unreadable media."""
    match exc:
        case errors.BinaryFile(path=path):
            return (
                f"Error: {path} is a binary file (not text, an image, a PDF or a notebook),"
                " so it cannot be shown or edited as text. Leave it as it is, or ask the user"
                " how to handle it."
            )
        case errors.UseNotebookEdit(path=path):
            return f"Error: {path} is a Jupyter notebook; use notebook_edit to change its cells."
        case errors.UnreadableMedia(path=path, kind=kind, reason=reason):
            return f"Error: cannot read the {kind} {path}: {reason}."
    return None


def _edit_error(exc: BaseException) -> str | None:  # noqa: PLR0911 - one return per error kind
    """Reads, edits and searches: staleness, read-before-write, matching, arguments."""
    match exc:
        case errors.VersionConflict(path=path) | errors.ChangedSinceRead(path=path):
            return (
                f"Error: {path} has been modified since it was last read."
                " Read it again with read_file, then retry."
            )
        case errors.NotReadYet(path=path, partially=True):
            return (
                f"Error: only part of {path} has been read."
                " Read the rest with read_file (your own edits do not count) before"
                " overwriting it, or change only what you need with edit_file."
            )
        case errors.NotReadYet(path=path):
            return f"Error: {path} has not been read yet. Read it with read_file first, then retry."
        case errors.NoMatch(path=path):
            return (
                f"Error: old_string was not found in {path}."
                " Read the file again and copy the exact text, including whitespace."
            )
        case errors.AmbiguousMatch(path=path, count=count):
            return (
                f"Error: old_string occurs {plural(count, 'time')} in {path}."
                " Add surrounding lines to make it unique, or set replace_all=true."
            )
        case errors.NoOpEdit():
            return "Error: old_string and new_string are identical; nothing to change."
        case errors.FileAlreadyExists(path=path):
            return (
                f"Error: {path} already exists and is not empty; an empty old_string only"
                " creates new files. Use a non-empty old_string to edit it."
            )
        case errors.SearchFailed(reason=reason):
            return (
                f"Error: the search failed ({reason})."
                " Narrow the pattern, path or glob and try again."
            )
        case errors.InvalidArgument(argument=argument, reason=reason):
            return f"Error: invalid {argument}: {reason}."
    return None


def _patch_error(exc: BaseException) -> str | None:  # noqa: PLR0911 - one return per error kind
    """Patches and syntax checks: parse errors, context, conflicts, partial undo."""
    match exc:
        case errors.PatchNotUndone(cause=cause, restored=restored, kept=kept):
            return _not_undone(cause, restored, kept)
        case errors.PatchParseError(message=message, line=line):
            return (
                f"Error: invalid patch at line {line}: {message}."
                " Fix the patch and send it again; nothing was changed."
            )
        case errors.ContextNotFound():
            return _context_not_found(exc)
        case errors.PatchConflict(path=path, reason=reason):
            return f"Error: cannot apply the patch to {path}: {reason}. Nothing was changed."
        case syntax.SyntaxBroken(reports=reports):
            count = sum(len(report.problems) for report in reports)
            return (
                f"Error: this change would introduce {_errors_phrase(count)}, so nothing"
                f" was changed (lines as they would be after the change):\n"
                f"{_syntax_lines(reports)}\nFix the change and call the tool again."
            )
        case errors.UnsupportedInvocation(reason=reason):
            return f"Error: {reason}. Nothing was changed."
    return None


def _write_error(exc: BaseException) -> str | None:
    """Writes that waited for other writers too long, or found their branch full."""
    match exc:
        case errors.BranchNotMerged(report=report):
            said = report.rstrip()
            return f"Error: {said}" if said.endswith((".", "?", ":")) else f"Error: {said}."
        case errors.BranchFull(path=path, limit=limit, maximum=maximum):
            held = plural(maximum, "changed path") if limit == "files" else plural(maximum, "byte")
            return (
                f"Error: nothing was written to {path}: the branch this task works in is full"
                f" (its limit is {held}). Finish with the changes made so far and return, so"
                " they are merged, and leave the rest to another task."
            )
        case errors.WriteLockTimeout(path=path, seconds=seconds):
            return (
                f"Error: another writer kept the folder of {path} locked for {seconds:g} s;"
                " nothing was written. Try the call again shortly."
            )
        case errors.DiskFull(path=path, needed=needed, free=free) if needed > free:
            return (
                f"Error: the disk is full, so nothing was written: the changes need"
                f" {_amount(needed)} and {_amount(free)} is free ({_amount(needed - free)}"
                " too much); free space or change less, then try again."
            )
        case errors.DiskFull(path=path):
            return (
                f"Error: the disk is full (no room left for {path}), so nothing was written;"
                " free space, then try again."
            )
    return None


def _amount(size: int) -> str:
    """`512 bytes`, `3.5 KiB`, `12.0 MiB`, `1.2 GiB`."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return plural(size, "byte")


def _command_error(exc: BaseException) -> str | None:  # noqa: PLR0911 - one return per error kind
    """Commands: no execute, refused, no sandbox, too many processes, timed out."""
    match exc:
        case errors.ExecutionUnsupported(backend=backend):
            return (
                f"Error: the {backend} backend cannot run commands;"
                " use the file tools (read_file, grep, glob, edit_file) instead."
            )
        case errors.CommandRefused(reason=reason):
            return (
                f"Error: command refused: {reason}."
                " Run another command, or ask the user to run this one."
            )
        case errors.SandboxUnavailable(reason=reason):
            return (
                f"Error: commands cannot run: no OS sandbox can start here ({reason})."
                " Use the file tools instead, and tell the user: they can fix the sandbox, or"
                " opt out with sandbox=None, which runs commands unconfined (unsafe)."
            )
        case errors.SandboxFailed(reason=reason):
            return (
                f"Error: the sandbox failed: {reason}; nothing was changed. Try again shortly,"
                " and if it persists tell the user."
            )
        case errors.ProcessLimit(limit=limit):
            return (
                f"Error: this session already runs {limit} background processes, the most it"
                " may; kill one (process tool, action kill) before starting another."
            )
        case errors.NeverReady(process_id=ident, exit_code=code, output=output):
            ended = "ended" if code is None else f"exited with code {code}"
            notice = (
                f"Error: process {ident} {ended} before it was ready."
                " Fix what its output says, then start it again."
            )
            return output.rstrip("\n") + "\n" + notice if output else notice
        case errors.CommandTimedOut(timeout=timeout, output=output):
            notice = (
                f"Error: the command did not finish within {plural(timeout, 'second')}"
                " and was killed, with everything it started. Give it a larger timeout, or run"
                " less at once (e.g. a subset of the tests)."
            )
            return output.rstrip("\n") + "\n" + notice if output else notice
        case errors.ChangesNotCommitted(reason=reason, path=path, why=why, output=output):
            return f"{output}\n{_not_committed(reason, path, why)}"
    return None


def _command_size_error(exc: BaseException) -> str | None:
    """Commands: a command too large for the sandbox to take."""
    match exc:
        case errors.CommandTooLarge(size=size, limit=limit):
            return (
                f"Error: the command takes {plural(size, 'byte')} with its environment, over"
                f" the {plural(limit, 'byte')} the sandbox takes; nothing ran. Put long text"
                " in a file (write_file) and have the command read it."
            )
    return None


def _not_committed(reason: str, path: str, why: str) -> str:
    """Why nothing a command changed was kept, and what to do instead."""
    start = "Error: nothing the command changed was kept:"
    if reason == "stale":
        return (
            f"{start} {path} also changed in the workspace while it ran."
            " Check the file, then run the command again."
        )
    if reason == "denied":
        return (
            f"{start} a permission rule denies changing {path}. Run a command that leaves it alone."
        )
    if reason == "unreadable":
        return (
            f"{start} the agent's user may not look into the workspace's folders above"
            f" {path}, so what the command changed there cannot be compared with them. Ask"
            " the user to make them readable, or leave them alone."
        )
    if reason == "unwritable":
        return (
            f"{start} the agent's user may not write {path} (the disk refused it)."
            " Check the owner and mode of its folder, or leave it out."
        )
    if reason == "unapproved":
        return (
            f"{start} changing {path} needs a person's approval, and this call has no"
            " thread to ask in. Make the change with the file tools instead."
        )
    return (
        f"{start} it changed {path}, which commands may not change ({why})."
        " Leave it out, or make that change with write_file or edit_file."
    )


def _permission_error(exc: BaseException) -> str | None:  # noqa: PLR0911 - one return per error kind
    """Permissions, approvals and file history."""
    match exc:
        case errors.PermissionDenied(tool=tool_name, operation="execute", reason=reason):
            return (
                f"Error: {tool_name} was refused: {reason} does not allow running this"
                " command. Do not retry it; use the file tools or ask the user."
            )
        case errors.PermissionDenied(tool=tool_name, target=target, reason=reason):
            return (
                f"Error: {tool_name} was refused: {reason} does not allow it on {target}."
                " Do not retry it; work on other paths or ask the user."
            )
        case errors.StaleApproval(path=path):
            return (
                f"Error: {path} changed after the change was approved, so nothing was"
                " applied. Read it again and make the change anew."
            )
        case errors.ChangedOutsideAgent(path=path):
            return (
                f"Error: {path} was changed outside your file tools since your last change,"
                " so it was not restored. Read it and edit it instead."
            )
        case errors.ChangeNotKept(path=path):
            return (
                f"Error: the earlier content of {path} was too large to keep, so the change"
                " cannot be undone. Edit the file instead."
            )
        case errors.UnknownChange(key=key):
            return f"Error: there is no recorded change to {key} to undo."
    return None


def _remote_error(exc: BaseException) -> str | None:  # noqa: PLR0911 - one return per error kind
    """What lies outside the workspace: SSH, graph state, the store."""
    match exc:
        case errors.SSHConnectionFailed(reason=reason):
            return (
                f"Error: the remote workspace is unreachable over SSH ({reason});"
                " try again shortly, and if it persists ask the user to check the server."
            )
        case errors.SSHAuthenticationFailed():
            return (
                "Error: the SSH server refused the login; ask the user to check the key"
                " or agent configured for this workspace (retrying will not help)."
            )
        case errors.SSHHostKeyRejected():
            return (
                "Error: the SSH server's host key is not trusted (unknown or changed);"
                " ask the user to verify it and add it to known_hosts (retrying will not help)."
            )
        case errors.NotInGraph(missing=missing):
            return f"Error: {missing}"
        case errors.InvalidStateRecord() | errors.NotABackend():
            return f"Error: {exc}. This is a setup problem, not your arguments: tell the user."
        case errors.ConditionalWritesIgnored():
            return (
                "Error: the file store does not check conditional writes, so this write could"
                " silently overwrite someone else's; writes are refused until the store is"
                " configured. Tell the user (retrying will not help)."
            )
        case errors.StoreUnavailable(reason=reason, cause=str(cause), lasting=True):
            return (
                f"Error: the file store failed: {cause} ({reason})."
                " This is a setup problem, not your arguments: tell the user."
            )
        case errors.StoreUnavailable(reason=reason, cause=str(cause)):
            return (
                f"Error: the file store failed: {cause} ({reason})."
                " Try the call again; if it keeps failing, tell the user."
            )
        case errors.StoreUnavailable(reason=reason):
            return (
                f"Error: the file store failed ({reason})."
                " Try the call again; if it keeps failing, tell the user."
            )
    return None


def _os_error(exc: BaseException) -> str | None:  # noqa: PLR0911 - one return per error kind
    """Plain `OSError`s a backend raises, with the virtual path as their filename."""
    match exc:
        case errors.NotInMount(filename=path, looked_in=where):
            return f"Error: {path} does not exist{_in(where)}. Check the path with ls or glob."
        case FileNotFoundError(filename=path):
            return f"Error: {path} does not exist. Check the path with ls or glob."
        case IsADirectoryError(filename=path):
            return f"Error: {path} is a directory, not a file. Use ls to list it."
        case NotADirectoryError(filename=path):
            return (
                f"Error: {path} cannot exist: a folder on its way is a file."
                " List the folders above it with ls to find the right path."
            )
        case FileExistsError(filename=path):
            return f"Error: {path} already exists as a file. Choose another path."
        case PermissionError(filename=path):
            return f"Error: permission denied for {path}. Choose a file you may access."
        case OSError(errno=errno.ENOTEMPTY, filename=path):
            return f"Error: directory {path} is not empty."
        case OSError(filename=str() as path):
            return (
                f"Error: the operation on {path} failed ({type(exc).__name__})."
                " Check the path and try again."
            )
    return None


_FAMILIES = (
    _path_error,
    _content_error,
    _edit_error,
    _patch_error,
    _write_error,
    _command_error,
    _command_size_error,
    _permission_error,
    _remote_error,
    _os_error,
)
"""The error families, each tried in turn (plain `OSError`s last: the package's own errors
may subclass them)."""


_SHOWN_LINES = 12
_SHOWN_WIDTH = 200


def _shown(lines: tuple[str, ...], first: int | None = None) -> str:
    rows = [
        (render_row(str(first + n), "") if first is not None else "  ")
        + (line if len(line) <= _SHOWN_WIDTH else line[:_SHOWN_WIDTH] + "…")
        for n, line in enumerate(lines[:_SHOWN_LINES])
    ]
    if len(lines) > _SHOWN_LINES:
        rows.append(f"  ... ({plural(len(lines) - _SHOWN_LINES, 'more line')})")
    return "\n".join(rows)


def _context_not_found(exc: errors.ContextNotFound) -> str:
    text = (
        f"Error: chunk {exc.chunk} of the update of {exc.path} does not match the file;"
        f" these lines were not found:\n{_shown(exc.expected)}"
    )
    if exc.closest:
        text += f"\nThe closest lines in the file are:\n{_shown(exc.closest, exc.closest_line)}"
    return (
        text + "\nRead the file, fix the ' ' and '-' lines (and '@@' lines) of that chunk"
        " to match it exactly, and send the whole patch again; nothing was changed."
    )


__all__ = ["render_error", "render_syntax_reports", "render_validation_error"]
