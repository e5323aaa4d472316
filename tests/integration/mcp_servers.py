"""Start `python -m langchain_fstools mcp` for the MCP tests and connect the real client.

Servers run as subprocesses of this checkout (stdio, or streamable HTTP on a free
127.0.0.1 port) and are killed when the test ends.
"""

from __future__ import annotations

import contextlib
import io
import os
import socket
import subprocess
import sys
import time
import weakref
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from PIL import Image

from langchain_fstools.mcp.door import TOKEN_ENV
from langchain_fstools.mcp.handles import HANDLE_KEY_ENV

SRC = str(Path(__file__).resolve().parents[2] / "src")
INITIALIZED: weakref.WeakKeyDictionary[ClientSession, types.InitializeResult] = (
    weakref.WeakKeyDictionary()
)
"""Each open session's `initialize` result (the server's name, version, instructions)."""
START_TIMEOUT = 90.0


HANDLE_KEY = "integration-tests-read-handle-key"
"""The servers' read-handle key, so none is written to the user's config folder."""

TOKEN = "integration-tests-http-token"  # noqa: S105 - a test token
"""The HTTP servers' bearer token (from the environment), so none is drawn."""

AUTHORIZATION = {"Authorization": f"Bearer {TOKEN}"}
"""The header every HTTP client of these servers sends."""


def server_env() -> dict[str, str]:
    """This process's environment, importing the package from this checkout.

    Servers take their keys from it (no file is written); the TypeScript clients their
    bearer token.
    """
    return {**os.environ, "PYTHONPATH": SRC, HANDLE_KEY_ENV: HANDLE_KEY, TOKEN_ENV: TOKEN}


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "langchain_fstools", "mcp", *args]


def free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def url_host(host: str) -> str:
    """`host` as it stands in a URL (IPv6 in brackets)."""
    return f"[{host}]" if ":" in host else host


@contextlib.contextmanager
def http_server(
    *args: str, host: str = "127.0.0.1", env: dict[str, str] | None = None
) -> Iterator[str]:
    """Run the server over streamable HTTP on a free port of `host`; yield its URL."""
    port = free_port(host)
    process = subprocess.Popen(
        command(*args, "--http", f"{url_host(host)}:{port}"),
        env={**server_env(), **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"server exited: {process.stderr.read().decode()}")  # type: ignore[union-attr]
            with contextlib.suppress(OSError):
                socket.create_connection((host, port), timeout=0.2).close()
                break
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.1)
        yield f"http://{url_host(host)}:{port}/mcp"
    finally:
        process.kill()
        process.wait(timeout=10)


def approving(answer: dict[str, Any] | None, seen: list[str]) -> Any:
    """An elicitation callback that records the message and answers `answer`."""

    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        seen.append(params.message)
        if answer is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content=answer)

    return callback


@contextlib.asynccontextmanager
async def connect(
    target: str, *args: str, elicitation: Any = None, headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """A client session: `target` is "stdio" (spawn a server with `args`) or an HTTP URL.

    `headers` go with every HTTP request. Default: `AUTHORIZATION`.
    """
    if target == "stdio":
        params = StdioServerParameters(
            command=sys.executable, args=command(*args)[1:], env=server_env()
        )
        transport: Any = stdio_client(params)
    else:
        transport = http_transport(target, AUTHORIZATION if headers is None else headers)
    async with transport as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write, elicitation_callback=elicitation) as session:
            INITIALIZED[session] = await session.initialize()
            yield session


def http_transport(url: str, headers: dict[str, str] = AUTHORIZATION) -> Any:
    """The SDK's streamable HTTP client transport to `url`, sending `headers`."""
    client = create_mcp_http_client(headers=headers)  # httpx on 1.x, httpx2 on 2.x
    return streamable_http_client(url, http_client=client)


def wire(model: Any) -> dict[str, Any]:
    """An SDK model as sent on the wire (camelCase): the same under mcp 1.x and 2.x."""
    dumped: dict[str, Any] = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


def session_server_info(session: ClientSession) -> dict[str, Any]:
    """The `serverInfo` the server sent at initialisation (name and version)."""
    dumped = wire(INITIALIZED[session])["serverInfo"]
    return {"name": dumped["name"], "version": dumped["version"]}


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def make_workspace(root: Path) -> Path:
    """`root` (made if missing) with src/app.py, notes.txt and logo.png."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text('def greet(name):\n    return f"Helo, {name}!"\n')
    (root / "notes.txt").write_text("alpha\nbeta\n")
    image = Image.new("RGB", (40, 30), "navy")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    (root / "logo.png").write_bytes(buffer.getvalue())
    return root
