"""When the server asks a person (`--mode default`), and what it says when it cannot."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp import types

from langchain_fstools import LocalBackend
from langchain_fstools.mcp.server import FileServer
from tests.unit.mcp.servers import Client, Request

if TYPE_CHECKING:
    from pathlib import Path


@dataclass
class Asking(Request):
    """A `tools/call` over an older protocol: a person is asked by an elicitation."""

    elicits: bool = True
    session: bool = True
    asked: list[str] = field(default_factory=list)

    def can_elicit(self) -> bool:
        return self.elicits

    def knows_client(self) -> bool:
        return self.session

    async def elicit(self, message: str, schema: Any) -> types.ElicitResult:
        self.asked.append(message)
        return types.ElicitResult(action="accept", content={"approve": True})


def server(root: Path) -> FileServer:
    return FileServer(
        LocalBackend(root),
        tools=None,
        execute=False,
        mode="default",
        permissions=(),
        protected_paths=None,
        eviction=False,
        settings={},
        handle_key=b"k" * 32,
    )


def dumped(result: Any) -> dict[str, Any]:
    """The result as sent (the SDKs' attribute names differ: `isError`, `is_error`)."""
    sent: dict[str, Any] = result.model_dump(by_alias=True, exclude_none=True)
    return sent


def text(result: Any) -> str:
    return str(dumped(result)["content"][0]["text"])


EDIT = {"file_path": "/a.txt", "old_string": "one", "new_string": "two"}


async def test_an_edit_that_would_fail_is_refused_without_asking(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    request = Asking("edit_file", EDIT, Client())
    result = await server(tmp_path).call(request)  # type: ignore[arg-type]
    assert dumped(result)["isError"] is True
    assert text(result).startswith("Error: /a.txt has not been read yet.")
    assert request.asked == []
    assert (tmp_path / "a.txt").read_text() == "one\n"


async def test_a_write_that_would_work_is_asked_about(tmp_path: Path) -> None:
    request = Asking("write_file", {"file_path": "/new.txt", "content": "x\n"}, Client())
    result = await server(tmp_path).call(request)  # type: ignore[arg-type]
    assert dumped(result)["isError"] is False, text(result)
    assert len(request.asked) == 1
    assert (tmp_path / "new.txt").read_text() == "x\n"


async def test_a_stateless_server_says_it_cannot_ask_not_that_the_client_cannot(
    tmp_path: Path,
) -> None:
    request = Asking(
        "write_file",
        {"file_path": "/new.txt", "content": "x\n"},
        Client(),
        elicits=False,
        session=False,
    )
    result = await server(tmp_path).call(request)  # type: ignore[arg-type]
    assert "this server keeps no session between calls (--stateless)" in text(result)
    assert "does not support elicitation" not in text(result)


async def test_a_client_without_elicitation_is_told_so(tmp_path: Path) -> None:
    request = Asking(
        "write_file", {"file_path": "/new.txt", "content": "x\n"}, Client(), elicits=False
    )
    result = await server(tmp_path).call(request)  # type: ignore[arg-type]
    assert "this MCP client cannot ask one (it does not support elicitation)" in text(result)
    assert not (tmp_path / "new.txt").exists()
