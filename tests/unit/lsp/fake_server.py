"""A language server that misbehaves on purpose: `python fake_server.py MODE`.

Modes: `ok` (one warning per line containing "BAD"), `crash` (exits at the first
change), `hang` (never answers a diagnostic request), `flood` (5,000 diagnostics for
any text with "BAD"), `net` (the message says whether an internet socket could be
opened), `escape` (for a line `BAD <file> <socket>`, the message says how opening a TCP
socket to loopback, connecting to the Unix socket, reading the file, and reading the
document's own file went: `ok` or the error's name), `paths` (the message names the
file's host path and URI), `push` (no pull
diagnostics: it publishes them, with the document's version, at every open and
change), `mute` (never answers initialize), `garbage` (answers a diagnostic request
with a malformed report). Speaks just enough LSP over stdio: initialize, didOpen/didChange,
textDocument/diagnostic, publishDiagnostics, shutdown, exit.
"""

from __future__ import annotations

import errno
import json
import socket
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

MODE = sys.argv[1]
texts: dict[str, str] = {}


def read() -> dict | None:
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))


def send(message: dict) -> None:
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    sys.stdout.buffer.flush()


def network() -> str:
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    except OSError:
        return "network refused"
    return "network open"


def attempt(action) -> str:
    try:
        action()
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    return "ok"


def loopback() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1)
        sock.connect_ex(("127.0.0.1", 9))


def connect(path: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)


def read_file(path: str) -> None:
    with Path(path).open("rb") as file:
        file.read(1)


def escape(line: str, uri: str) -> str:
    _, target, where = line.split()
    return (
        f"loopback {attempt(loopback)}; unix {attempt(lambda: connect(where))};"
        f" outside {attempt(lambda: read_file(target))};"
        f" inside {attempt(lambda: read_file(unquote(urlparse(uri).path)))}"
    )


def described(line: str, uri: str) -> str:
    if MODE == "net":
        return network()
    if MODE == "paths":
        return f"see {unquote(urlparse(uri).path)} and {uri}"
    if MODE == "escape":
        return escape(line, uri)
    return "a bad line"


def diagnostics(text: str, uri: str) -> list[dict]:
    found = []
    for number, line in enumerate(text.splitlines()):
        if "BAD" in line:
            copies = 5000 if MODE == "flood" else 1
            found += [
                {
                    "range": {
                        "start": {"line": number, "character": 0},
                        "end": {"line": number, "character": 3},
                    },
                    "severity": 2,
                    "code": f"B{copy}",
                    "message": described(line, uri),
                }
                for copy in range(copies)
            ]
    return found


def publish(uri: str, version: int) -> None:
    if MODE == "push":
        items = diagnostics(texts[uri], uri)
        params = {"uri": uri, "version": version, "diagnostics": items}
        send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": params})


while (message := read()) is not None:
    method = message.get("method")
    params = message.get("params", {})
    if method == "initialize" and MODE == "mute":
        continue
    if method == "initialize":
        capabilities: dict = {"textDocumentSync": 1}
        if MODE != "push":
            capabilities["diagnosticProvider"] = {
                "interFileDependencies": False,
                "workspaceDiagnostics": False,
            }
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": capabilities}})
    elif method == "textDocument/didOpen":
        texts[params["textDocument"]["uri"]] = params["textDocument"]["text"]
        publish(params["textDocument"]["uri"], params["textDocument"]["version"])
    elif method == "textDocument/didChange":
        if MODE == "crash":
            sys.exit(3)
        texts[params["textDocument"]["uri"]] = params["contentChanges"][-1]["text"]
        publish(params["textDocument"]["uri"], params["textDocument"]["version"])
    elif method == "textDocument/diagnostic":
        if MODE == "hang":
            continue
        if MODE == "garbage":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {"kind": "full", "items": 7}})
            continue
        uri = params["textDocument"]["uri"]
        items = diagnostics(texts.get(uri, ""), uri)
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"kind": "full", "items": items}})
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": message["id"], "result": None})
    elif method == "exit":
        break
