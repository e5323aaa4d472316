"""Traces reach LangSmith with names, inputs, outputs, tags and metadata.

The real `langsmith` client sends to a recording HTTP server on 127.0.0.1 started here;
nothing leaves the machine.
"""

from __future__ import annotations

import email.parser
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.tracers.langchain import LangChainTracer, wait_for_all_tracers
from langsmith import Client

from langchain_fstools import FilesystemMiddleware, FileToolkit, LocalBackend
from langchain_fstools.testing import ScriptedChatModel, tool_call

INFO = {
    "version": "0.10.0",
    "batch_ingest_config": {
        "use_multipart_endpoint": True,
        "size_limit": 100,
        "size_limit_bytes": 20_971_520,
        "scale_up_nthreads_limit": 1,
        "scale_up_qsize_trigger": 1000,
        "scale_down_nempty_trigger": 4,
    },
}


class Recorder(http.server.BaseHTTPRequestHandler):
    """Answers like a LangSmith endpoint and keeps every request body."""

    received: list[tuple[str, str, bytes]] = []  # noqa: RUF012 - shared by the handler threads

    def _reply(self, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._reply(INFO)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.received.append(
            (self.path, self.headers.get("Content-Type", ""), self.rfile.read(length))
        )
        self._reply({})

    do_PATCH = do_POST  # noqa: N815 - the handler protocol's method name

    def log_message(self, *args: object) -> None:
        del args


@pytest.fixture
def endpoint() -> Iterator[str]:
    Recorder.received = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def runs_sent() -> dict[str, dict[str, Any]]:
    """Rebuild runs from the multipart bodies (`post.<id>`, `post.<id>.inputs`, ...)."""
    runs: dict[str, dict[str, Any]] = {}
    for path, content_type, body in Recorder.received:
        if not path.startswith("/runs/multipart"):
            continue
        message = email.parser.BytesParser().parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + body
        )
        for part in message.get_payload():
            name = part.get_param("name", header="content-disposition")
            _, run_id, *field = str(name).split(".")
            value = json.loads(part.get_payload(decode=True))
            run = runs.setdefault(run_id, {})
            if field:
                run[field[0]] = value
            else:
                run.update(value)
    return runs


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
def test_tool_runs_carry_names_io_tags_and_metadata(endpoint: str, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello traces\n")
    client = Client(api_url=endpoint, api_key="test-key")
    tracer = LangChainTracer(client=client, project_name="fstools")
    tools = {t.name: t for t in FileToolkit(LocalBackend(tmp_path)).get_tools()}
    tools["read_file"].invoke({"file_path": "/notes.txt"}, config={"callbacks": [tracer]})
    tools["edit_file"].invoke(
        {"file_path": "/notes.txt", "old_string": "hello", "new_string": "goodbye"},
        config={"callbacks": [tracer]},
    )
    wait_for_all_tracers()
    client.flush()
    runs = {run["name"]: run for run in runs_sent().values() if "name" in run}
    read, edit = runs["read_file"], runs["edit_file"]
    assert read["run_type"] == "tool"
    assert read["inputs"]["file_path"] == "/notes.txt" or "/notes.txt" in json.dumps(read["inputs"])
    assert "hello traces" in json.dumps(read["outputs"])
    assert {"langchain_fstools", "backend:local", "read-only"} <= set(read["tags"])
    assert {"langchain_fstools", "backend:local", "mutating"} <= set(edit["tags"])
    metadata = read["extra"]["metadata"]
    assert metadata["fstools_backend"] == "local"
    assert metadata["read_only"] is True
    assert edit["extra"]["metadata"]["read_only"] is False
    assert "goodbye" in json.dumps(edit["outputs"])


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
def test_agent_tool_runs_name_the_users_backend_and_the_access(
    endpoint: str, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("hello traces\n")
    client = Client(api_url=endpoint, api_key="test-key")
    tracer = LangChainTracer(client=client, project_name="fstools")
    model = ScriptedChatModel(
        turns=[
            tool_call("read_file", call_id="r", file_path="/notes.txt"),
            tool_call("write_file", call_id="w", file_path="/new.txt", content="x\n"),
            "Done.",
        ]
    )
    agent = create_agent(model, middleware=[FilesystemMiddleware(backend=LocalBackend(tmp_path))])
    agent.invoke({"messages": [{"role": "user", "content": "go"}]}, {"callbacks": [tracer]})
    wait_for_all_tracers()
    client.flush()
    tool_runs = {
        run["name"]: run
        for run in runs_sent().values()
        if run.get("run_type") == "tool" and "name" in run
    }
    read, write = tool_runs["read_file"], tool_runs["write_file"]
    # The middleware mounts /large_tool_results/ over the user's disk: traces still say local.
    assert {"backend:local", "read-only"} <= set(read["tags"])
    assert {"backend:local", "mutating"} <= set(write["tags"])
    assert not any(tag == "backend:composite" for run in tool_runs.values() for tag in run["tags"])
    assert read["extra"]["metadata"]["fstools_backend"] == "local"
    assert read["extra"]["metadata"]["fstools_access"] == "read"
    assert write["extra"]["metadata"]["fstools_access"] == "mutate"
