"""What every file tool shares: settings, the per-call scope, and the call pipeline.

A tool subclass declares its args schema and description and implements `_effect`,
a generator of backend calls (see `core.calls`) that returns a `ToolOutcome`.
`FileTool` runs that one body from both `_run` (sync) and `_arun` (async), binds the
backend to the graph run, turns errors into one error sentence (`_render`), and returns
either `(content, artifact)` or, inside a graph with state to update, a `Command`
carrying the `ToolMessage`.
"""

from __future__ import annotations

import copy
import threading
from abc import abstractmethod
from collections.abc import Callable  # noqa: TC003 - pydantic resolves field types at runtime
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self

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
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from langchain_fstools.core import calls, progress
from langchain_fstools.core.tokens import TokenCounter, default_counter
from langchain_fstools.formats import syntax
from langchain_fstools.formats.image import ImageLimits
from langchain_fstools.formats.text import LineIndexCache
from langchain_fstools.shell.policy import CommandPolicy
from langchain_fstools.tools._dryrun import DryRun
from langchain_fstools.tools._render import render_error, render_validation_error
from langchain_fstools.tools.describe import describe, setting_values
from langchain_fstools.tools.targets import BOUNDED_OUTPUT, Preview
from langchain_fstools.tools.tracking import READS_KEY, ReadLedger, ReadTracker

if TYPE_CHECKING:
    from collections.abc import Collection

    from langchain_core.callbacks import CallbackManagerForToolRun
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools.base import ArgsSchema

    from langchain_fstools.backends.protocol import Backend
    from langchain_fstools.core.calls import Effect
    from langchain_fstools.tools.targets import Target


_NOT_TRACED = frozenset({*FILTERED_ARGS, "runtime"})
"""Inputs left out of traces: LangChain's callback arguments and the injected runtime."""

RuntimeArg = Annotated[Any, SkipJsonSchema(), InjectedToolArg()]
"""The injected `ToolRuntime` field of a tool's input schema, hidden from the model."""


class ToolArgs(BaseModel):
    """Base of every args schema: the model-facing arguments, nothing injected.

    The runtime is not a field here but of the tool's input schema
    (`FileTool.get_input_schema`), so the args schema holds only what a caller gives:
    a plain `tool.invoke(args)`, or `langchain_mcp_adapters.tools.to_fastmcp`, which
    refuses schemas with injected arguments, need no graph.
    """

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    @model_validator(mode="after")
    def _valid_text(self) -> Self:
        """Refuse text no file, path or pattern can hold: lone UTF-16 surrogates."""
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, str) and not value.isascii():
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError as exc:
                    code = f"U+{ord(value[exc.start]):04X}"
                    raise PydanticCustomError(
                        "lone_surrogate",
                        "{name} contains a lone surrogate ({code}), which is not a valid"
                        " character; remove it",
                        {"name": name, "code": code},
                    ) from None
        return self


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
        syntax_check: What edit_file, write_file, apply_patch (also through execute)
            and notebook_edit do when a change introduces syntax errors: `"report"`
            them with the result, `"refuse"` the change (nothing is written), or
            `"off"`. Needs the `syntax` extra (tree-sitter grammars); without it nothing
            is checked. Default: `"report"`.

    Counts are ints of at least 1 (`diff_lines`, `grep_head_limit` and
    `read_max_bytes` may be 0); times are seconds above 0, and `execute_timeout` is at
    most `execute_max_timeout`.

    Raises:
        ValueError: a setting out of its range, or `syntax_check` not one of `"report"`,
            `"refuse"`, `"off"`.
        TypeError: a setting of the wrong type.
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
    syntax_check: syntax.SyntaxCheck = "report"

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
        if self.syntax_check not in syntax.SYNTAX_CHECKS:
            choices = ", ".join(repr(choice) for choice in syntax.SYNTAX_CHECKS)
            raise ValueError(f"syntax_check must be one of {choices}, not {self.syntax_check!r}")


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

    def __init__(
        self,
        backend: Backend,
        settings: ToolSettings | None = None,
        *,
        tool_names: Collection[str] | None = None,
    ) -> None:
        """Share `backend` and `settings` (default `ToolSettings()`) among tools.

        `tool_names` are the tools the model gets (None: unknown), so descriptions name
        only those.
        """
        self.backend = backend
        self.settings = settings or ToolSettings()
        self.tool_names = None if tool_names is None else frozenset(tool_names)
        self.tracker = ReadTracker()
        self.reader: str | None = None
        """Who reads, named when a write is refused for want of a read, where reads are
        kept per client session (the MCP server sets it); None: the agent."""
        self.line_indexes = LineIndexCache()
        self.syntax_trees = syntax.TreeCache()
        """Parse trees of recently read or changed files, for incremental syntax checks."""
        self._background: ThreadPoolExecutor | None = None
        self._background_lock = threading.Lock()
        self.deferred_updates: dict[str, dict[str, Any]] = {}
        """Tool call ids whose wrapper (`FilesystemMiddleware`) sends the state update
        with the message: the tool leaves its update here under the id and returns a
        plain message, since LangGraph deep-copies every `Command` a tool returns, but
        not one a middleware returns. Other calls return their own `Command`."""

    def in_background(self, work: Callable[[], None]) -> None:
        """Run `work` on the toolkit's one background thread (started on first use)."""
        with self._background_lock:
            if self._background is None:
                self._background = ThreadPoolExecutor(1, thread_name_prefix="fstools")
        self._background.submit(work)


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
    bounds_output: ClassVar[bool] = True
    """Whether the tool bounds its own output (so eviction leaves its results alone)."""
    needs_read: ClassVar[bool] = False
    """Whether the tool changes only files the agent read, so it needs `read_file`."""
    idempotent: ClassVar[bool | None] = None
    """Whether the same call twice has the effect of one (None: exactly when read-only)."""
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    handle_tool_error: bool = True
    handle_validation_error: Callable[[ValidationError], str] = render_validation_error  # type: ignore[assignment]

    model_config = ConfigDict(arbitrary_types_allowed=True)

    def model_post_init(self, context: Any, /) -> None:
        """Describe the tool to the model (from the settings in force), layers and traces."""
        super().model_post_init(context)
        if self.description == type(self).model_fields["description"].default:
            self.description = describe(
                self.description,
                present=self.context.tool_names,
                values=setting_values(self.context.settings),
            )
        backend_kind = self.context.backend.traced_kind
        self.metadata = {
            "fstools_family": "langchain_fstools",
            "fstools_backend": backend_kind,
            "fstools_access": "read" if self.read_only else "mutate",
            "read_only": self.read_only,
            "concurrency_safe": self.read_only,
            BOUNDED_OUTPUT: self.bounds_output,
            **(self.metadata or {}),
        }
        self.tags = [
            *(self.tags or []),
            "langchain_fstools",
            f"backend:{backend_kind}",
            "read-only" if self.read_only else "mutating",
        ]

    _input_schema: tuple[type[BaseModel], type[BaseModel]] | None = PrivateAttr(default=None)
    """The args schema and its copy with the optional injected runtime, built once."""

    def get_input_schema(self, config: RunnableConfig | None = None) -> type[BaseModel]:
        """The args schema plus an optional injected `runtime` (None outside a graph).

        LangGraph's `ToolNode` fills `runtime` because this schema has it; the model
        never sees it (`tool_call_schema` leaves injected fields out).
        """
        del config
        source = self.args_schema
        if not (isinstance(source, type) and issubclass(source, BaseModel)):
            raise TypeError(f"{self.name}: args_schema must be a pydantic model")
        memo = self._input_schema
        if memo is not None and memo[0] is source:
            return memo[1]
        schema: type[BaseModel] = create_model(
            source.__name__, __base__=source, __doc__=source.__doc__, runtime=(RuntimeArg, None)
        )
        self._input_schema = (source, schema)
        return schema

    _aliased_schema: tuple[type[BaseModel], type[BaseModel]] | None = PrivateAttr(default=None)
    """LangChain's (memoized) schema and the aliased copy built from it, built once."""

    @property
    def tool_call_schema(self) -> ArgsSchema:
        """The schema the model sees: as LangChain builds it, keeping field aliases.

        LangChain's subset model drops aliases, so grep's `-A`, `-i`, ... would show as
        Python names; the aliases are the names models know.
        """
        schema = super().tool_call_schema
        source = self.get_input_schema()
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

    # ----- what a call touches and would change (see `tools.targets`) -------------------

    def validated(self, args: dict[str, Any]) -> Any:
        """The call's arguments validated by the args schema; None when they are invalid.

        An invalid call touches nothing: the tool refuses it with its own error.
        """
        schema = self.args_schema
        if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            return None
        try:
            return schema.model_validate({k: v for k, v in args.items() if k != "runtime"})
        except ValidationError:
            return None

    @abstractmethod
    def targets(self, args: Any) -> list[Target]:
        """What a call with validated `args` touches: operations on paths, or a command."""

    def previews(self, args: Any) -> bool:
        """Whether a call with validated `args` can be dry-run. Default: if it writes."""
        del args
        return not self.read_only

    def preview(self, backend: Backend, args: Any, runtime: Any = None) -> Preview | None:
        """Dry-run the call over bound `backend`: its exact change, or its error.

        Args:
            backend: The bound backend the call will run on (without permission views).
            args: Validated arguments (see `validated`).
            runtime: The call's runtime (read records, graph state).

        Returns:
            The preview, or None for a call that cannot be dry-run (a command).
        """
        if not self.previews(args):
            return None
        dry = DryRun(backend)
        scope = CallScope(dry, self.context.tracker.ledger(runtime), self.context, runtime)
        try:
            calls.run(self._effect(scope, args), dry)
        except Exception as exc:  # noqa: BLE001 - the error the call would return
            return _failed(exc, self.name)
        return dry.preview()

    async def apreview(self, backend: Backend, args: Any, runtime: Any = None) -> Preview | None:
        """Async `preview`."""
        if not self.previews(args):
            return None
        dry = DryRun(backend)
        scope = CallScope(dry, self.context.tracker.ledger(runtime), self.context, runtime)
        try:
            await calls.arun(self._effect(scope, args), dry)
        except Exception as exc:  # noqa: BLE001 - the error the call would return
            return _failed(exc, self.name)
        return dry.preview()

    def _parse_input(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> str | dict[str, Any]:
        """Validate the arguments once, into the model `_run` receives.

        LangChain's own parsing would introspect the schema's annotations and dump the
        model on every call, and the tool would then validate the dump again.
        """
        if isinstance(tool_input, str):
            return super()._parse_input(tool_input, tool_call_id)
        return {"arguments": self.get_input_schema().model_validate(tool_input)}

    def _filter_injected_args(self, tool_input: dict[str, Any]) -> dict[str, Any]:
        """The arguments as traces record them: without the injected runtime."""
        return {k: v for k, v in tool_input.items() if k not in _NOT_TRACED}

    def _run(self, *, arguments: Any, run_manager: CallbackManagerForToolRun | None = None) -> Any:
        del run_manager
        scope = self._open_scope(arguments.runtime)
        try:
            effect = self._effect(scope, arguments)
            with progress.listening(self._progress_listener(arguments.runtime)):
                outcome = calls.run(effect, scope.backend)
        except Exception as exc:
            raise ToolException(self._render(exc)) from exc
        return self._finish(scope, outcome)

    async def _arun(self, *, arguments: Any, run_manager: Any = None) -> Any:
        del run_manager
        scope = self._open_scope(arguments.runtime)
        try:
            effect = self._effect(scope, arguments)
            with progress.listening(self._progress_listener(arguments.runtime)):
                outcome = await calls.arun(effect, scope.backend)
        except Exception as exc:
            raise ToolException(self._render(exc)) from exc
        return self._finish(scope, outcome)

    def _render(self, exc: BaseException) -> str:
        """The model-facing sentence for `exc`, naming the reader where there is one."""
        return render_error(exc, tool=self.name, reader=self.context.reader)

    def _progress_listener(self, runtime: Any) -> Callable[[dict[str, Any]], None] | None:
        """The run's stream writer, each report tagged with this tool and call.

        None outside a graph. A run that streams no `custom` mode hands tools a writer
        that drops what it gets.
        """
        writer = getattr(runtime, "stream_writer", None)
        if writer is None:
            return None
        tagged = {"tool": self.name, "tool_call_id": getattr(runtime, "tool_call_id", None)}

        def listener(event: dict[str, Any]) -> None:
            writer({**tagged, **event})

        return listener

    def _open_scope(self, runtime: Any) -> CallScope:
        try:
            backend = self.context.backend.bind(runtime)
        except Exception as exc:
            raise ToolException(self._render(exc)) from exc
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


def _failed(exc: Exception, tool: str) -> Preview:
    return Preview(error=render_error(exc, tool=tool))


__all__ = ["CallScope", "FileTool", "ToolArgs", "ToolContext", "ToolOutcome", "ToolSettings"]
