"""Offline testing helpers: a scripted chat model that drives real agents.

`ScriptedChatModel` plays back a fixed list of assistant turns (tool calls or text), so
an agent built with `create_agent` (or a hand-built graph with `bind_tools`) runs end to
end without a provider or a network: tests, notebooks, demos and documentation examples.
It streams too: under `stream_mode="messages"` each turn arrives as chunks (text split
into words, each tool call as one chunk), and with `disable_streaming=True` it answers
in one message.

    from langchain.agents import create_agent
    from langchain_fstools import FilesystemMiddleware, LocalBackend
    from langchain_fstools.testing import ScriptedChatModel, tool_call

    model = ScriptedChatModel(
        turns=[tool_call("ls", path="/"), "The workspace is empty."]
    )
    agent = create_agent(model, middleware=[FilesystemMiddleware(backend=LocalBackend("."))])
    agent.invoke({"messages": [{"role": "user", "content": "What is here?"}]})
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr, field_validator

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from langchain_core.callbacks import CallbackManagerForLLMRun
    from langchain_core.language_models import LanguageModelInput
    from langchain_core.runnables import Runnable
    from langchain_core.tools import BaseTool

_ids = itertools.count(1)
_NUMBERED_BY_MODEL = "fstools_numbered_by_model"
"""`response_metadata` key of a turn: the ids of its calls that the model numbers."""
_WORDS = re.compile(r"\S+\s*|\s+")


def tool_call(name: str, /, *, call_id: str | None = None, **args: Any) -> AIMessage:
    """An assistant turn that calls one tool.

    Args:
        name: The tool's name (`"read_file"`).
        call_id: The tool call's id. Default: `call_<n>`, numbered by the
            `ScriptedChatModel` that plays the turn in its script's order (the script's
            first call is `call_1`, skipping ids given explicitly), so
            `rewind(to="call_2")` names the script's second call; outside a model, a
            unique `call_auto_<n>`.
        **args: The tool's arguments (`file_path="/a.txt"`).

    Returns:
        An `AIMessage` with empty content and that one tool call.
    """
    if call_id is not None:
        return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])
    identifier = f"call_auto_{next(_ids)}"  # unique; a model numbers it in its script
    return AIMessage(
        content="",
        tool_calls=[{"name": name, "args": args, "id": identifier}],
        response_metadata={_NUMBERED_BY_MODEL: [identifier]},
    )


def parallel(*turns: AIMessage) -> AIMessage:
    """An assistant turn that calls several tools at once, as models do in one step.

    Args:
        *turns: Turns made with `tool_call`, each with one call (or more).

    Returns:
        An `AIMessage` with empty content and every call of `turns`, in order.

    Raises:
        ValueError: no turn given, a turn has text, or two calls share an id.

    Example:
        ```python
        from langchain_fstools.testing import parallel, tool_call

        turn = parallel(tool_call("read_file", file_path="/a.py"), tool_call("ls", path="/"))
        assert [call["name"] for call in turn.tool_calls] == ["read_file", "ls"]
        ```
    """
    if not turns:
        raise ValueError("parallel() needs at least one tool_call(...) turn")
    if any(turn.content for turn in turns):
        raise ValueError("parallel() takes tool-call turns only; give text as its own turn")
    calls = [call for turn in turns for call in turn.tool_calls]
    ids = [call["id"] for call in calls]
    if len(set(ids)) != len(ids):
        raise ValueError(f"parallel() calls must have distinct ids, got {ids}")
    numbered = [i for turn in turns for i in turn.response_metadata.get(_NUMBERED_BY_MODEL, [])]
    metadata = {_NUMBERED_BY_MODEL: numbered} if numbered else {}
    return AIMessage(content="", tool_calls=calls, response_metadata=metadata)


def _numbered(turns: list[AIMessage]) -> list[AIMessage]:
    """`turns` with the ids `tool_call` left to the model set to `call_1`, `call_2`, ...

    In script order, skipping ids the script gives explicitly; the turns given are not
    changed (a numbered turn is a copy).
    """
    taken = {
        call["id"]
        for turn in turns
        for call in turn.tool_calls
        if call["id"] not in turn.response_metadata.get(_NUMBERED_BY_MODEL, [])
    }
    numbers = (f"call_{n}" for n in itertools.count(1) if f"call_{n}" not in taken)
    result: list[AIMessage] = []
    for turn in turns:
        automatic = turn.response_metadata.get(_NUMBERED_BY_MODEL)
        if not automatic:
            result.append(turn)
            continue
        calls = [
            {**call, "id": next(numbers)} if call["id"] in automatic else call
            for call in turn.tool_calls
        ]
        metadata = {k: v for k, v in turn.response_metadata.items() if k != _NUMBERED_BY_MODEL}
        result.append(turn.model_copy(update={"tool_calls": calls, "response_metadata": metadata}))
    return result


class ScriptedChatModel(BaseChatModel):
    """A chat model that answers each call with the next turn of a script.

    It ignores its input and the tools it is bound to (`offered` keeps their names): the
    script already says what to call. `bind_tools` works (it returns the model itself),
    so it runs under `create_agent`, `ToolNode` graphs and anything else that binds
    tools. Streaming works with and without `disable_streaming=True`; streamed turns
    carry the same text and tool calls as invoked ones. Calls from several threads take
    turns in order, and `calls` keeps the messages of every call. When the script is
    used up, a call raises `RuntimeError` saying how many turns it had.

    Attributes:
        turns: The assistant's turns, in order: an `AIMessage` (see `tool_call`, and
            `parallel` for several calls in one turn) or a string for a text answer.

    Example:
        ```python
        from langchain.agents import create_agent
        from langchain_fstools import FilesystemMiddleware, StateBackend
        from langchain_fstools.testing import ScriptedChatModel, tool_call

        model = ScriptedChatModel(
            turns=[tool_call("write_file", file_path="/a.txt", content="hi\\n"), "Done."]
        )
        agent = create_agent(model, middleware=[FilesystemMiddleware(backend=StateBackend())])
        result = agent.invoke({"messages": [{"role": "user", "content": "Write a.txt"}]})
        assert result["files"]
        ```
    """

    turns: list[AIMessage | str] = Field(default_factory=list)
    """The assistant's turns, in order: messages, or strings for text answers.

    Typed with `str` so that `ScriptedChatModel(turns=[tool_call(...), "ok"])` checks
    under mypy --strict and pyright without the pydantic plugin."""

    @field_validator("turns", mode="before")
    @classmethod
    def _messages(cls, turns: Sequence[AIMessage | str]) -> list[AIMessage | str]:
        # Text becomes a message before validation: AIMessage's own validator fails on
        # a plain string instead of letting the union try `str`.
        messages = [AIMessage(content=turn) if isinstance(turn, str) else turn for turn in turns]
        return [*_numbered(messages)]

    _next: int = PrivateAttr(default=0)
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _offered: list[list[str]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def remaining(self) -> int:
        """How many turns are left."""
        return len(self.turns) - self._next

    @property
    def calls(self) -> list[list[BaseMessage]]:
        """The messages the model was called with, one list per call, oldest first."""
        return self._calls

    @property
    def offered(self) -> list[list[str]]:
        """The names of the tools bound at each `bind_tools`, oldest first.

        `create_agent` binds the request's tools before every model call, so under it
        `offered[n]` is what the model was offered at call `n`.
        """
        return self._offered

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Note the tools' names (`offered`); the script already knows what to call.

        Args:
            tools: The tools an agent offers (`BaseTool`s, functions, schemas).
            tool_choice: Which tool the model must call; ignored.
            **kwargs: Other provider options; ignored.

        Returns:
            This model.
        """
        del tool_choice, kwargs
        with self._lock:
            self._offered.append([_tool_name(tool) for tool in tools])
        return self

    def _take(self, messages: list[BaseMessage]) -> AIMessage:
        with self._lock:
            self._calls.append(list(messages))
            if self._next >= len(self.turns):
                raise RuntimeError(
                    f"ScriptedChatModel has played all {len(self.turns)} of its turns;"
                    " add a turn for this call to the script"
                )
            turn = self.turns[self._next]
            self._next += 1
        return AIMessage(content=turn) if isinstance(turn, str) else turn  # appended later

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        del stop, run_manager, kwargs
        turn = self._take(messages)
        return ChatResult(generations=[ChatGeneration(message=turn.model_copy())])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        del stop, kwargs
        turn = self._take(messages)
        for chunk in _chunks(turn):
            if run_manager is not None and isinstance(chunk.content, str) and chunk.content:
                run_manager.on_llm_new_token(
                    chunk.content, chunk=ChatGenerationChunk(message=chunk)
                )
            yield ChatGenerationChunk(message=chunk)


def _tool_name(tool: dict[str, Any] | type | Callable[..., Any] | BaseTool) -> str:
    """The name a model knows `tool` by."""
    return str(convert_to_openai_tool(tool)["function"]["name"])


def _chunks(turn: AIMessage) -> list[AIMessageChunk]:
    """A turn as streamed chunks: its text word by word, then one chunk per tool call.

    Always at least one chunk, so a turn with no text and no tool calls still streams.
    """
    text = turn.content if isinstance(turn.content, str) else ""
    pieces = _WORDS.findall(text) if text else []
    chunks = [AIMessageChunk(content=piece, id=turn.id) for piece in pieces]
    if not isinstance(turn.content, str):
        chunks.append(AIMessageChunk(content=turn.content, id=turn.id))
    chunks.extend(
        AIMessageChunk(
            content="",
            id=turn.id,
            tool_call_chunks=[
                {
                    "name": call["name"],
                    "args": json.dumps(call["args"]),
                    "id": call["id"],
                    "index": index,
                    "type": "tool_call_chunk",
                }
            ],
        )
        for index, call in enumerate(turn.tool_calls)
    )
    if not chunks:
        chunks.append(AIMessageChunk(content="", id=turn.id))
    chunks[-1].chunk_position = "last"
    return chunks


__all__ = ["ScriptedChatModel", "parallel", "tool_call"]
