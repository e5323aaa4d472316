"""FileToolkit: the file tools over one backend, sharing settings and read state."""

from __future__ import annotations

import dataclasses
import inspect
import textwrap
from typing import TYPE_CHECKING, Any

from langchain_core.tools import BaseTool, BaseToolkit
from pydantic import ConfigDict

from langchain_fstools.backends.factory import FactoryBackend
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.tools import (
    ApplyPatchTool,
    DiagnosticsTool,
    EditFileTool,
    ExecuteTool,
    GlobTool,
    GrepTool,
    LsTool,
    NotebookEditTool,
    ProcessTool,
    ReadFileTool,
    ToolContext,
    ToolSettings,
    WriteFileTool,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from langchain_fstools.tools.base import FileTool

TOOL_CLASSES: dict[str, Callable[..., FileTool]] = {
    cls.model_fields["name"].default: cls
    for cls in (
        LsTool,
        ReadFileTool,
        WriteFileTool,
        EditFileTool,
        ApplyPatchTool,
        GlobTool,
        GrepTool,
        NotebookEditTool,
        ExecuteTool,
        ProcessTool,
        DiagnosticsTool,
    )
}
"""Every tool of the toolkit, by model-facing name."""


class FileToolkit(BaseToolkit):
    """The file tools over one backend.

    All tools of one toolkit share its settings, a line-index cache, and the read
    records used outside graph state, so read-before-write holds across them.

    Args:
        backend: Where the files live (`LocalBackend`, `StateBackend`, ...), or a
            function of each call's `ToolRuntime` returning the backend for that call
            (deepagents' factory, see `backends.factory`: return kept instances).
        tools: Names of the tools to include. Default: all of `TOOL_CLASSES` the toolkit
            can serve (`execute` only when `backend.supports_execute`; `diagnostics`
            only with language servers: `diagnostics=True`, a `Diagnostics`, or the
            `"auto"` default where it finds them).
        custom_tool_descriptions: Tool name -> the description the model reads instead
            of ours (deepagents' spelling). Default: none.
        **settings: Fields of `ToolSettings` (e.g. `read_limit=500`), listed under
            "Settings" below with their defaults.

    Example:
        ```python
        from langchain.agents import create_agent
        from langchain_fstools import FileToolkit, LocalBackend

        toolkit = FileToolkit(LocalBackend("./repo"))
        agent = create_agent("anthropic:claude-sonnet-4-5", tools=toolkit.get_tools())
        ```
    """

    context: ToolContext
    tool_names: tuple[str, ...]
    descriptions: dict[str, str]

    model_config = ConfigDict(arbitrary_types_allowed=True)

    def __init__(
        self,
        backend: Backend | Callable[[Any], Backend],
        *,
        tools: list[str] | None = None,
        custom_tool_descriptions: Mapping[str, str] | None = None,
        **settings: Any,
    ) -> None:
        """Build the toolkit.

        Raises:
            TypeError: `backend` is neither a backend instance nor a function of the
                runtime returning one (e.g. the class `StateBackend` instead of
                `StateBackend()`), or a setting of the wrong type.
            ValueError: an unknown tool name or setting, a setting out of range, a tool
                the toolkit cannot serve (`execute` without `supports_execute`,
                `diagnostics` without language servers), or a
                tool that changes only read files (`edit_file`, `write_file`,
                `notebook_edit`) without `read_file`, or a custom description of a tool
                not given.
        """
        backend = as_backend(backend)
        if isinstance(tools, str):
            raise TypeError(f"tools must be a list of tool names, such as [{tools!r}]")
        known = {f.name for f in dataclasses.fields(ToolSettings)}
        unknown_settings = sorted(set(settings) - known)
        if unknown_settings:
            raise ValueError(
                f"unknown settings {unknown_settings}; ToolSettings has {sorted(known)}"
            )
        context = ToolContext(backend, ToolSettings(**settings))
        if tools is None:
            names = tuple(name for name in TOOL_CLASSES if _servable(name, context))
        else:
            names = tuple(tools)
        unknown = sorted(set(names) - set(TOOL_CLASSES))
        if unknown:
            raise ValueError(f"unknown tools {unknown}; choose from {sorted(TOOL_CLASSES)}")
        blind = [n for n in names if _needs_read(n) and "read_file" not in names]
        if blind:
            raise ValueError(
                f"{blind} change only files the agent has read, so they need read_file;"
                " add 'read_file' to tools"
            )
        unservable = [name for name in names if not _servable(name, context)]
        if unservable:
            raise ValueError(_why_unservable(unservable, context))
        descriptions = dict(custom_tool_descriptions or {})
        undescribed = sorted(set(descriptions) - set(names))
        if undescribed:
            raise ValueError(
                f"custom_tool_descriptions names {undescribed}, which are not among the"
                f" tools given {sorted(names)}"
            )
        context.tool_names = frozenset(names)
        super().__init__(
            context=context,
            tool_names=names,
            descriptions=descriptions,
        )

    @property
    def backend(self) -> Backend:
        """The backend the tools work on."""
        return self.context.backend

    def get_tools(self) -> list[BaseTool]:
        """Return new tool instances sharing this toolkit's context."""
        return [
            TOOL_CLASSES[name](context=self.context, **_described(self.descriptions, name))
            for name in self.tool_names
        ]


def _settings_doc() -> str:
    """The "Settings" section of `FileToolkit`'s docstring, from `ToolSettings`'s own.

    `ToolSettings` documents each field once ("Attributes:"); this copies those entries,
    so `help(FileToolkit)` lists every keyword setting with its default.
    """
    doc = inspect.getdoc(ToolSettings) or ""
    entries = doc.split("Attributes:\n", 1)[1]
    section = "Settings (keyword arguments, as `ToolSettings` fields):\n" + entries.rstrip()
    return "\n\n" + textwrap.indent(section, "    ")


FileToolkit.__doc__ = (FileToolkit.__doc__ or "").rstrip() + _settings_doc() + "\n"


def _needs_read(name: str) -> bool:
    """Whether the tool `name` changes only files the agent has read."""
    return bool(getattr(TOOL_CLASSES[name], "needs_read", False))


def _how_to_execute(backend: Backend) -> str:
    """What to do so that `backend`'s commands can be served."""
    cls = type(backend)
    if "execute" in inspect.signature(cls).parameters:
        return f"build it with {cls.__name__}(..., execute=True)"
    return "use a backend that runs commands: LocalBackend(root, execute=True) or SSHBackend"


def _servable(name: str, context: ToolContext) -> bool:
    """Whether a toolkit of `context` (its backend, its language servers) can serve `name`."""
    cls = TOOL_CLASSES[name]
    if getattr(cls, "requires_servers", False) and context.diagnostics is None:
        return False
    return context.backend.supports_execute or not getattr(cls, "requires_execute", False)


def _why_unservable(names: list[str], context: ToolContext) -> str:
    """Why a toolkit of `context` cannot serve `names`, and what to do."""
    backend = context.backend
    if not backend.supports_execute and any(
        getattr(TOOL_CLASSES[name], "requires_execute", False) for name in names
    ):
        return (
            f"the {backend.kind} backend does not run commands, so it cannot serve"
            f" {names}; {_how_to_execute(backend)}"
        )
    return (
        f"{names} need language servers: install the lsp extra (pip install"
        " 'langchain-fstools[lsp]') on a backend on local disk, or pass diagnostics=True"
        " or a Diagnostics"
    )


def as_backend(backend: object) -> Backend:
    """`backend` as the tools use it; a factory of the runtime as a `FactoryBackend`.

    An instance is used as it is; a function (deepagents' `lambda rt: StateBackend(rt)`)
    is called at every call (`backends.factory`).

    Raises:
        TypeError: neither, e.g. the class `StateBackend` instead of `StateBackend()`.
    """
    if isinstance(backend, Backend):
        return backend
    if callable(backend) and not isinstance(backend, type):
        return FactoryBackend(backend)
    kind = f"the class {backend.__name__}" if isinstance(backend, type) else repr(backend)
    raise TypeError(
        f"backend must be a backend instance such as StateBackend() or"
        f" LocalBackend('./repo'), or a function of the runtime returning one, not {kind}"
    )


def _described(descriptions: Mapping[str, str], name: str) -> dict[str, str]:
    """The `description=` argument of tool `name`, if it has a custom one."""
    return {"description": descriptions[name]} if name in descriptions else {}


__all__ = ["TOOL_CLASSES", "FileToolkit", "as_backend"]
