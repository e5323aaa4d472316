"""An object store that fails says why, in the tool result and in the log: a refused
connection, a silent server, a 403 with the store's own message, missing credentials;
glob and grep say it too (no "check the arguments"). All on loopback."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from obstore.store import S3Store

from langchain_fstools import FileToolkit, ObjectStoreBackend

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"file_path": "/a.txt"}),
    ("ls", {"path": "/"}),
    ("glob", {"pattern": "*.py"}),
    ("grep", {"pattern": "x"}),
    ("write_file", {"file_path": "/a.txt", "content": "x"}),
]
DENIAL = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code>'
    b"<Message>Access Denied by bucket policy</Message></Error>"
)


def store(port: int, **keys: str) -> S3Store:
    """An S3 store at a loopback port, failing fast (1 s, no retries)."""
    quick = {"init_backoff": timedelta(milliseconds=10), "max_backoff": timedelta(milliseconds=10)}
    credentials = keys or {"access_key_id": "key", "secret_access_key": "secret"}
    return S3Store(
        "bucket",
        endpoint=f"http://127.0.0.1:{port}",
        region="us-east-1",
        client_options={"allow_http": True, "timeout": "1s", "connect_timeout": "1s"},
        retry_config={
            "max_retries": 0,
            "backoff": {**quick, "base": 2},
            "retry_timeout": timedelta(seconds=1),
        },
        **credentials,
    )


def results(backend: ObjectStoreBackend) -> dict[str, str]:
    tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
    return {name: tools[name].invoke(args) for name, args in CALLS}


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield int(listener.getsockname()[1])


@pytest.fixture
def denying_port() -> Iterator[int]:
    class Deny(BaseHTTPRequestHandler):
        def answer(self) -> None:
            self.send_response(403)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(DENIAL)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(DENIAL)

        do_HEAD = do_GET = do_PUT = answer  # noqa: N815 - http.server's names

        def log_message(self, *args: object) -> None:
            del args

    server = HTTPServer(("127.0.0.1", 0), Deny)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_port
    server.shutdown()
    thread.join()


def test_a_refused_connection_is_named_by_every_tool_and_logged(
    closed_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        answers = results(ObjectStoreBackend(store(closed_port)))
    for name, answer in answers.items():
        assert answer == (
            "Error: the file store failed: connection refused (is the store running at its"
            " endpoint?) (GenericError). Try the call again; if it keeps failing, tell the user."
        ), name
    logged = [r.getMessage() for r in caplog.records if "object store" in r.getMessage()]
    assert logged
    assert all(f"127.0.0.1:{closed_port}" in line for line in logged)
    assert not any("no running event loop" in r.getMessage() for r in caplog.records)


def test_a_store_that_does_not_answer_is_named(silent_port: int) -> None:
    tools = {
        tool.name: tool for tool in FileToolkit(ObjectStoreBackend(store(silent_port))).get_tools()
    }
    for name in ("read_file", "glob"):
        answer = tools[name].invoke(dict(CALLS)[name])
        assert answer.startswith("Error: the file store failed: it did not answer in time"), answer


def test_a_denial_carries_the_store_s_own_message(denying_port: int) -> None:
    answers = results(ObjectStoreBackend(store(denying_port)))
    for name, answer in answers.items():
        assert "access denied, HTTP 403: Access Denied by bucket policy" in answer, name
        assert answer.endswith("This is a setup problem, not your arguments: tell the user."), name
