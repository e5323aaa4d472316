"""LargeResultEviction: huge tool results go to a file; the model gets a notice.

A tool result above the token threshold is written to
`/large_tool_results/<tool_call_id>` and replaced by a notice saying where it is, how to
read it back in windows or grep it, and a head/tail preview. JSON whose lines are too
long to read in windows is saved pretty-printed. A tool whose metadata says it bounds
its own output (`bounded_output`, as the file tools but `execute` declare) is never
evicted; `execute` and any other tool are. Non-text blocks
(images, files) stay in the message, and so does the tool's artifact, unchanged; the
eviction's facts (`evicted_to`, `tokens`, `counted`, `bytes`) are in the message's
`response_metadata["eviction"]`. The folder is bounded: beyond `max_files` files or
`max_bytes` bytes, the oldest results are removed first.

The decision starts from the result's size, so a large output never gets a full
tokenizer pass: a text of at most `threshold_tokens` UTF-8 bytes stays (a token is at
least one byte), one of more than `CLEAR_BYTES_PER_TOKEN` bytes per threshold token is
evicted (the notice then gives an estimate, bytes / 4), and only sizes in between are
counted.
"""

from __future__ import annotations

import json
import logging
import re
from typing import TYPE_CHECKING, Any, NotRequired

from langchain.agents import AgentState
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.types import Command

from langchain_fstools.backends.state import FilesChannel, StateBackend
from langchain_fstools.core import calls
from langchain_fstools.core.tokens import TokenCounter, default_counter
from langchain_fstools.core.wording import plural
from langchain_fstools.formats.text import ROW_WIDTH
from langchain_fstools.tools.targets import BOUNDED_OUTPUT
from langchain_fstools.tools.updates import with_state_update

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

    from langgraph.prebuilt.tool_node import ToolCallRequest

    from langchain_fstools.backends.protocol import Backend, FileInfo
    from langchain_fstools.core.calls import Effect

logger = logging.getLogger(__name__)

RESULTS_DIR = "/large_tool_results"
"""Where evicted results are written."""


CLEAR_BYTES_PER_TOKEN = 8
"""Results above this many UTF-8 bytes per threshold token are evicted without counting.

Code and English prose average about 4 bytes per token; only long runs of one character
(rules, padding) reach 8, so such a result is far above the threshold anyway."""

NOTICE = """Tool result too large ({tokens}, {lines}): saved to {path}{note}.
Read it in windows with read_file(file_path="{path}", offset=N, limit=M),
or search it with grep(pattern=..., path="{path}").

First {head}:
{first}
...
({omitted} omitted)
...
Last {tail}:
{last}"""
"""The notice that replaces an evicted result."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class EvictionState(AgentState[Any]):
    """The state eviction needs when results are kept in graph state."""

    files: NotRequired[FilesChannel]
    """Files in graph state, where evicted results live by default."""


class LargeResultEviction(AgentMiddleware[EvictionState, Any]):
    """Move tool results above a token threshold to `/large_tool_results/`.

    Usable alone around any tools (langchain's shell tool, MCP tools, ...), and built
    into `FilesystemMiddleware`.

    Args:
        backend: Where results are written. Default: a `StateBackend` (graph state), so
            nothing is written to the user's disk.
        threshold_tokens: Results above this many tokens are evicted. Default: 20,000.
        excluded_tools: Further tool names never evicted (tools that declare
            `bounded_output` in their metadata never are). Default: none.
        max_files: Most evicted results kept. Default: 50.
        max_bytes: Most bytes of evicted results kept. Default: 64 MiB.
        preview_lines: Lines shown from the head and from the tail. Default: 5.
        preview_width: Longest preview line, in characters. Default: 200. A result
            with too few lines for a line preview (one huge line, say) shows
            `preview_lines * preview_width` characters from each end instead.
        count_tokens: Token counter, called only for results whose size does not
            decide (see the module). Default: `tokens.default_counter()`.

    Example:
        ```python
        from langchain.agents import create_agent
        from langchain_fstools.middleware import LargeResultEviction

        agent = create_agent(model, tools=[shell_tool], middleware=[LargeResultEviction()])
        ```
    """

    state_schema = EvictionState

    def __init__(
        self,
        *,
        backend: Backend | None = None,
        threshold_tokens: int = 20_000,
        excluded_tools: Iterable[str] = (),
        max_files: int = 50,
        max_bytes: int = 64 * 1024 * 1024,
        preview_lines: int = 5,
        preview_width: int = 200,
        count_tokens: TokenCounter | None = None,
    ) -> None:
        """Configure eviction; raises ValueError for non-positive limits."""
        super().__init__()
        if min(threshold_tokens, max_files, max_bytes) <= 0 or preview_lines < 0:
            raise ValueError("threshold_tokens, max_files and max_bytes must be positive")
        self.backend = backend or StateBackend()
        self.threshold_tokens = threshold_tokens
        self.excluded_tools = frozenset(excluded_tools)
        self.max_files = max_files
        self.max_bytes = max_bytes
        self.preview_lines = preview_lines
        self.preview_width = preview_width
        self.count_tokens = count_tokens or default_counter()

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Run the tool, then evict its result if it is too large."""
        if self._excluded(request):
            return handler(request)
        result = handler(request)
        backend = self.backend.bind(request.runtime)
        return calls.run(self._evicted(result, request.tool_call["id"], backend), backend)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async `wrap_tool_call`."""
        if self._excluded(request):
            return await handler(request)
        result = await handler(request)
        backend = self.backend.bind(request.runtime)
        return await calls.arun(self._evicted(result, request.tool_call["id"], backend), backend)

    def _excluded(self, request: ToolCallRequest) -> bool:
        """Whether the called tool bounds its own output, or is excluded by name."""
        metadata = getattr(request.tool, "metadata", None) or {}
        return (
            bool(metadata.get(BOUNDED_OUTPUT)) or request.tool_call["name"] in self.excluded_tools
        )

    def _evicted(
        self, result: ToolMessage | Command[Any], call_id: str | None, backend: Backend
    ) -> Effect[ToolMessage | Command[Any]]:
        """The result with its message replaced by a notice; every other part kept."""
        message = _message_of(result, call_id)
        if message is None:
            return result
        text, other_blocks = _split_content(message.content)
        over = self._over_threshold(text)
        if over is None:
            return result
        tokens, counted = over
        phrase = plural(tokens, "token") if counted else f"about {plural(tokens, 'token')}"
        path = f"{RESULTS_DIR}/{_safe_name(message.tool_call_id)}"
        pretty = _pretty_json(text)
        saved = text if pretty is None else pretty
        data = saved.encode("utf-8")
        yield from self._make_room(len(data))
        yield from calls.write_bytes(path, data)
        logger.debug(
            "evicted the %s result of %s (%d tokens, %d bytes) to %s",
            message.name,
            message.tool_call_id,
            tokens,
            len(data),
            path,
        )
        notice = self._notice(saved, phrase, path, pretty=pretty is not None)
        content: str | list[str | dict[str, Any]] = (
            [{"type": "text", "text": notice}, *other_blocks] if other_blocks else notice
        )
        evicted = {"evicted_to": path, "tokens": tokens, "counted": counted, "bytes": len(data)}
        # The tool's artifact stays as it returned it; the facts go beside it, where
        # ContextEditingMiddleware puts its own (`response_metadata["context_editing"]`).
        metadata = {**message.response_metadata, "eviction": evicted}
        replaced = message.model_copy(update={"content": content, "response_metadata": metadata})
        return with_state_update(result, backend.state_update(), message=replaced)

    def _over_threshold(self, text: str) -> tuple[int, bool] | None:
        """`(tokens, counted)` when `text` is above the threshold, else None.

        Decided from the size where it settles the question: at most `threshold_tokens`
        bytes is below (a token has at least one byte; a character at most 4 bytes), more
        than `CLEAR_BYTES_PER_TOKEN` bytes per threshold token is above (tokens
        estimated as bytes / 4, `counted` False). Only sizes in between are counted.
        """
        threshold = self.threshold_tokens
        if len(text) * 4 <= threshold:
            return None
        size = len(text.encode("utf-8", "surrogatepass"))
        if size <= threshold:
            return None
        if size > threshold * CLEAR_BYTES_PER_TOKEN:
            return -(-size // 4), False
        tokens = self.count_tokens(text)
        return (tokens, True) if tokens > threshold else None

    def _make_room(self, incoming: int) -> Effect[None]:
        try:
            entries: list[FileInfo] = yield from calls.list_dir(RESULTS_DIR)
        except (FileNotFoundError, NotADirectoryError):
            return
        files = sorted((e for e in entries if e.is_file), key=lambda e: (e.mtime, e.path))
        total = sum(e.size for e in files) + incoming
        while files and (len(files) >= self.max_files or total > self.max_bytes):
            oldest = files.pop(0)
            total -= oldest.size
            yield from calls.delete(oldest.path)

    def _notice(self, text: str, tokens: str, path: str, *, pretty: bool) -> str:
        """The notice: where the result is, how to read it, and its head and tail.

        With more lines than the preview shows, the preview is whole lines (each cut at
        `preview_width`); with fewer (one huge line, say), it is characters.
        """
        lines = text.split("\n")
        count = self.preview_lines
        if len(lines) > 2 * count:
            head, tail = lines[:count], lines[len(lines) - count :]
            first = "\n".join(map(self._cut, head))
            last = "\n".join(map(self._cut, tail))
            sizes = (plural(len(head), "line"), plural(len(tail), "line"))
            omitted = plural(len(lines) - len(head) - len(tail), "line")
        else:
            width = max(1, count) * self.preview_width
            first, last = text[:width], text[max(width, len(text) - width) :]
            sizes = (plural(len(first), "character"), plural(len(last), "character"))
            omitted = plural(len(text) - len(first) - len(last), "character")
        return NOTICE.format(
            tokens=tokens,
            lines=plural(len(lines), "line"),
            path=path,
            note=" (JSON, pretty-printed so that it reads in windows)" if pretty else "",
            head=sizes[0],
            tail=sizes[1],
            first=first,
            last=last,
            omitted=omitted,
        )

    def _cut(self, line: str) -> str:
        return line if len(line) <= self.preview_width else line[: self.preview_width] + "…"


def _message_of(result: ToolMessage | Command[Any], call_id: str | None) -> ToolMessage | None:
    """The result's ToolMessage for this call (a Command may carry other messages)."""
    if isinstance(result, ToolMessage):
        return result
    update = result.update if isinstance(result, Command) else None
    if not isinstance(update, dict):
        return None
    found = [m for m in update.get("messages", []) if isinstance(m, ToolMessage)]
    own = [m for m in found if m.tool_call_id == call_id]
    if own:
        return own[0]
    return found[0] if len(found) == 1 else None


def _split_content(content: str | list[Any]) -> tuple[str, list[Any]]:
    if isinstance(content, str):
        return content, []
    texts, others = [], []
    for block in content:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        else:
            others.append(block)
    return "\n".join(texts), others


def _pretty_json(text: str) -> str | None:
    """`text` indented, when it is JSON with lines too long to read in windows."""
    if text.lstrip()[:1] not in ("{", "[") or max(map(len, text.split("\n"))) <= ROW_WIDTH:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    pretty = json.dumps(value, indent=2, ensure_ascii=False)
    return pretty if pretty.count("\n") > text.count("\n") else None


def _safe_name(tool_call_id: str | None) -> str:
    name = _UNSAFE.sub("_", tool_call_id or "result").strip("._") or "result"
    return name[:100]


__all__ = [
    "CLEAR_BYTES_PER_TOKEN",
    "NOTICE",
    "RESULTS_DIR",
    "EvictionState",
    "LargeResultEviction",
]
