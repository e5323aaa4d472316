"""A task call's branch written beside its checkpoint: found again by the same call only,
nothing without a checkpointer, and a failing checkpointer is logged, not raised."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from langchain_fstools import FilesystemMiddleware, StateBackend
from langchain_fstools.middleware import checkpointed_branches as checkpointed

SNAPSHOT: dict[str, Any] = {"max_files": 1, "max_bytes": 10, "touched": {}}


def task_config(saver: Any) -> dict[str, Any]:
    """A task's config as LangGraph gives it: its namespace and the parent's checkpoint."""
    checkpoint = empty_checkpoint()
    parent = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    saver.put(parent, checkpoint, {}, {})
    return {
        "configurable": {
            "thread_id": "t",
            "checkpoint_ns": "tools:1234",
            "checkpoint_map": {"": checkpoint["id"]},
            "__pregel_checkpointer": saver,
            "__pregel_resuming": True,
        }
    }


def test_a_kept_branch_is_found_by_its_call_only() -> None:
    config = task_config(InMemorySaver())
    assert checkpointed.kept(config, "t-a") is None
    checkpointed.keep(config, "t-a", SNAPSHOT)
    assert checkpointed.kept(config, "t-a") == SNAPSHOT
    assert checkpointed.kept(config, "t-b") is None


def test_a_first_run_does_not_look_for_one() -> None:
    config = task_config(InMemorySaver())
    checkpointed.keep(config, "t-a", SNAPSHOT)
    del config["configurable"]["__pregel_resuming"]
    assert checkpointed.kept(config, "t-a") is None


def test_without_a_checkpointer_nothing_is_kept() -> None:
    config = task_config(InMemorySaver())
    del config["configurable"]["__pregel_checkpointer"]
    checkpointed.keep(config, "t-a", SNAPSHOT)
    assert checkpointed.kept(config, "t-a") is None
    assert checkpointed.kept({}, "t-a") is None


class _Failing(InMemorySaver):
    def put_writes(self, *args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")


def test_a_failing_checkpointer_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    config = task_config(_Failing())
    with caplog.at_level(logging.WARNING):
        checkpointed.keep(config, "t-a", SNAPSHOT)
    assert "could not be written to the checkpointer" in caplog.text


def test_branches_add_the_before_model_settling_only() -> None:
    # the merge runs before the next model call; no after-model node without a gate
    files = FilesystemMiddleware(backend=StateBackend(), branches=True)
    plain = FilesystemMiddleware(backend=StateBackend())
    assert type(files).before_model is not type(plain).before_model
    assert type(files).after_model is type(plain).after_model
