"""MCP over HTTP checks who calls: Host and Origin on every bind, a bearer token always.

Servers bound to 127.0.0.1, 127.0.0.2 and [::1] (real processes): a request whose
`Host` or `Origin` names another site gets 4xx and runs nothing; a request without the
token or with a wrong one gets 401; the right token lets the real client in. A server
given no token draws one (kept 0600 for this user); only `--no-auth` serves without
one, and then reads only. A non-loopback bind without a token does not start.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from langchain_fstools.mcp.door import TOKEN_ENV
from tests.integration.mcp_servers import (
    AUTHORIZATION,
    command,
    connect,
    free_port,
    http_server,
    make_workspace,
    server_env,
    text_of,
    url_host,
    wire,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1", "127.0.0.2", "::1"]),
]

TIMEOUT = 60
BINDS = ["127.0.0.1", "127.0.0.2", "::1"]
TOKEN = "correct-horse-battery-staple"  # noqa: S105 - a test token


def post(
    url: str, body: dict[str, Any], headers: dict[str, str]
) -> tuple[int, dict[str, str], str]:
    """POST `body` as JSON-RPC to `url`, with `headers` (Host included) as given."""
    where, _, path = url.removeprefix("http://").partition("/")
    host, _, port = where.rpartition(":")
    connection = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=10)
    try:
        connection.request(
            "POST",
            "/" + path,
            body=json.dumps(body),
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                **headers,
            },
        )
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode()
    finally:
        connection.close()


def initialize(request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "forger", "version": "1"},
        },
    }


def write_call(path: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "write_file", "arguments": {"file_path": path, "content": "pwned"}},
    }


def own_host(url: str) -> str:
    return url.removeprefix("http://").partition("/")[0]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return make_workspace(root)


@pytest.mark.parametrize("bind", BINDS)
def test_forged_host_or_origin_gets_4xx_and_touches_nothing(bind: str, workspace: Path) -> None:
    with http_server("--root", str(workspace), host=bind) as url:
        port = own_host(url).rpartition(":")[2]
        status, headers, _ = post(url, initialize(), {"Host": own_host(url), **AUTHORIZATION})
        assert status == 200
        session = {"Mcp-Session-Id": headers["mcp-session-id"], **AUTHORIZATION}
        forgeries = [
            {"Host": "attacker.example"},
            {"Host": f"attacker.example:{port}"},
            {"Host": f"rebind.attacker.example:{port}", "Origin": "http://rebind.attacker.example"},
            {"Host": own_host(url), "Origin": f"http://attacker.example:{port}"},
            {"Host": own_host(url), "Origin": "null"},
        ]
        for forged in forgeries:
            refused, _, _ = post(url, initialize(), forged)
            assert 400 <= refused < 500, forged
            refused, _, _ = post(url, write_call("/pwned.txt"), {**forged, **session})
            assert 400 <= refused < 500, forged
        local = {
            "Host": f"localhost:{port}",
            "Origin": f"http://{url_host(bind)}:{port}",
            **AUTHORIZATION,
        }
        status, _, _ = post(url, initialize(3), local)
        assert status == 200
    assert not (workspace / "pwned.txt").exists()


@pytest.mark.parametrize("bind", BINDS)
async def test_a_token_is_required_when_set(bind: str, workspace: Path) -> None:
    with http_server("--root", str(workspace), "--token", TOKEN, host=bind) as url:
        for authorization in (None, "Bearer wrong", f"Basic {TOKEN}", f"Bearer {TOKEN}x"):
            headers = {"Host": own_host(url)}
            if authorization is not None:
                headers["Authorization"] = authorization
            status, response_headers, _ = post(url, initialize(), headers)
            assert status == 401, authorization
            assert response_headers["www-authenticate"].startswith("Bearer")
            status, _, _ = post(url, write_call("/pwned.txt"), headers)
            assert status == 401
        async with (
            asyncio.timeout(TIMEOUT),
            connect(url, headers={"Authorization": f"Bearer {TOKEN}"}) as session,
        ):
            read = await session.call_tool("read_file", {"file_path": "/notes.txt"})
    assert not wire(read)["isError"]
    assert "alpha" in text_of(read)
    assert not (workspace / "pwned.txt").exists()


def test_the_token_can_come_from_the_environment(workspace: Path) -> None:
    env = {"LANGCHAIN_FSTOOLS_MCP_TOKEN": TOKEN}
    with http_server("--root", str(workspace), env=env) as url:
        status, _, _ = post(url, initialize(), {"Host": own_host(url)})
        assert status == 401
        status, _, _ = post(
            url, initialize(), {"Host": own_host(url), "Authorization": f"Bearer {TOKEN}"}
        )
        assert status == 200


@pytest.mark.parametrize("address", ["0.0.0.0:0", "[::]:0"])
def test_a_non_loopback_bind_without_a_token_does_not_start(address: str, workspace: Path) -> None:
    env = {k: v for k, v in server_env().items() if k != "LANGCHAIN_FSTOOLS_MCP_TOKEN"}
    done = subprocess.run(
        command("--root", str(workspace), "--http", address),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "needs a bearer token" in done.stderr


def test_a_server_given_no_token_draws_one_and_lets_no_one_in_without_it(
    workspace: Path, tmp_path: Path
) -> None:
    env = {TOKEN_ENV: "", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    with http_server("--root", str(workspace), env=env) as url:
        port = own_host(url).rpartition(":")[2]
        status, _, _ = post(url, initialize(), {"Host": own_host(url)})
        assert status == 401
        status, _, _ = post(url, write_call("/pwned.txt"), {"Host": own_host(url)})
        assert status == 401
        kept = tmp_path / "config" / "langchain-fstools" / f"mcp-http-token-{port}"
        assert kept.stat().st_mode & 0o777 == 0o600
        drawn = {"Authorization": f"Bearer {kept.read_text().strip()}"}
        status, _, _ = post(url, initialize(), {"Host": own_host(url), **drawn})
        assert status == 200
    assert not (workspace / "pwned.txt").exists()


async def test_without_a_token_only_reading_is_served(workspace: Path) -> None:
    with http_server("--root", str(workspace), "--no-auth", env={TOKEN_ENV: ""}) as url:
        async with asyncio.timeout(TIMEOUT), connect(url, headers={}) as session:
            listed = {tool.name for tool in (await session.list_tools()).tools}
            read = await session.call_tool("read_file", {"file_path": "/notes.txt"})
            written = await session.call_tool(
                "write_file", {"file_path": "/pwned.txt", "content": "pwned"}
            )
    assert listed == {"ls", "read_file", "glob", "grep"}
    assert not wire(read)["isError"]
    assert wire(written)["isError"]
    assert "this server takes requests without a token, so it only reads" in text_of(written)
    assert not (workspace / "pwned.txt").exists()


def test_the_serving_line_comes_once_the_port_accepts(tmp_path: Path) -> None:
    port = free_port()
    process = subprocess.Popen(
        command("--root", str(make_workspace(tmp_path / "ws")), "--http", f"127.0.0.1:{port}"),
        env=server_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = threading.Timer(TIMEOUT, process.kill)  # ends the reading below
    deadline.start()
    try:
        assert process.stderr is not None
        lines = [""]
        for line in process.stderr:
            lines.append(line)
            if line.startswith("Serving MCP"):
                break
        assert lines[-1].startswith(f"Serving MCP over streamable HTTP at http://127.0.0.1:{port}/")
        socket.create_connection(("127.0.0.1", port), timeout=1).close()  # at once, no retry
    finally:
        deadline.cancel()
        process.kill()
        process.wait(timeout=10)
