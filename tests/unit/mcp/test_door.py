"""The HTTP door: Host and Origin name this server, a bearer token always (unless no_auth)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from langchain_fstools.mcp.door import Door, DoorApp, is_loopback, new_token

PORT = 8765
SECRET = "s3cret"  # noqa: S105 - a test token


@pytest.mark.parametrize("bind", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
@pytest.mark.parametrize(
    "host",
    [
        "attacker.example",
        f"attacker.example:{PORT}",
        f"127.0.0.1.attacker.example:{PORT}",
        f"evil@127.0.0.1:{PORT}",
        f"127.0.0.1:{PORT}/x",
        f" 127.0.0.1:{PORT}",
        f"10.0.0.1:{PORT}",
        "",
    ],
)
def test_a_forged_host_is_refused_on_every_bind(bind: str, host: str) -> None:
    door = Door.for_bind(bind, PORT, no_auth=True)
    refused = door.refusal({"host": host})
    assert refused is not None
    assert refused[0] == 421


@pytest.mark.parametrize(
    ("bind", "host"),
    [
        ("127.0.0.1", f"127.0.0.1:{PORT}"),
        ("127.0.0.1", f"localhost:{PORT}"),
        ("127.0.0.1", f"LocalHost:{PORT}"),
        ("127.0.0.2", f"127.0.0.2:{PORT}"),
        ("::1", f"[::1]:{PORT}"),
        ("127.0.0.2", "127.0.0.2"),
    ],
)
def test_the_bound_address_and_localhost_are_let_in(bind: str, host: str) -> None:
    assert Door.for_bind(bind, PORT, no_auth=True).refusal({"host": host}) is None


def test_another_port_or_another_loopback_address_is_refused() -> None:
    door = Door.for_bind("127.0.0.2", PORT, no_auth=True)
    assert door.refusal({"host": "127.0.0.2:1"}) is not None
    assert door.refusal({"host": f"127.0.0.1:{PORT}"}) is not None  # not the bound address


@pytest.mark.parametrize(
    "origin",
    [
        "http://attacker.example",
        f"http://attacker.example:{PORT}",
        "null",
        "file://",
        f"ftp://127.0.0.1:{PORT}",
        f"http://127.0.0.1.attacker.example:{PORT}",
        f"http://user@127.0.0.1:{PORT}",
        f"http://127.0.0.1:{PORT}/path",
        "http://localhost:1",  # a local origin on another port: another site
        "http://localhost:3000",
        "http://localhost",
        f"http://127.0.0.1:{PORT + 1}",
    ],
)
def test_a_forged_origin_is_refused(origin: str) -> None:
    door = Door.for_bind("127.0.0.1", PORT, no_auth=True)
    refused = door.refusal({"host": f"127.0.0.1:{PORT}", "origin": origin})
    assert refused is not None
    assert refused[0] == 403


def test_a_local_origin_on_the_servers_port_is_let_in() -> None:
    door = Door.for_bind("127.0.0.1", PORT, no_auth=True)
    for origin in (
        f"http://localhost:{PORT}",
        f"http://127.0.0.1:{PORT}",
        f"https://LOCALHOST:{PORT}",
    ):
        assert door.refusal({"host": f"127.0.0.1:{PORT}", "origin": origin}) is None
    assert (
        Door.for_bind("127.0.0.1", 443, no_auth=True).refusal(
            {"host": "localhost", "origin": "https://localhost"}
        )
        is None
    )


@pytest.mark.parametrize(
    "bind", ["foo.localhost", "localhost.", "127.0.0.1.nip.io", "localhost.example"]
)
def test_only_real_loopback_names_serve_without_a_token(bind: str) -> None:
    assert not is_loopback(bind)
    with pytest.raises(ValueError, match="needs a bearer token"):
        Door.for_bind(bind, PORT, no_auth=True)


@pytest.mark.parametrize("bind", ["127.0.0.1", "::1", "localhost", "192.0.2.1"])
def test_no_bind_serves_without_a_token_unless_asked_to(bind: str) -> None:
    with pytest.raises(ValueError, match="needs a bearer token"):
        Door.for_bind(bind, PORT)
    with pytest.raises(ValueError, match="needs a bearer token"):
        Door.for_bind(bind, PORT, token="")
    with pytest.raises(ValueError, match="contradict"):
        Door.for_bind(bind, PORT, token=SECRET, no_auth=True)


def test_a_drawn_token_is_kept_for_this_user_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))

    token, path = new_token(8765)
    again, same = new_token(8765)

    assert path == tmp_path / "langchain-fstools" / "mcp-http-token-8765"
    assert same == path
    assert again != token
    assert len(token) >= 40
    assert path.read_text() == again + "\n"
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporaries left
    assert new_token(9000)[1] != path  # one file per server port


@pytest.mark.parametrize(
    "bind", ["localhost", "LOCALHOST", "127.0.0.1", "127.255.0.9", "::1", "[::1]"]
)
def test_localhost_and_loopback_addresses_are_loopback(bind: str) -> None:
    assert is_loopback(bind)


@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", "Bearer wrong", f"Basic {SECRET}", f"Bearer {SECRET}-and-more", SECRET],
)
def test_with_a_token_a_missing_or_wrong_one_gets_401(authorization: str | None) -> None:
    door = Door.for_bind("127.0.0.1", PORT, token=SECRET)
    headers = {"host": f"127.0.0.1:{PORT}"}
    if authorization is not None:
        headers["authorization"] = authorization
    refused = door.refusal(headers)
    assert refused is not None
    assert refused[0] == 401


def test_the_right_token_is_let_in() -> None:
    door = Door.for_bind("127.0.0.1", PORT, token=SECRET)
    for given in (f"Bearer {SECRET}", f"bearer {SECRET}"):
        assert door.refusal({"host": f"127.0.0.1:{PORT}", "authorization": given}) is None


NOT_LOOPBACK = ["0.0.0.0", "::", "192.168.1.5", "box.example"]  # noqa: S104 - refused binds


@pytest.mark.parametrize("bind", NOT_LOOPBACK)
def test_a_non_loopback_bind_without_a_token_is_refused(bind: str) -> None:
    assert not is_loopback(bind)
    with pytest.raises(ValueError, match="needs a bearer token"):
        Door.for_bind(bind, PORT, no_auth=True)
    with pytest.raises(ValueError, match="needs a bearer token"):
        Door.for_bind(bind, PORT, token="")
    door = Door.for_bind(bind, PORT, token=SECRET, names=["box.lan"])
    assert door.refusal({"host": f"box.lan:{PORT}", "authorization": f"Bearer {SECRET}"}) is None
    assert (
        door.refusal({"host": f"other.lan:{PORT}", "authorization": f"Bearer {SECRET}"}) is not None
    )


async def test_the_app_refuses_before_the_guarded_app_runs() -> None:
    reached: list[str] = []

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        del receive
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    app = DoorApp(guarded, Door.for_bind("127.0.0.2", PORT, token=SECRET))

    async def request(*headers: tuple[bytes, bytes]) -> list[dict[str, Any]]:
        sent: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b""}

        scope = {"type": "http", "path": "/mcp", "headers": list(headers)}
        await app(scope, receive, send)
        return sent

    good = (b"host", f"127.0.0.2:{PORT}".encode())
    token = (b"authorization", f"Bearer {SECRET}".encode())
    forged = await request((b"host", b"attacker.example"), token)
    assert forged[0]["status"] == 421
    unauthorised = await request(good)
    assert unauthorised[0]["status"] == 401
    assert (b"www-authenticate", b'Bearer realm="langchain-fstools"') in unauthorised[0]["headers"]
    doubled = await request(good, (b"host", b"attacker.example"), token)
    assert doubled[0]["status"] == 400
    assert reached == []
    allowed = await request(good, token)
    assert allowed[0]["status"] == 200
    assert reached == ["/mcp"]
