"""Bad configuration fails at construction, in one sentence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent

from langchain_fstools import (
    CompositeBackend,
    FilesystemMiddleware,
    FileToolkit,
    LocalBackend,
    StateBackend,
)
from langchain_fstools.middleware.filesystem import DEFAULT_NAME
from langchain_fstools.testing import ScriptedChatModel
from langchain_fstools.tools import ToolSettings


@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        ({"grep_head_limit": -1}, ValueError, "grep_head_limit must be 0 or more, not -1"),
        ({"execute_max_timeout": 0}, ValueError, "execute_max_timeout must be more than 0"),
        ({"read_limit": 0}, ValueError, "read_limit must be 1 or more"),
        ({"read_limit": "100"}, TypeError, "read_limit must be an int, not str"),
        ({"read_limit": True}, TypeError, "read_limit must be an int, not bool"),
        ({"search_timeout": -1.0}, ValueError, "search_timeout must be more than 0"),
        ({"execute_timeout": 100, "execute_max_timeout": 10}, ValueError, "must not exceed"),
        ({"image_limits": {"max_edge": 10}}, TypeError, "image_limits must be an ImageLimits"),
        ({"count_tokens": 3}, TypeError, "count_tokens must be a function"),
        ({"pdf_file_blocks": "yes"}, TypeError, "pdf_file_blocks must be True or False"),
    ],
)
def test_bad_settings_fail_at_construction(
    settings: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        ToolSettings(**settings)
    with pytest.raises(error, match=message):
        FileToolkit(StateBackend(), **settings)
    with pytest.raises(error, match=message):
        FilesystemMiddleware(backend=StateBackend(), **settings)


def test_zero_means_no_limit_where_documented() -> None:
    settings = ToolSettings(grep_head_limit=0, read_max_bytes=0, diff_lines=0)
    assert settings.grep_head_limit == 0


def test_unknown_setting_is_named() -> None:
    with pytest.raises(ValueError, match=r"unknown settings \['read_limt'\]"):
        FileToolkit(StateBackend(), read_limt=5)


@pytest.mark.parametrize("build", [FileToolkit, lambda b: FilesystemMiddleware(backend=b)])
def test_the_backend_class_instead_of_an_instance_is_refused(build: Any) -> None:
    with pytest.raises(TypeError, match=r"not the class StateBackend.*StateBackend\(\)|instance"):
        build(StateBackend)


def test_composite_refuses_a_backend_class(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="not the class StateBackend"):
        CompositeBackend(LocalBackend(tmp_path), {"/m/": StateBackend})  # type: ignore[dict-item]


@pytest.mark.parametrize("tool", ["edit_file", "write_file", "notebook_edit"])
def test_a_change_tool_without_read_file_is_refused(tool: str) -> None:
    with pytest.raises(ValueError, match=rf"\['{tool}'\] change only files .* add 'read_file'"):
        FileToolkit(StateBackend(), tools=[tool])
    assert len(FileToolkit(StateBackend(), tools=[tool, "read_file"]).get_tools()) == 2


def test_tools_as_a_string_is_refused() -> None:
    with pytest.raises(TypeError, match=r"list of tool names, such as \['ls'\]"):
        FileToolkit(StateBackend(), tools="ls")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"name": ""}, ValueError),
        ({"eviction": "yes"}, TypeError),
        ({"history_record_bytes": -1}, ValueError),
    ],
)
def test_middleware_arguments_are_checked(kwargs: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        FilesystemMiddleware(backend=StateBackend(), **kwargs)


# ----- name= ---------------------------------------------------------------------------------


def test_default_name_matches_deepagents_so_create_deep_agent_replaces_its_own() -> None:
    assert FilesystemMiddleware(backend=StateBackend()).name == DEFAULT_NAME
    assert DEFAULT_NAME == "FilesystemMiddleware"


def test_two_named_instances_fit_in_one_agent(tmp_path: Path) -> None:
    local = FilesystemMiddleware(backend=LocalBackend(tmp_path), tools=["ls", "read_file"])
    with pytest.raises(AssertionError, match="duplicate"):
        create_agent(ScriptedChatModel(turns=[]), middleware=[local, local])
    other = FilesystemMiddleware(backend=StateBackend(), tools=["glob"], name="StateFiles")
    agent = create_agent(ScriptedChatModel(turns=[]), middleware=[local, other])
    assert {"ls", "read_file", "glob"} <= set(agent.get_graph().nodes["tools"].data.tools_by_name)
