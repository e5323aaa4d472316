"""What every file tool shares: its context, the per-call scope, and the call pipeline.

A tool subclass declares its args schema and description and implements `_effect`,
a generator of backend calls (see `core.calls`) that returns a `ToolOutcome`.
`FileTool` runs that one body from both `_run` (sync) and `_arun` (async), binds the
backend to the graph run, turns errors into one error sentence (`render`), and returns
either `(content, artifact)` or, inside a graph with state to update, a `Command`
carrying the `ToolMessage`.
"""

from __future__ import annotations

import copy
import json
import threading
from abc import abstractmethod
from collections.abc import Callable  # noqa: TC003 - pydantic resolves field types at runtime
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
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
from langchain_fstools.formats import syntax
from langchain_fstools.tools._dryrun import DryRun
from langchain_fstools.tools.describe import describe, setting_values
from langchain_fstools.tools.diagnosing import checker, diagnosed, with_diagnostics
from langchain_fstools.tools.known_texts import KnownTexts
from langchain_fstools.tools.reads import READS_KEY, ReadLedger, ReadTracker
from langchain_fstools.tools.render import render_error, render_validation_error
from langchain_fstools.tools.settings import ToolSettings
from langchain_fstools.tools.targets import BOUNDED_OUTPUT, Preview

if TYPE_CHECKING:
    import re
    from collections.abc import Collection, Mapping, Sequence

    from langchain_core.callbacks import CallbackManagerForToolRun
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools.base import ArgsSchema

    from langchain_fstools.backends.protocol import Backend
    from langchain_fstools.core.calls import Effect
    from langchain_fstools.lsp.report import TextChange
    from langchain_fstools.search.contract import SearchPart
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


def _compact(schema: dict[str, Any]) -> None:
    """Spell an optional argument as its types: `{"type": "integer"}`, not `anyOf` with null.

    The model is sent the schema at every call; an argument it may leave out needs no
    null alternative and no `"default": null` (a third of grep's schema), and a flag
    that is off unless given needs no `"default": false`. Validation is unchanged: an
    explicit null is still accepted.
    """
    for spec in schema.get("properties", {}).values():
        if spec.get("type") == "boolean" and spec.get("default", True) is False:
            del spec["default"]  # a flag left out is off
        options = spec.get("anyOf")
        if spec.get("default", 0) is None and isinstance(options, list):
            kept = [option for option in options if option != {"type": "null"}]
            if len(kept) < len(options):
                del spec["anyOf"], spec["default"]
                spec.update(kept[0] if len(kept) == 1 else {"anyOf": kept})


def named_in(messages: Sequence[BaseMessage], pattern: re.Pattern[str]) -> bool:
    """Whether a message names what `pattern` finds: in its text or its tool calls' arguments.

    What `FileTool.usable` asks of a thread to offer a tool once what it works on was
    named (asked for, listed, read).
    """
    for message in messages:
        calls_made = getattr(message, "tool_calls", None) or []
        texts = (str(message.content), *(json.dumps(call["args"]) for call in calls_made))
        if any(pattern.search(text) for text in texts):
            return True
    return False


def call_key(runtime: Any) -> tuple[str, str]:
    """Which tool call a runtime is of: its namespace in the graph and its id.

    Models may reuse call ids (a scripted model, some local servers) and parallel
    subagents share the middleware that runs their calls: the namespace tells them apart.
    """
    config = getattr(runtime, "config", None) or {}
    namespace = (config.get("configurable") or {}).get("checkpoint_ns") or ""
    return str(namespace), str(getattr(runtime, "tool_call_id", None) or "")


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
        """Who reads, named when a write is refused for want of a read, where reads
        travel with the calls (the MCP server sets it); None: the agent."""
        self.known_texts = KnownTexts()
        """The last version read of recently read text files, with their line indexes."""
        self.syntax_trees = syntax.TreeCache()
        """Parse trees of recently read or changed files, for incremental syntax checks."""
        self.diagnostics = checker(self.settings, backend)
        """The language servers that check every change (`settings.diagnostics`), or None."""
        self._background: ThreadPoolExecutor | None = None
        self._background_lock = threading.Lock()
        self.deferred_updates: dict[tuple[str, str], dict[str, Any]] = {}
        """Tool call ids whose wrapper (`FilesystemMiddleware`) sends the state update
        with the message: the tool leaves its update here under the id and returns a
        plain message, since LangGraph deep-copies every `Command` a tool returns, but
        not one a middleware returns. Other calls return their own `Command`."""

    def template_values(self) -> dict[str, Any]:
        """What descriptions may name: the settings' values, `command_root` and the network.

        `command_root` is where commands see the workspace (a host path), or None;
        `network_off`, `network_on` and `network_domains` (the names, joined) say which
        network commands have, each empty when it is not that one (or not known).
        """
        network = self.backend.command_network()
        return {
            **setting_values(self.settings),
            "command_root": self.backend.command_root(),
            "network_off": network is False,
            "network_on": network is True,
            "network_domains": ", ".join(network) if isinstance(network, tuple) else "",
        }

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
    search_layouts: dict[str, list[SearchPart]] = field(default_factory=dict)
    """The parts of the tree below each searched directory, found once per call
    (`tools.searching.search_parts`)."""


@dataclass(frozen=True)
class ToolOutcome:
    """A successful result: text (or content blocks) for the model, data for traces."""

    content: str | list[str | dict[Any, Any]]
    artifact: dict[str, Any]
    state: dict[str, Any] = field(default_factory=dict)
    """More graph-state updates of the call (a command's changes waiting for a person)."""
    changes: tuple[TextChange, ...] = ()
    """The files the call changed, text before and after, for the language servers."""


class FileTool(BaseTool):
    """Base class of the file tools. Subclasses implement `_effect`."""

    context: ToolContext
    read_only: bool = True
    requires_execute: ClassVar[bool] = False
    """Whether the tool needs a backend that can run commands (`supports_execute`)."""
    requires_servers: ClassVar[bool] = False
    """Whether the tool needs the toolkit's language servers (`ToolContext.diagnostics`)."""
    uses_processes: ClassVar[bool] = False
    """Whether every call works on background processes, which live in a session."""
    bounds_output: ClassVar[bool] = True
    """Whether the tool bounds its own output (so eviction leaves its results alone)."""
    needs_read: ClassVar[bool] = False
    """Whether the tool changes only files the agent read, so it needs `read_file`."""
    records_reads: ClassVar[bool] = False
    """Whether a call records what it showed of the one file it reads (`read_file`)."""
    idempotent: ClassVar[bool | None] = None
    """Whether the same call twice has the effect of one (None: exactly when read-only)."""
    argument_defaults: ClassVar[dict[str, str]] = {}
    """Arguments whose default comes from the settings: name -> the default, a template
    (see `tools.describe`) appended to the argument's description as "Default: ..."."""
    diagnostics: bool = True
    """Whether the toolkit's language servers check this tool's changes (when it has
    any, see `ToolSettings.diagnostics`). Default: True."""
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
                values=self.context.template_values(),
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
        Python names; the aliases are the names models know. Optional arguments are
        spelled as their type alone (see `_compact`). Arguments whose default
        the settings decide (`argument_defaults`) say it in their description.
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
        memo = self._aliased_schema
        if memo is not None and memo[0] is schema:
            return memo[1]
        values = self.context.template_values()
        fields: dict[str, Any] = {}
        for name, info in schema.model_fields.items():
            copied = copy.copy(info)
            copied.alias = copied.validation_alias = copied.serialization_alias = aliases.get(name)
            default = self.argument_defaults.get(name)
            if default is not None:
                filled = describe(default, present=self.context.tool_names, values=values)
                copied.description = f"{info.description or ''} Default: {filled}.".lstrip()
            fields[name] = (info.annotation, copied)
        aliased: type[BaseModel] = create_model(
            schema.__name__,
            __config__=ConfigDict(populate_by_name=True, json_schema_extra=_compact),
            __doc__=schema.__doc__,
            **fields,
        )
        self._aliased_schema = (schema, aliased)
        return aliased

    @abstractmethod
    def _effect(self, scope: CallScope, args: Any) -> Effect[ToolOutcome]:
        """The tool's body: validated arguments and backend calls in, outcome out."""

    def _checked(self, scope: CallScope, args: Any) -> Effect[ToolOutcome]:
        """The body, then what the language servers say of its changes (never dry-run)."""
        outcome = yield from self._effect(scope, args)
        servers = scope.context.diagnostics
        if not (self.diagnostics and servers is not None and outcome.changes):
            return outcome
        report = yield from diagnosed(servers, scope.backend, outcome.changes)
        if not report:
            return outcome
        content, artifact = with_diagnostics(
            outcome.content, outcome.artifact, report, scope.context.settings.count_tokens
        )
        return replace(outcome, content=content, artifact=artifact)

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

    def usable(self, state: Mapping[str, Any], messages: Sequence[BaseMessage]) -> bool:
        """Whether to offer the tool at a model call, given the thread so far.

        Every model call pays for the schemas it is offered, so a tool that cannot be of
        use yet is left out of the request; called anyway, it still runs. Default: True.
        """
        del state, messages
        return True

    def contained(self, args: Any) -> bool:
        """Whether a call's effects are all reviewed after it ran (a contained command).

        May block (a backend probes its sandbox once): called off the event loop.
        Default: False.
        """
        del args
        return False

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
            effect = self._checked(scope, arguments)
            with progress.listening(self._progress_listener(arguments.runtime)):
                outcome = calls.run(effect, scope.backend)
        except Exception as exc:
            raise ToolException(self._render(exc)) from exc
        return self._finish(scope, outcome)

    async def _arun(self, *, arguments: Any, run_manager: Any = None) -> Any:
        del run_manager
        scope = self._open_scope(arguments.runtime)
        try:
            effect = self._checked(scope, arguments)
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
        update = {**scope.backend.state_update(), **outcome.state}
        if scope.reads.in_state and scope.reads.added:
            update[READS_KEY] = scope.reads.added
        return update

    def _finish(self, scope: CallScope, outcome: ToolOutcome) -> tuple[Any, dict[str, Any]]:
        update = self._state_update(scope, outcome)
        self.context.tracker.commit(scope.runtime, scope.reads)
        tool_call_id = getattr(scope.runtime, "tool_call_id", None)
        if not update or tool_call_id is None:
            return outcome.content, outcome.artifact
        key = call_key(scope.runtime)
        if key in self.context.deferred_updates:
            self.context.deferred_updates[key] = update
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


__all__ = ["CallScope", "FileTool", "ToolArgs", "ToolContext", "ToolOutcome"]
