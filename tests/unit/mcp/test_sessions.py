"""Approvals on the 2026-07-28 protocol: the question is a result, the answer a retry.

The server keeps nothing between the two: the retry carries the answer and the signed
digest of what was shown, so any instance with the same key applies exactly that change.
Needs mcp 2.x (its `InputRequiredResult`); runs in the mcp 2.x venv.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from langchain_fstools import LocalBackend
from langchain_fstools.mcp.sdk import GENERATION
from langchain_fstools.mcp.server import FileServer
from langchain_fstools.mcp.sessions import APPROVAL_KEY
from tests.unit.mcp.servers import Client, Request

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.skipif(GENERATION < 2, reason="mcp 1.x has no InputRequiredResult")

KEY = b"k" * 32
WRITE = {"file_path": "/approved.txt", "content": "yes\n"}


@dataclass
class ModernRequest(Request):
    """A `tools/call` on 2026-07-28: a person is asked by the result, answered by a retry."""

    answers: dict[str, Any] | None = None
    state: str | None = None

    def can_elicit(self) -> bool:
        return True

    def input_required(self, key: str, message: str, schema: Any, state: str) -> Any:
        from langchain_fstools.mcp.sdk import ToolRequest  # noqa: PLC0415 - the real one

        return ToolRequest.input_required(self, key, message, schema, state)  # type: ignore[arg-type]

    def answer(self, key: str) -> Any:
        from langchain_fstools.mcp.sdk import ToolRequest  # noqa: PLC0415 - the real one

        return ToolRequest.answer(self, key)  # type: ignore[arg-type]


def instance(root: Path) -> FileServer:
    """One server instance; instances share the key, as behind a balancer."""
    return FileServer(
        LocalBackend(root),
        tools=None,
        execute=False,
        mode="default",
        permissions=(),
        protected_paths=None,
        eviction=False,
        settings={},
        handle_key=KEY,
    )


async def ask(server: FileServer) -> Any:
    asking = ModernRequest("write_file", WRITE, Client(), progress_token=None, asks_by_result=True)
    asked = await server.call(asking)  # type: ignore[arg-type]
    dumped = asked.model_dump(by_alias=True, exclude_none=True)
    assert dumped["resultType"] == "input_required"
    return dumped


async def retry(server: FileServer, answer: dict[str, Any], state: str) -> dict[str, Any]:
    request = ModernRequest(
        "write_file",
        WRITE,
        Client(),
        progress_token=None,
        asks_by_result=True,
        answers={APPROVAL_KEY: answer},
        state=state,
    )
    done = await server.call(request)  # type: ignore[arg-type]
    dumped: dict[str, Any] = done.model_dump(by_alias=True, exclude_none=True)
    return dumped


async def test_asked_on_one_instance_and_approved_on_another_applies_what_was_shown(
    tmp_path: Path,
) -> None:
    asked = await ask(instance(tmp_path))
    form = asked["inputRequests"][APPROVAL_KEY]["params"]
    assert "+yes" in form["message"]
    assert form["requestedSchema"]["required"] == ["approve"]
    assert not (tmp_path / "approved.txt").exists()
    accept = {"action": "accept", "content": {"approve": True}}
    done = await retry(instance(tmp_path), accept, asked["requestState"])
    assert done["isError"] is False, done
    assert (tmp_path / "approved.txt").read_text() == "yes\n"


async def test_a_declined_or_forged_approval_runs_nothing(tmp_path: Path) -> None:
    server = instance(tmp_path)
    state = (await ask(server))["requestState"]
    declined = await retry(server, {"action": "decline"}, state)
    assert declined["content"][0]["text"].startswith("User rejected the tool call")
    forged = await retry(server, {"action": "accept", "content": {"approve": True}}, state[:-2])
    assert forged["isError"] is True
    assert "changed after the change was approved" in forged["content"][0]["text"]
    assert not (tmp_path / "approved.txt").exists()
