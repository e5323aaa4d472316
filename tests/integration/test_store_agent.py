"""End to end: create_agent + FilesystemMiddleware(StoreBackend) on PostgresStore and
PostgresSaver. Files follow the user across threads and stay away from other users."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.store.postgres import PostgresStore

from langchain_fstools import FilesystemMiddleware, StoreBackend
from langchain_fstools.testing import ScriptedChatModel

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]


@dataclass
class UserContext:
    user_id: str


def call(name: str, n: int, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call_{n}"}])


def test_files_follow_the_user_across_threads(postgres_url: str) -> None:
    turns = [
        call("write_file", 1, file_path="/notes/plan.md", content="ship on friday\n"),
        AIMessage("saved"),
        call("read_file", 2, file_path="/notes/plan.md"),
        AIMessage("read"),
        call("read_file", 3, file_path="/notes/plan.md"),
        AIMessage("nothing there"),
    ]
    model = ScriptedChatModel(turns=turns)
    backend = StoreBackend(namespace=lambda rt: ("fs", rt.context.user_id))
    with (
        PostgresStore.from_conn_string(postgres_url) as store,
        PostgresSaver.from_conn_string(postgres_url) as saver,
    ):
        store.setup()
        saver.setup()
        agent = create_agent(
            model,
            middleware=[FilesystemMiddleware(backend=backend)],
            store=store,
            checkpointer=saver,
            context_schema=UserContext,
        )

        def run(thread: str, user: str) -> ToolMessage:
            result = agent.invoke(
                {"messages": [{"role": "user", "content": "go"}]},
                {"configurable": {"thread_id": thread}},
                context=UserContext(user),
            )
            (message,) = [m for m in result["messages"] if isinstance(m, ToolMessage)]
            return message

        written = run("alice-1", "alice")
        assert written.status == "success", written.content
        again = run("alice-2", "alice")
        assert again.status == "success", again.content
        assert "ship on friday" in str(again.content)
        other = run("bob-1", "bob")
        assert other.status == "error"
        assert "/notes/plan.md does not exist" in str(other.content)
        item = store.get(("fs", "alice", "notes", "%entries"), "plan.md")
        assert item is not None
        assert item.value["content"] == "ship on friday\n"
        assert store.get(("fs", "bob", "notes", "%entries"), "plan.md") is None
