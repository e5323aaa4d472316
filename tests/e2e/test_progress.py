"""Progress through the run's stream writer: `stream_mode="custom"` while tools run."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from langchain.agents import create_agent

from langchain_fstools import FilesystemMiddleware, LocalBackend, StateBackend
from langchain_fstools.core import progress
from langchain_fstools.shell.session.output import OutputReporter
from langchain_fstools.testing import ScriptedChatModel, tool_call

REQUEST = {"messages": [{"role": "user", "content": "go"}]}
SLOW = "for i in 1 2 3; do echo line$i; sleep 0.3; done; echo in $PWD >&2"


def local_agent(root: Path, *turns: Any) -> Any:
    backend = LocalBackend(root, execute=True)
    model = ScriptedChatModel(turns=[*turns, "Done."])
    return create_agent(model, middleware=[FilesystemMiddleware(backend=backend)])


def test_execute_streams_output_lines_as_they_arrive(tmp_path: Path) -> None:
    agent = local_agent(tmp_path, tool_call("execute", call_id="x", command=SLOW))
    start = time.monotonic()
    arrivals = [
        (time.monotonic() - start, event) for event in agent.stream(REQUEST, stream_mode="custom")
    ]
    events = [event for _, event in arrivals]
    assert {e["tool"] for e in events} == {"execute"}
    assert {e["tool_call_id"] for e in events} == {"x"}
    stdout = [e["output"] for e in events if e["stream"] == "stdout"]
    assert "".join(stdout) == "line1\nline2\nline3\n"
    assert len(stdout) == 3  # one report per line: each came 0.3 s after the last
    first, last = arrivals[0][0], arrivals[-1][0]
    assert last - first >= 0.5  # streamed while the command ran, not at its end
    stderr = [e["output"] for e in events if e["stream"] == "stderr"]
    assert stderr == [f"in {tmp_path.resolve()}\n"]  # the workspace at its real path


async def test_async_execute_streams_too(tmp_path: Path) -> None:
    agent = local_agent(tmp_path, tool_call("execute", call_id="x", command="echo a; echo b"))
    events = [event async for event in agent.astream(REQUEST, stream_mode="custom")]
    assert "".join(e["output"] for e in events) == "a\nb\n"


def test_grep_and_glob_stream_counts(tmp_path: Path) -> None:
    for n in range(30):
        (tmp_path / f"f{n:02d}.txt").write_text("needle\nhay\nneedle\n")
    agent = local_agent(
        tmp_path,
        tool_call("grep", call_id="g", pattern="needle", output_mode="content"),
        tool_call("glob", call_id="l", pattern="*.txt"),
    )
    events = list(agent.stream(REQUEST, stream_mode="custom"))
    grep = [e for e in events if e["tool"] == "grep"]
    assert grep[-1] == {"tool": "grep", "tool_call_id": "g", "files": 30, "matches": 60}
    glob = [e for e in events if e["tool"] == "glob"]
    assert glob[-1] == {"tool": "glob", "tool_call_id": "l", "files": 30}


def test_state_backend_search_counts() -> None:
    model = ScriptedChatModel(
        turns=[
            tool_call("write_file", file_path="/a.txt", content="needle\n"),
            tool_call("grep", call_id="g", pattern="needle"),
            "Done.",
        ]
    )
    agent = create_agent(model, middleware=[FilesystemMiddleware(backend=StateBackend())])
    custom = list(agent.stream(REQUEST, stream_mode="custom"))
    assert custom == [{"tool": "grep", "tool_call_id": "g", "files": 1, "matches": 1}]


def test_without_a_listener_nothing_is_reported_and_no_reporter_is_made(tmp_path: Path) -> None:
    assert not progress.listening_now()
    result = LocalBackend(tmp_path, execute=True).execute("echo hi", timeout=5, output_limit=100)
    assert result.output == "hi\n"
    seen: list[dict[str, Any]] = []
    with progress.listening(seen.append):
        LocalBackend(tmp_path, execute=True).execute("echo hi", timeout=5, output_limit=100)
    assert seen == [{"output": "hi\n", "stream": "stdout"}]


def test_output_reporter_reports_whole_lines_and_whole_characters() -> None:
    seen: list[dict[str, Any]] = []
    reporter = OutputReporter()
    with progress.listening(seen.append):
        reporter.add(b"ab")
        reporter.add(b"c\nd\xc3")  # an "é" split between two reads
        reporter.add(b"\xa9", stderr=True)
        reporter.add(b"\xa9\n")
        reporter.flush()
    assert seen == [
        {"output": "abc\n", "stream": "stdout"},
        {"output": "dé\n", "stream": "stdout"},
        {"output": "\ufffd", "stream": "stderr"},
    ]
