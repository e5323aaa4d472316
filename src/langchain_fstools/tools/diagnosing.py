"""Diagnostics after a change: the language servers' verdict, added to the tool's result.

A tool that changes files lists them in `ToolOutcome.changes` (the text before and
after). After its body ran for real (never in a dry run, see `FileTool._checked`),
`diagnosed` hands them to the toolkit's `lsp.Diagnostics` and `with_diagnostics` appends
what the change introduced and fixed to the result, bounded to `MAX_SHOWN` diagnostics
and `TOKEN_BUDGET` tokens (the rest counted), and adds them to the artifact as
`diagnostics`. The servers read files on local disk:
on a backend without a host folder (state, store, object store, SSH, a branch, a
composite) nothing is checked and the result says nothing (documented in
`docs/diagnostics.md`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from langchain_fstools.backends.composite import CompositeBackend
from langchain_fstools.backends.guarded import BackendView
from langchain_fstools.backends.mounted import Rerooted
from langchain_fstools.core import calls
from langchain_fstools.core.extras import require
from langchain_fstools.formats import encoding
from langchain_fstools.lsp.report import TextChange
from langchain_fstools.lsp.servers import servers_wanted

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from langchain_fstools.backends.protocol import Backend, FileInfo
    from langchain_fstools.core.calls import Effect
    from langchain_fstools.core.tokens import TokenCounter
    from langchain_fstools.lsp.diagnostics import Diagnostics
    from langchain_fstools.lsp.report import Diagnostic, DiagnosticsReport
    from langchain_fstools.tools.settings import ToolSettings


class ToolContextLike(Protocol):
    """What this module needs of the toolkit's context (`base.ToolContext`)."""

    diagnostics: Diagnostics | None
    """The toolkit's language servers, or None."""

    def in_background(self, work: Callable[[], None]) -> None:
        """Run `work` later, on another thread."""


T = TypeVar("T")

MAX_SHOWN = 10
"""Most diagnostics listed in one result; the others are counted."""

MAX_FIXED_SHOWN = 5
"""Most fixed diagnostics listed in one result; the others are counted."""

TOKEN_BUDGET = 1_000
"""Most tokens the diagnostics of one result take."""

MAX_COMMAND_FILES = 50
"""Most files of one command's change set whose texts are checked."""

MAX_COMMAND_FILE_BYTES = 1024 * 1024
"""Largest file of a command's change set whose texts are checked."""

MAX_KEPT = 100
"""Most diagnostics of each kind the artifact (the trace) keeps; `counts` has them all."""

MESSAGE_CHARS = 300
"""Longest message shown of one diagnostic."""


def checker(settings: ToolSettings, backend: Backend) -> Diagnostics | None:
    """The language servers `settings.diagnostics` asks for over `backend`, or None.

    `"auto"` is True where `backend` keeps its files on local disk and
    `lsp.servers.servers_wanted()` (the `lsp` extra is installed, and not turned off by
    `LANGCHAIN_FSTOOLS_DIAGNOSTICS=off`); else False.

    Raises:
        MissingExtra: True, and the `lsp` extra is not installed.
    """
    wanted = settings.diagnostics
    if wanted == "auto":
        wanted = local_folder(backend) is not None and servers_wanted()
    if wanted is False:
        return None
    if wanted is True:
        require("pygls", extra="lsp", feature="diagnostics=True")
        from langchain_fstools.lsp.diagnostics import Diagnostics  # noqa: PLC0415 - optional

        return Diagnostics()
    return wanted


def local_folder(backend: Backend) -> str | None:
    """The host folder a backend keeps its files in, or None (not on local disk).

    A view's (a permission guard, the branches' switch) is its inner backend's; a
    composite's is its default backend's: files under its mounts are left out
    (`on_local_disk`).
    """
    backend = _unwrapped(backend)
    if isinstance(backend, Rerooted):  # its files are not at the paths the tools give
        return None
    if isinstance(backend, CompositeBackend):
        return local_folder(backend.default)
    key = backend.storage_key()
    if isinstance(key, tuple) and len(key) == 2 and key[0] == "local":  # noqa: PLR2004
        return str(key[1])
    return None


def on_local_disk(backend: Backend, changes: Sequence[TextChange]) -> list[TextChange]:
    """The changes of files `local_folder` holds (not under a composite's mounts)."""
    backend = _unwrapped(backend)
    if not isinstance(backend, CompositeBackend):
        return list(changes)
    mounts = tuple(backend.routes)
    return [
        change
        for change in changes
        if not any(change.path == m or change.path.startswith(f"{m}/") for m in mounts)
    ]


def _unwrapped(backend: Backend) -> Backend:
    """The backend a view (`BackendView`) forwards to, through every layer but a mount's."""
    while isinstance(backend, BackendView) and not isinstance(backend, Rerooted):
        backend = backend.inner
    return backend


def diagnosed(
    servers: Diagnostics, backend: Backend, changes: Sequence[TextChange]
) -> Effect[DiagnosticsReport | None]:
    """What `servers` say `changes` introduced and fixed; None when nothing is checked.

    Args:
        servers: The toolkit's language servers.
        backend: The bound backend the changes were written to.
        changes: The files changed, text before and after.
    """
    root = local_folder(backend)
    changes = on_local_disk(backend, changes)
    if root is None or not changes:
        return None
    report: DiagnosticsReport = yield from calls.blocking(partial(servers.check, root, changes))
    return report


def prepare_diagnostics(
    servers: Diagnostics | None, backend: Backend, info: FileInfo, context: ToolContextLike
) -> None:
    """After a read, let the servers hold the file, in the background (`Diagnostics.hold`).

    A later change elsewhere that breaks it (a function it calls renamed) is then
    reported with that change: the servers re-check the files they hold. A read never
    starts a server: one not running gets the file when a checked change starts it.
    """
    if servers is None or info.size > MAX_COMMAND_FILE_BYTES or not servers.checks(info.path):
        return
    root = local_folder(backend)
    if root is None or not on_local_disk(backend, [TextChange(info.path, None, None)]):
        return

    def hold() -> None:
        try:
            text = calls.run(read_text(info.path), backend)
            if text is not None:
                servers.hold(root, [(info.path, text)])
        except Exception:  # noqa: BLE001 - a warm-up only: a change checks anyway
            return

    context.in_background(hold)


def checked_change(
    context: ToolContextLike, backend: Backend, paths: Iterable[str], change: Effect[T]
) -> Effect[tuple[T, DiagnosticsReport | None]]:
    """Run `change`, which may change `paths`, and what the servers say it did to them.

    For a change outside a tool's body (a branch merged before the next model call):
    the texts are read before and after (`texts_before`, `texts_after`), and the
    report is None when nothing is checked (no servers, not on local disk, no text
    changed).
    """
    servers = context.diagnostics
    if servers is None or local_folder(backend) is None:
        result = yield from change
        return result, None
    local = on_local_disk(backend, [TextChange(path, None, None) for path in paths])
    before = yield from texts_before(servers, [item.path for item in local])
    result = yield from change
    changes = yield from texts_after(before)
    if not changes:
        return result, None
    report = yield from diagnosed(servers, backend, changes)
    return result, report


def texts_before(
    servers: Diagnostics | None, paths: Iterable[str]
) -> Effect[dict[str, str | None]]:
    """Before a command's or a merge's changes land: the texts their checked files have.

    Only files a server checks, at most `MAX_COMMAND_FILES` of them; a file that is not
    there (or not text) has None. Nothing is read without servers.
    """
    found: dict[str, str | None] = {}
    if servers is None:
        return found
    for path in paths:
        if len(found) >= MAX_COMMAND_FILES:
            break
        if servers.checks(path):
            found[path] = yield from read_text(path)
    return found


def texts_after(before: dict[str, str | None]) -> Effect[list[TextChange]]:
    """After the changes landed: each file of `texts_before`, text before and after."""
    paired: list[TextChange] = []
    for path, old in before.items():
        new = yield from read_text(path)
        if new != old:
            paired.append(TextChange(path, old, new))
    return paired


def read_text(path: str) -> Effect[str | None]:
    """A file's decoded text, or None (unreadable, binary, or above `MAX_COMMAND_FILE_BYTES`)."""
    try:
        info = yield from calls.stat(path)
        if info.size > MAX_COMMAND_FILE_BYTES:
            return None
        data = yield from calls.read_bytes(path)
    except OSError:
        return None
    codec = encoding.detect(data)
    return None if codec is None else codec.decode(data)


def with_diagnostics(
    content: str | list[str | dict[Any, Any]],
    artifact: dict[str, Any],
    report: DiagnosticsReport,
    count_tokens: TokenCounter,
) -> tuple[str | list[str | dict[Any, Any]], dict[str, Any]]:
    """A result's content and artifact with `report` added (`render_diagnostics`).

    The artifact (and so the trace) gets `diagnostics`: the first `MAX_KEPT` introduced
    and fixed, their `counts`, and the `notes`.
    """
    text = render_diagnostics(report, count_tokens)
    content = f"{content}\n\n{text}" if isinstance(content, str) else [*content, text]
    return content, {**artifact, "diagnostics": report_data(report)}


def report_data(report: DiagnosticsReport) -> dict[str, Any]:
    """`report` as the artifact keeps it: the first `MAX_KEPT` of each kind, counts, notes."""
    return {
        "introduced": [asdict(item) for item in report.introduced[:MAX_KEPT]],
        "fixed": [asdict(item) for item in report.fixed[:MAX_KEPT]],
        "counts": {"introduced": len(report.introduced), "fixed": len(report.fixed)},
        "notes": list(report.notes),
    }


def render_diagnostics(report: DiagnosticsReport, count_tokens: TokenCounter) -> str:
    """The report for the model: introduced ones first, then fixed ones, then notes.

    Each diagnostic is `path:line:col: severity code message`; past `MAX_SHOWN` or
    `TOKEN_BUDGET` the rest is counted ("and 14 more in 3 files").
    """
    lines: list[str] = []
    if report.introduced:
        lines.append("The change introduced these diagnostics:")
        lines += _bounded(report.introduced, MAX_SHOWN, count_tokens)
    if report.fixed:
        lines.append("It fixed these:")
        lines += _bounded(report.fixed, MAX_FIXED_SHOWN, count_tokens)
    lines += report.notes
    return "\n".join(lines)


def render_current(report: DiagnosticsReport, files: int, count_tokens: TokenCounter) -> str:
    """What the servers say now (`report.introduced`) of `files` files, bounded as above."""
    if not report.introduced:
        lines = [f"No diagnostics in {files} file{'s' * (files != 1)}."]
    else:
        lines = _bounded(report.introduced, MAX_SHOWN * 5, count_tokens)
    return "\n".join([*lines, *report.notes])


def _bounded(items: tuple[Diagnostic, ...], limit: int, count_tokens: TokenCounter) -> list[str]:
    shown: list[str] = []
    spent = 0
    for item in items:
        line = _line(item)
        cost = count_tokens(line)
        if len(shown) >= limit or spent + cost > TOKEN_BUDGET:
            break
        shown.append(line)
        spent += cost
    rest = items[len(shown) :]
    if rest:
        files = Counter(item.path for item in rest)
        shown.append(f"... and {len(rest)} more in {len(files)} file{'s' * (len(files) > 1)}.")
    return shown


def _line(item: Diagnostic) -> str:
    code = f" {item.code}" if item.code else ""
    message = " ".join(item.message.split())[:MESSAGE_CHARS]
    where = item.path if item.cell is None else f"{item.path} cell {item.cell}"
    return f"{where}:{item.line}:{item.column}: {item.severity}{code} {message} ({item.server})"


__all__ = [
    "checked_change",
    "checker",
    "diagnosed",
    "local_folder",
    "on_local_disk",
    "prepare_diagnostics",
    "read_text",
    "render_current",
    "render_diagnostics",
    "report_data",
    "texts_after",
    "texts_before",
    "with_diagnostics",
]
