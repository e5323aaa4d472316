"""What every file tool shares: settings, the per-call scope, and the call pipeline.

A tool subclass declares its args schema and description and implements `_effect`,
a generator of backend calls (see `backends.calls`) that returns a `ToolOutcome`.
`FileTool` runs that one body from both `_run` (sync) and `_arun` (async), binds the
backend to the graph run, turns errors into one error sentence (`_render`), and returns
either `(content, artifact)` or, inside a graph with state to update, a `Command`
carrying the `ToolMessage`.
"""

from __future__ import annotations

import copy
from abc import abstractmethod
from collections.abc import Callable  # noqa: TC003 - pydantic resolves field types at runtime
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, InjectedToolArg, ToolException
from langchain_core.tools.base import FILTERED_ARGS
from langgraph.types import Command
from pydantic import (
    BaseModel,
    ConfigDict,
    PrivateAttr,
    ValidationError,
    create_model,
)
from pydantic.json_schema import SkipJsonSchema

from langchain_fstools.core import calls
from langchain_fstools.core.tokens import TokenCounter, default_counter
from langchain_fstools.formats.image import ImageLimits
from langchain_fstools.formats.text import LineIndexCache
from langchain_fstools.shell.policy import CommandPolicy
from langchain_fstools.tools._render import render_error, render_validation_error
from langchain_fstools.tools.tracking import READS_KEY, ReadLedger, ReadTracker

if TYPE_CHECKING:
    from langchain_core.callbacks import CallbackManagerForToolRun
    from langchain_core.tools.base import ArgsSchema

    from langchain_fstools.backends.protocol import Backend
    from langchain_fstools.core.calls import Effect


_NOT_TRACED = frozenset({*FILTERED_ARGS, "runtime"})
"""Inputs left out of traces: LangChain's callback arguments and the injected runtime."""

RuntimeArg = Annotated[Any, SkipJsonSchema(), InjectedToolArg()]
"""The injected `ToolRuntime` field every args schema carries, hidden from the model."""


class ToolArgs(BaseModel):
    """Base of every args schema: carries the injected runtime."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    runtime: RuntimeArg = None


@dataclass(frozen=True)
class ToolSettings:
    """Limits shared by the tools of one toolkit.

    Attributes:
        read_limit: Rows read_file returns when no limit is given. Default: 2000.
        read_token_budget: Most tokens one read_file result may hold. Default: 25000.
        ls_limit: Most entries ls lists. Default: 1000.
        max_edit_bytes: Largest file edit_file and write_file rewrite. Default: 64 MiB.
        diff_lines: Most diff lines shown after an edit or write. Default: 40.
        glob_limit: Most paths glob returns. Default: 100.
        grep_head_limit: Entries grep returns when `head_limit` is not given; 0 for
            all. Default: 250.
        search_timeout: Seconds glob and grep may run before returning what they
            found. Default: 20.
        read_max_bytes: Largest text file read_file reads without offset or limit;
            0 for no cap. Default: 256 KiB.
        max_media_bytes: Largest image or PDF read_file opens. Default: 128 MiB.
        image_limits: What images are scaled to fit. Default: `ImageLimits()`.
        pdf_pages_without_range: Most pages of a PDF read without `pages`. Default: 10.
        pdf_pages_per_call: Most PDF pages per read. Default: 20.
        pdf_file_blocks: Also attach the selected PDF pages as a `file` block, for
            models that read PDFs natively. Default: False.
        count_tokens: Token counter. Default: `tokens.default_counter()`.
        execute_timeout: Seconds a command may run when execute gets no `timeout`.
            Default: 120.
        execute_max_timeout: Largest `timeout` execute accepts. Default: 3600.
        execute_output_limit: Most bytes of a command's output kept (its head and its
            tail). Default: 100,000.
        command_policy: Which commands execute runs. Default: `CommandPolicy()`, which
            refuses the dangerous ones (sudo, rm -rf /, mkfs, ...).

    Counts are ints of at least 1 (`diff_lines`, `grep_head_limit` and
    `read_max_bytes` may be 0); times are seconds above 0, and `execute_timeout` is at
    most `execute_max_timeout`. Anything else raises `ValueError` or `TypeError` here,
    at construction, rather than as a tool error later.
    """

    read_limit: int = 2000
    read_token_budget: int = 25_000
    ls_limit: int = 1000
    max_edit_bytes: int = 64 * 1024 * 1024
    diff_lines: int = 40
    glob_limit: int = 100
    grep_head_limit: int = 250
    search_timeout: float = 20.0
    read_max_bytes: int = 256 * 1024
    max_media_bytes: int = 128 * 1024 * 1024
    image_limits: ImageLimits = field(default_factory=ImageLimits)
    pdf_pages_without_range: int = 10
    pdf_pages_per_call: int = 20
    pdf_file_blocks: bool = False
    count_tokens: TokenCounter = field(default_factory=default_counter)
    execute_timeout: float = 120.0
    execute_max_timeout: float = 3600.0
    execute_output_limit: int = 100_000
    command_policy: CommandPolicy = field(default_factory=CommandPolicy)

    def __post_init__(self) -> None:
        """Refuse a setting the tools could not use, in one sentence.

        Raises:
            TypeError: a setting of the wrong type.
            ValueError: a setting out of range.
        """
        for name in _COUNTS_FROM_ONE + _COUNTS_FROM_ZERO:
            _check_count(name, getattr(self, name), low=1 if name in _COUNTS_FROM_ONE else 0)
        for name in _SECONDS:
            _check_seconds(name, getattr(self, name))
        if self.execute_timeout > self.execute_max_timeout:
            raise ValueError(
                f"execute_timeout ({self.execute_timeout}) must not exceed execute_max_timeout"
                f" ({self.execute_max_timeout})"
            )
        if not isinstance(self.pdf_file_blocks, bool):
            raise TypeError("pdf_file_blocks must be True or False")
        if not isinstance(self.image_limits, ImageLimits):
            raise TypeError("image_limits must be an ImageLimits")
        if not isinstance(self.command_policy, CommandPolicy):
            raise TypeError("command_policy must be a CommandPolicy")
        if not callable(self.count_tokens):
            raise TypeError("count_tokens must be a function from text to a token count")


def _check_count(name: str, value: object, *, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be {low} or more, not {value}")


def _check_seconds(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not value > 0:
        raise ValueError(f"{name} must be more than 0 seconds, not {value}")


_COUNTS_FROM_ONE = (
    "read_limit",
    "read_token_budget",
    "ls_limit",
    "max_edit_bytes",
    "glob_limit",
    "max_media_bytes",
    "pdf_pages_without_range",
    "pdf_pages_per_call",
    "execute_output_limit",
)
_COUNTS_FROM_ZERO = ("diff_lines", "grep_head_limit", "read_max_bytes")
"""Settings where 0 means none or no limit."""
_SECONDS = ("search_timeout", "execute_timeout", "execute_max_timeout")


class ToolContext:
    """State shared by the tools of one toolkit: backend, settings, caches, reads.

    A plain class (not a dataclass) so pydantic passes it through tool fields as is:
    every tool of a toolkit must share the same instance.
    """

    def __init__(self, backend: Backend, settings: ToolSettings | None = None) -> None:
        """Share `backend` and `settings` (default `ToolSettings()`) among tools."""
        self.backend = backend
        self.settings = settings or ToolSettings()
        self.tracker = ReadTracker()
        self.line_indexes = LineIndexCache()
        self.deferred_updates: dict[str, dict[str, Any]] = {}
        """Tool call ids whose wrapper (`FilesystemMiddleware`) sends the state update
        with the message: the tool leaves its update here under the id and returns a
        plain message, since LangGraph deep-copies every `Command` a tool returns, but
        not one a middleware returns. Other calls return their own `Command`."""


@dataclass
class CallScope:
    """One tool call: the backend bound to the run, and the read records it sees."""

    backend: Backend
    reads: ReadLedger
    context: ToolContext
    runtime: Any


@dataclass(frozen=True)
class ToolOutcome:
    """A successful result: text (or content blocks) for the model, data for traces."""

    content: str | list[str | dict[Any, Any]]
    artifact: dict[str, Any]


class FileTool(BaseTool):
    """Base class of the file tools. Subclasses implement `_effect`."""

    context: ToolContext
    read_only: bool = True
    requires_execute: ClassVar[bool] = False
    """Whether the tool needs a backend that can run commands (`supports_execute`)."""
    needs_read: ClassVar[bool] = False
    """Whether the tool changes only files the agent read, so it needs `read_file`."""
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    handle_tool_error: bool = True
    handle_validation_error: Callable[[ValidationError], str] = render_validation_error  # type: ignore[assignment]

    model_config = ConfigDict(arbitrary_types_allowed=True)

    def model_post_init(self, context: Any, /) -> None:
        """Describe the tool for permission layers, schedulers and traces."""
        super().model_post_init(context)
        backend_kind = self.context.backend.kind
        self.metadata = {
            "fstools_family": "langchain_fstools",
            "fstools_backend": backend_kind,
            "read_only": self.read_only,
            "concurrency_safe": self.read_only,
            **(self.metadata or {}),
        }
        self.tags = [
            *(self.tags or []),
            "langchain_fstools",
            f"backend:{backend_kind}",
            "read-only" if self.read_only else "mutating",
        ]

    _aliased_schema: tuple[type[BaseModel], type[BaseModel]] | None = PrivateAttr(default=None)
    """LangChain's (memoized) schema and the aliased copy built from it, built once."""

    @property
    def tool_call_schema(self) -> ArgsSchema:
        """The schema the model sees: as LangChain builds it, keeping field aliases.

        LangChain's subset model drops aliases, so grep's `-A`, `-i`, ... would show as
        Python names; the aliases are the names models know.
        """
        schema = super().tool_call_schema
        source = self.args_schema
        if not (
            isinstance(schema, type)
            and issubclass(schema, BaseModel)
            and isinstance(source, type)
            and issubclass(source, BaseModel)
        ):
            return schema
        aliases = {n: f.alias for n, f in source.model_fields.items() if f.alias}
        if not aliases:
            return schema
        memo = self._aliased_schema
        if memo is not None and memo[0] is schema:
            return memo[1]
        fields: dict[str, Any] = {}
        for name, info in schema.model_fields.items():
            copied = copy.copy(info)
            copied.alias = copied.validation_alias = copied.serialization_alias = aliases.get(name)
            fields[name] = (info.annotation, copied)
        aliased: type[BaseModel] = create_model(
            schema.__name__,
            __config__=ConfigDict(populate_by_name=True),
            __doc__=schema.__doc__,
            **fields,
        )
        self._aliased_schema = (schema, aliased)
        return aliased

    @abstractmethod
    def _effect(self, scope: CallScope, args: Any) -> Effect[ToolOutcome]:
        """The tool's body: validated arguments and backend calls in, outcome out."""

    def _parse_input(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> str | dict[str, Any]:
        """Validate the arguments once, into the model `_run` receives.

        LangChain's own parsing would introspect the schema's annotations and dump the
        model on every call, and the tool would then validate the dump again.
        """
        schema = self.args_schema
        if isinstance(tool_input, str) or not (
            isinstance(schema, type) and issubclass(schema, BaseModel)
        ):
            return super()._parse_input(tool_input, tool_call_id)
        return {"arguments": schema.model_validate(tool_input)}

    def _filter_injected_args(self, tool_input: dict[str, Any]) -> dict[str, Any]:
        """The arguments as traces record them: without the injected runtime."""
        return {k: v for k, v in tool_input.items() if k not in _NOT_TRACED}

    def _run(self, *, arguments: Any, run_manager: CallbackManagerForToolRun | None = None) -> Any:
        del run_manager
        scope = self._open_scope(arguments.runtime)
        try:
            effect = self._effect(scope, arguments)
            outcome = calls.run(effect, scope.backend)
        except Exception as exc:
            raise ToolException(render_error(exc, tool=self.name)) from exc
        return self._finish(scope, outcome)

    async def _arun(self, *, arguments: Any, run_manager: Any = None) -> Any:
        del run_manager
        scope = self._open_scope(arguments.runtime)
        try:
            effect = self._effect(scope, arguments)
            outcome = await calls.arun(effect, scope.backend)
        except Exception as exc:
            raise ToolException(render_error(exc, tool=self.name)) from exc
        return self._finish(scope, outcome)

    def _open_scope(self, runtime: Any) -> CallScope:
        try:
            backend = self.context.backend.bind(runtime)
        except Exception as exc:
            raise ToolException(render_error(exc, tool=self.name)) from exc
        return CallScope(backend, self.context.tracker.ledger(runtime), self.context, runtime)

    def _state_update(self, scope: CallScope, outcome: ToolOutcome) -> dict[str, Any]:
        """The graph-state update of a successful call: the backend's, and new reads."""
        del outcome
        update = dict(scope.backend.state_update())
        if scope.reads.in_state and scope.reads.added:
            update[READS_KEY] = scope.reads.added
        return update

    def _finish(self, scope: CallScope, outcome: ToolOutcome) -> tuple[Any, dict[str, Any]]:
        update = self._state_update(scope, outcome)
        self.context.tracker.commit(scope.runtime, scope.reads)
        tool_call_id = getattr(scope.runtime, "tool_call_id", None)
        if not update or tool_call_id is None:
            return outcome.content, outcome.artifact
        if tool_call_id in self.context.deferred_updates:
            self.context.deferred_updates[tool_call_id] = update
            return outcome.content, outcome.artifact
        message = ToolMessage(
            content=outcome.content,
            artifact=outcome.artifact,
            tool_call_id=tool_call_id,
            name=self.name,
        )
        return Command(update={**update, "messages": [message]}), outcome.artifact


__all__ = ["CallScope", "FileTool", "ToolArgs", "ToolContext", "ToolOutcome", "ToolSettings"]
