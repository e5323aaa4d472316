"""Large-result eviction: through FilesystemMiddleware and alone, on both backends."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.prebuilt import ToolRuntime
from langgraph.types import Command

from langchain_fstools import FilesystemMiddleware, LocalBackend, StateBackend
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.middleware import LargeResultEviction
from langchain_fstools.testing import ScriptedChatModel

BIG = "\n".join(f"log line {n}: " + "x" * 60 for n in range(1, 3001))
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="


@tool
def dump_logs(lines: int = 3000) -> str:
    """Return many log lines."""
    return "\n".join(BIG.split("\n")[:lines])


@tool(response_format="content_and_artifact")
def snapshot() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Return a large text and an image."""
    return [
        {"type": "text", "text": BIG},
        {"type": "image", "base64": PIXEL, "mime_type": "image/png"},
    ], {"id": 7}


def call(name: str, n: int, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call-{n}"}])


def run_agent(
    backend: Backend, script: list[AIMessage], mode: str = "sync", saver: Any = None, **options: Any
) -> dict[str, Any]:
    agent = create_agent(
        ScriptedChatModel(turns=[*script, AIMessage("done")]),
        tools=[dump_logs, snapshot],
        middleware=[FilesystemMiddleware(backend=backend, **options)],
        checkpointer=saver or InMemorySaver(),
    )
    payload = {"messages": [{"role": "user", "content": "go"}]}
    config = {"configurable": {"thread_id": "t"}}
    return (
        agent.invoke(payload, config)
        if mode == "sync"
        else asyncio.run(agent.ainvoke(payload, config))
    )


def results(state: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}


@pytest.mark.parametrize("kind", ["local", "state"])
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
def test_evicted_result_is_readable_and_greppable(
    kind: str, mode: str, saver_kind: str, tmp_path: Path
) -> None:
    backend: Backend = LocalBackend(tmp_path) if kind == "local" else StateBackend()
    if saver_kind == "memory":
        check_eviction(backend, mode, None, tmp_path)
    elif mode == "sync":
        with SqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as saver:
            check_eviction(backend, mode, saver, tmp_path)
    else:

        async def with_async_saver() -> None:
            async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as saver:
                await asyncio.to_thread(check_eviction, backend, mode, saver, tmp_path)

        asyncio.run(with_async_saver())


def check_eviction(backend: Backend, mode: str, saver: Any, tmp_path: Path) -> None:
    state = run_agent(
        backend,
        [
            call("dump_logs", 1),
            call("read_file", 2, file_path="/large_tool_results/call-1", offset=2999, limit=5),
            call(
                "grep",
                3,
                pattern="log line 1500:",
                path="/large_tool_results",
                output_mode="content",
            ),
            call("dump_logs", 4, lines=10),
        ],
        mode,
        saver,
    )
    got = results(state)
    notice = str(got["call-1"].content)
    assert notice.startswith("Tool result too large (")
    assert "saved to /large_tool_results/call-1." in notice
    assert "log line 1: " in notice
    assert "log line 3000: " in notice
    assert "(2,990 lines omitted)" in notice
    assert got["call-2"].content.split("\n")[:2] == [
        f"  2999→log line 2999: {'x' * 60}",
        f"  3000→log line 3000: {'x' * 60}",
    ]
    assert got["call-3"].content == f"/large_tool_results/call-1:1500:log line 1500: {'x' * 60}"
    assert str(got["call-4"].content).startswith("log line 1:")  # small results stay inline
    assert "/large_tool_results/call-1" in state["files"]
    assert not (tmp_path / "large_tool_results").exists()  # nothing on the user's disk


def test_excluded_tools_are_never_evicted(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text(BIG)
    state = run_agent(
        LocalBackend(tmp_path), [call("read_file", 1, file_path="/big.txt", offset=1, limit=2000)]
    )
    message = results(state)["call-1"]
    assert str(message.content).startswith("     1→log line 1:")
    assert "files" not in state or not state["files"]


def test_non_text_blocks_survive_and_the_artifact_is_kept_as_the_tool_returned_it(
    tmp_path: Path,
) -> None:
    message = results(run_agent(StateBackend(), [call("snapshot", 1)]))["call-1"]
    notice, image = message.content
    assert notice["text"].startswith("Tool result too large (")
    assert image == {"type": "image", "base64": PIXEL, "mime_type": "image/png"}
    assert message.artifact == {"id": 7}  # no key added to the tool's own artifact
    eviction = message.response_metadata["eviction"]
    assert eviction["evicted_to"] == "/large_tool_results/call-1"
    assert eviction["bytes"] == len(BIG)


def test_folder_is_bounded_oldest_first(tmp_path: Path) -> None:
    eviction = LargeResultEviction(max_files=2)
    state = run_agent(StateBackend(), [call("dump_logs", n) for n in (1, 2, 3)], eviction=eviction)
    kept = sorted(p for p in state["files"] if p.startswith("/large_tool_results/"))
    assert kept == ["/large_tool_results/call-2", "/large_tool_results/call-3"]


def test_eviction_can_be_switched_off(tmp_path: Path) -> None:
    state = run_agent(LocalBackend(tmp_path), [call("dump_logs", 1)], eviction=False)
    assert results(state)["call-1"].content == BIG


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_standalone_around_any_tool(mode: str) -> None:
    agent = create_agent(
        ScriptedChatModel(turns=[call("dump_logs", 1), AIMessage("done")]),
        tools=[dump_logs],
        middleware=[LargeResultEviction(threshold_tokens=1000)],
    )
    payload = {"messages": [{"role": "user", "content": "go"}]}
    state = agent.invoke(payload) if mode == "sync" else asyncio.run(agent.ainvoke(payload))
    assert str(results(state)["call-1"].content).startswith("Tool result too large (")
    assert state["files"]["/large_tool_results/call-1"]["content"] == BIG


def test_bad_settings_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        LargeResultEviction(threshold_tokens=0)


@tool
def commanding(runtime: ToolRuntime) -> Command[Any]:
    """Return a large result inside a Command with other messages."""
    return Command(
        update={
            "messages": [
                RemoveMessage(id="user-1"),
                ToolMessage(BIG, tool_call_id=runtime.tool_call_id, artifact=["kept", 1]),
                AIMessage("a side note", id="side-1"),
            ]
        }
    )


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_command_keeps_every_message_and_the_artifact(mode: str) -> None:
    agent = create_agent(
        ScriptedChatModel(turns=[call("commanding", 1), AIMessage("done")]),
        tools=[commanding],
        middleware=[LargeResultEviction(threshold_tokens=1000)],
    )
    payload = {"messages": [HumanMessage("go", id="user-1")]}
    state = agent.invoke(payload) if mode == "sync" else asyncio.run(agent.ainvoke(payload))
    ids = [m.id for m in state["messages"]]
    assert "user-1" not in ids  # the RemoveMessage was applied
    assert "side-1" in ids  # the AIMessage arrived
    message = results(state)["call-1"]
    assert str(message.content).startswith("Tool result too large (")
    assert message.artifact == ["kept", 1]
    assert state["files"]["/large_tool_results/call-1"]["content"] == BIG


LONG_LINE = "".join(f"{n:07d}," for n in range(250_000))  # 2 MB, one line
LONG_JSON = json.dumps({"rows": [{"id": n, "name": f"row {n}"} for n in range(60_000)]})


@tool
def one_line(kind: str) -> str:
    """Return one huge line: plain text or JSON."""
    return LONG_JSON if kind == "json" else LONG_LINE


def evict_one(kind: str) -> tuple[str, str]:
    agent = create_agent(
        ScriptedChatModel(
            turns=[call("one_line", 1, kind=kind), AIMessage("done")],
        ),
        tools=[one_line],
        middleware=[LargeResultEviction()],
    )
    state = agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    saved = state["files"]["/large_tool_results/call-1"]["content"]
    return str(results(state)["call-1"].content), saved


def test_one_long_line_previews_characters() -> None:
    notice, saved = evict_one("text")
    assert saved == LONG_LINE
    assert "tokens, 1 line)" in notice
    assert f"First 1,000 characters:\n{LONG_LINE[:1000]}\n" in notice
    assert f"({len(LONG_LINE) - 2000:,} characters omitted)" in notice
    assert f"Last 1,000 characters:\n{LONG_LINE[-1000:]}" in notice
    assert "1 lines" not in notice


def test_one_line_json_is_pretty_printed_and_previewed_by_lines() -> None:
    notice, saved = evict_one("json")
    assert json.loads(saved) == json.loads(LONG_JSON)
    assert saved.count("\n") > 100_000
    assert max(map(len, saved.split("\n"))) < 100
    assert "(JSON, pretty-printed so that it reads in windows)" in notice
    assert "First 5 lines:\n{\n" in notice
    assert "lines omitted)" in notice


class Counter:
    """A token counter (3 bytes a token) that records the texts it counts."""

    def __init__(self) -> None:
        self.counted: list[int] = []

    def __call__(self, text: str) -> int:
        self.counted.append(len(text))
        return len(text.encode()) // 3


def shell_result(eviction: LargeResultEviction, text: str) -> ToolMessage:
    request: Any = SimpleNamespace(tool_call={"name": "shell", "id": "c1"}, runtime=None, tool=None)
    message = ToolMessage(text, tool_call_id="c1")
    result = eviction.wrap_tool_call(request, lambda _request: message)
    assert isinstance(result, ToolMessage)
    return result


def test_size_decides_clearly_small_and_clearly_large_results_without_counting(
    tmp_path: Path,
) -> None:
    counter = Counter()
    eviction = LargeResultEviction(
        backend=LocalBackend(tmp_path), threshold_tokens=1000, count_tokens=counter
    )
    for size in (10, 250, 1000):  # at most one byte per threshold token: below
        assert shell_result(eviction, "x" * size).content == "x" * size
    assert shell_result(eviction, "é" * 500).content == "é" * 500  # 1,000 bytes
    big = shell_result(eviction, "y" * 8001)  # over 8 bytes per threshold token: above
    assert str(big.content).startswith("Tool result too large (about 2,001 tokens, 1 line)")
    assert big.response_metadata["eviction"]["counted"] is False
    assert (tmp_path / "large_tool_results" / "c1").read_text() == "y" * 8001
    assert counter.counted == []


def test_results_near_the_threshold_are_decided_by_their_exact_count(tmp_path: Path) -> None:
    counter = Counter()
    eviction = LargeResultEviction(
        backend=LocalBackend(tmp_path), threshold_tokens=1000, count_tokens=counter
    )
    for size in (1001, 2999, 3000, 3003, 3005, 5000, 8000):
        text = "z" * size
        exact = counter(text) > 1000
        counter.counted.clear()
        message = shell_result(eviction, text)
        assert counter.counted == [size]
        assert (message.content != text) is exact, size
        if exact:
            assert str(message.content).startswith(f"Tool result too large ({size // 3:,} tokens")
            assert message.response_metadata["eviction"]["counted"] is True
