"""Coming from deepagents: its spellings mean the same here, or fail naming ours."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import SystemMessage

import langchain_fstools
import langchain_fstools.backends
from langchain_fstools import FilesystemMiddleware, FileToolkit, StateBackend
from langchain_fstools.core.renamed import DEEPAGENTS_NAMES
from langchain_fstools.testing import ScriptedChatModel


@pytest.mark.parametrize(
    ("name", "ours"),
    [
        ("FilesystemBackend", "LocalBackend(root_dir), which always keeps paths inside"),
        ("LocalShellBackend", "LocalBackend(root_dir, execute=True)"),
        ("BackendProtocol", "subclass Backend"),
    ],
)
@pytest.mark.parametrize("package", ["langchain_fstools", "langchain_fstools.backends"])
def test_a_deepagents_backend_name_is_refused_naming_ours(
    package: str, name: str, ours: str
) -> None:
    with pytest.raises(ImportError, match=f"no {name}: it is deepagents' name"):
        exec(f"from {package} import {name}", {})  # noqa: S102
    with pytest.raises(ImportError) as raised:
        getattr(importlib.import_module(package), name)
    assert ours in str(raised.value)


def test_filesystem_backend_says_why_virtual_mode_is_not_needed() -> None:
    assert DEEPAGENTS_NAMES["FilesystemBackend"].endswith("so it needs no virtual_mode")


def test_other_missing_names_stay_attribute_errors() -> None:
    assert not hasattr(langchain_fstools, "NoSuchName")
    assert not hasattr(langchain_fstools.backends, "NoSuchName")


def test_tool_token_limit_before_evict_is_the_eviction_threshold() -> None:
    middleware = FilesystemMiddleware(backend=StateBackend(), tool_token_limit_before_evict=500)
    assert middleware.eviction is not None
    assert middleware.eviction.threshold_tokens == 500
    off = FilesystemMiddleware(backend=StateBackend(), tool_token_limit_before_evict=None)
    assert off.eviction is None


def test_tool_token_limit_before_evict_and_eviction_together_are_refused() -> None:
    with pytest.raises(ValueError, match="give eviction or tool_token_limit_before_evict"):
        FilesystemMiddleware(
            backend=StateBackend(), eviction=False, tool_token_limit_before_evict=500
        )


@pytest.mark.parametrize(
    "build",
    [
        lambda **kw: FileToolkit(StateBackend(), **kw).get_tools(),
        lambda **kw: FilesystemMiddleware(backend=StateBackend(), **kw).tools,
    ],
)
def test_custom_tool_descriptions_replace_ours(build: Any) -> None:
    tools = {t.name: t for t in build(custom_tool_descriptions={"ls": "List a folder."})}
    assert tools["ls"].description == "List a folder."
    assert tools["read_file"].description != "List a folder."


def test_a_custom_description_of_a_tool_not_given_is_refused() -> None:
    with pytest.raises(ValueError, match=r"custom_tool_descriptions names \['delete'\]"):
        FileToolkit(StateBackend(), custom_tool_descriptions={"delete": "Delete."})


def test_system_prompt_is_added_to_the_agents_as_in_deepagents() -> None:
    model = ScriptedChatModel(turns=["done"])
    middleware = FilesystemMiddleware(backend=StateBackend(), system_prompt="Files: be careful.")
    agent = create_agent(model, system_prompt="You help.", middleware=[middleware])
    agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    system = model.calls[0][0]
    assert isinstance(system, SystemMessage)
    assert system.text.startswith("You help.")
    assert system.text.endswith("Files: be careful.")
