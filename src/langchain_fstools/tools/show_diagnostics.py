"""diagnostics: what the language servers say now of a file, or of a folder's files.

Read-only. In a toolkit (and so in `FilesystemMiddleware` and the MCP server) whenever
it has language servers (`ToolSettings.diagnostics`, the `"auto"` default included);
every change's result already carries the diagnostics it introduced, so this is for a
file's existing ones. The middleware offers it once the thread named a file a server
checks (`usable`): a thread about other files never pays for its schema.
"""

from __future__ import annotations

import posixpath
import re
from functools import cache, partial
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from langchain_fstools.core import calls, paths
from langchain_fstools.errors import InvalidArgument
from langchain_fstools.lsp.report import TextChange
from langchain_fstools.tools.base import CallScope, FileTool, ToolArgs, ToolOutcome, named_in
from langchain_fstools.tools.diagnosing import (
    local_folder,
    on_local_disk,
    read_text,
    render_current,
)
from langchain_fstools.tools.targets import Target

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from langchain_core.messages import BaseMessage

    from langchain_fstools.core.calls import Effect
    from langchain_fstools.lsp.diagnostics import Diagnostics

MAX_FILES = 50
"""Most files one call asks the servers about."""

SKIPPED = frozenset({"node_modules", "__pycache__", "venv", "site-packages", "target", "dist"})
"""Folders a folder's check does not enter (besides hidden ones)."""


class DiagnosticsArgs(ToolArgs):
    """Arguments of diagnostics."""

    path: str | None = Field(default=None, description="Absolute file or folder. Default: /.")


DESCRIPTION = """The language servers' errors and warnings in a file, or a folder's source
files (at most 50), now. Your changes already report those they introduce."""


class DiagnosticsTool(FileTool):
    """Ask the toolkit's language servers about a file or a folder, changing nothing."""

    name: str = "diagnostics"
    requires_servers: ClassVar[bool] = True
    description: str = DESCRIPTION
    args_schema: type[DiagnosticsArgs] = DiagnosticsArgs

    def usable(self, state: Mapping[str, Any], messages: Sequence[BaseMessage]) -> bool:
        """Offered once the thread named a file some server checks (asked for, listed, read)."""
        del state
        servers = self.context.diagnostics
        if servers is None:
            return False
        extensions = servers.extensions()
        return bool(extensions) and named_in(messages, _file_names(extensions))

    def targets(self, args: DiagnosticsArgs) -> list[Target]:
        """A read of `path` (the workspace when not given)."""
        return [Target("read", args.path or paths.ROOT)]

    def _effect(self, scope: CallScope, args: DiagnosticsArgs) -> Effect[ToolOutcome]:
        servers = scope.context.diagnostics
        root = local_folder(scope.backend)
        if servers is None or root is None:
            raise InvalidArgument(
                "path", "no language server checks files on this backend; read the file instead"
            )
        start = paths.normalize(args.path or paths.ROOT)
        found = yield from _files(servers, start)
        local = on_local_disk(scope.backend, [TextChange(path, None, None) for path in found])
        texts: list[tuple[str, str]] = []
        for change in local:
            text = yield from read_text(change.path)
            if text is not None:
                texts.append((change.path, text))
        report = yield from calls.blocking(partial(servers.current, root, texts))
        text = render_current(report, len(texts), scope.context.settings.count_tokens)
        artifact = {"files": [path for path, _ in texts], "count": len(report.introduced)}
        return ToolOutcome(text, artifact)


@cache
def _file_names(extensions: frozenset[str]) -> re.Pattern[str]:
    """A file name ending in one of `extensions` (`.py`), in any text."""
    alternatives = "|".join(sorted(re.escape(extension) for extension in extensions))
    return re.compile(rf"\w(?:{alternatives})\b", re.IGNORECASE)


def _files(servers: Diagnostics, start: str) -> Effect[list[str]]:
    """The files under `start` (or `start` itself) some server checks, breadth first."""
    info = yield from calls.stat(start)
    if not info.is_dir:
        return [start] if servers.checks(start) else []
    found: list[str] = []
    folders = [start]
    while folders and len(found) < MAX_FILES:
        folder = folders.pop(0)
        for entry in (yield from calls.list_dir(folder)):
            name = posixpath.basename(entry.path)
            if name.startswith(".") or name in SKIPPED:
                continue
            if entry.is_dir:
                folders.append(entry.path)
            elif servers.checks(entry.path) and len(found) < MAX_FILES:
                found.append(entry.path)
    return found


__all__ = ["DESCRIPTION", "DiagnosticsArgs", "DiagnosticsTool"]
