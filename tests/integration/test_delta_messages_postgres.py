"""`FilesystemAgentState` on PostgresSaver: a thread read back by a new connection and
graph, forked from an earlier checkpoint, and summarised, as with the default channel."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.postgres import PostgresSaver

from langchain_fstools import FilesystemAgentState, FilesystemMiddleware, StateBackend
from langchain_fstools.testing import ScriptedChatModel, tool_call
from tests.e2e.test_delta_messages import WORK

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]


def agent_over(script: list[AIMessage], saver: PostgresSaver, *middleware: Any) -> Any:
    return create_agent(
        ScriptedChatModel(turns=script),
        middleware=[*middleware, FilesystemMiddleware(backend=StateBackend())],
        checkpointer=saver,
        state_schema=FilesystemAgentState,
    )


def calls_of(messages: list[Any]) -> list[str | None]:
    return [m.tool_call_id if isinstance(m, ToolMessage) else None for m in messages]


def test_a_thread_reads_back_forks_and_continues(postgres_url: str) -> None:
    config: Any = {"configurable": {"thread_id": "delta-1"}}
    with PostgresSaver.from_conn_string(postgres_url) as saver:
        saver.setup()
        final = agent_over(WORK, saver).invoke({"messages": [("user", "go")]}, config)
        with saver.conn.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) AS n FROM checkpoint_blobs"
                " WHERE thread_id = %s AND channel = 'messages'",
                ("delta-1",),
            )
            assert cursor.fetchone() == {"n": 0}  # no checkpoint holds a copy of the list
    with PostgresSaver.from_conn_string(postgres_url) as saver:
        agent = agent_over([tool_call("ls", call_id="l1", path="/"), AIMessage("forked")], saver)
        assert agent.get_state(config).values["messages"] == final["messages"]
        past = next(
            s
            for s in agent.get_state_history(config)
            if calls_of(s.values["messages"]) == [None, None, "w1"]
        )
        forked = agent.invoke(None, past.config)
        assert forked["messages"][:3] == past.values["messages"]
        assert calls_of(forked["messages"]) == [None, None, "w1", None, "l1", None]
        assert forked["files"]["/a.txt"]["content"] == "one\ntwo\n"  # no edit on this branch
    with PostgresSaver.from_conn_string(postgres_url) as saver:
        assert agent_over([], saver).get_state(config).values["messages"] == forked["messages"]


def test_summarisation_replaces_the_history(postgres_url: str) -> None:
    config: Any = {"configurable": {"thread_id": "delta-2"}}
    summary = AIMessage("Summary: /a.txt was written and read.")
    summarising = SummarizationMiddleware(
        ScriptedChatModel(turns=[summary] * 4), trigger=("messages", 5), keep=("messages", 1)
    )
    with PostgresSaver.from_conn_string(postgres_url) as saver:
        saver.setup()
        state = agent_over(WORK, saver, summarising).invoke({"messages": [("user", "go")]}, config)
    assert "w1" not in calls_of(state["messages"])
    assert any("Summary: /a.txt" in str(m.content) for m in state["messages"])
    with PostgresSaver.from_conn_string(postgres_url) as saver:
        later = agent_over([AIMessage("still here")], saver).invoke(
            {"messages": [("user", "and now?")]}, config
        )
    assert later["messages"][: len(state["messages"])] == state["messages"]
    assert [m.content for m in later["messages"][-2:]] == ["and now?", "still here"]
