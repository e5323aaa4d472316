"""Diagnostics are on by default (`diagnostics="auto"`) where they can work, else silently off.

The suite turns the default off in its environment (`LANGCHAIN_FSTOOLS_DIAGNOSTICS=off`,
`tests/conftest.py`); these tests take that away where they need the default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from langchain_core.messages import ToolMessage

from langchain_fstools import FilesystemMiddleware, FileToolkit, LocalBackend, StateBackend
from langchain_fstools.lsp import DIAGNOSTICS_ENV, Diagnostics
from tests.unit.lsp.starting import started

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture
def default_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment of a user who did not turn diagnostics off."""
    monkeypatch.delenv(DIAGNOSTICS_ENV, raising=False)


@pytest.fixture
def toolkits() -> Iterator[list[FileToolkit]]:
    """Toolkits whose servers are closed after the test."""
    made: list[FileToolkit] = []
    yield made
    for toolkit in made:
        if toolkit.context.diagnostics is not None:
            toolkit.context.diagnostics.close()


def call(tool: Any, **args: Any) -> ToolMessage:
    message = tool.invoke({"name": tool.name, "args": args, "id": "c1", "type": "tool_call"})
    assert isinstance(message, ToolMessage)
    return message


@pytest.mark.usefixtures("default_on")
def test_on_local_disk_the_default_servers_check_every_change(
    tmp_path: Path, toolkits: list[FileToolkit]
) -> None:
    toolkit = FileToolkit(LocalBackend(tmp_path))
    toolkits.append(toolkit)
    assert toolkit.context.diagnostics is not None
    assert started(toolkit.context.diagnostics, tmp_path)  # a start may outlast a check's wait
    tools = {tool.name: tool for tool in toolkit.get_tools()}
    written = call(tools["write_file"], file_path="/app.py", content="print(missing)\n")
    assert "/app.py:1:7: error F821 Undefined name `missing` (ruff)" in written.content
    assert written.artifact["diagnostics"]["counts"]["introduced"] >= 1


@pytest.mark.usefixtures("default_on")
def test_the_diagnostics_tool_comes_with_the_servers_the_default_finds(tmp_path: Path) -> None:
    middleware = FilesystemMiddleware(backend=LocalBackend(tmp_path))
    assert middleware.toolkit.context.diagnostics is not None
    assert "diagnostics" in {tool.name for tool in middleware.tools}
    toolkit = FileToolkit(LocalBackend(tmp_path))
    assert "diagnostics" in {tool.name for tool in toolkit.get_tools()}
    asked = FilesystemMiddleware(backend=LocalBackend(tmp_path), diagnostics=True)
    assert "diagnostics" in {tool.name for tool in asked.tools}


def test_without_servers_the_default_has_no_diagnostics_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No server program found: the default's `Diagnostics` would answer nothing."""
    monkeypatch.setenv(DIAGNOSTICS_ENV, "off")
    middleware = FilesystemMiddleware(backend=LocalBackend(tmp_path))
    assert "diagnostics" not in {tool.name for tool in middleware.tools}
    on_state = FilesystemMiddleware(backend=StateBackend(), diagnostics="auto")
    assert "diagnostics" not in {tool.name for tool in on_state.tools}


def test_the_environment_variable_turns_the_default_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DIAGNOSTICS_ENV, "off")
    toolkit = FileToolkit(LocalBackend(tmp_path))
    tools = {tool.name: tool for tool in toolkit.get_tools()}
    assert toolkit.context.diagnostics is None
    assert "diagnostics" not in tools
    written = call(tools["write_file"], file_path="/app.py", content="print(missing)\n")
    assert "diagnostics" not in written.artifact
    assert "F821" not in written.content


def test_an_explicit_setting_wins_over_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toolkits: list[FileToolkit]
) -> None:
    monkeypatch.setenv(DIAGNOSTICS_ENV, "off")
    toolkit = FileToolkit(LocalBackend(tmp_path), diagnostics=True)
    toolkits.append(toolkit)
    assert toolkit.context.diagnostics is not None


@pytest.mark.usefixtures("default_on")
def test_a_backend_without_local_files_is_silently_off_by_default() -> None:
    toolkit = FileToolkit(StateBackend())
    assert toolkit.context.diagnostics is None
    assert "diagnostics" not in {tool.name for tool in toolkit.get_tools()}


@pytest.mark.usefixtures("default_on")
def test_diagnostics_false_turns_them_off(tmp_path: Path) -> None:
    toolkit = FileToolkit(LocalBackend(tmp_path), diagnostics=False)
    assert toolkit.context.diagnostics is None
    middleware = FilesystemMiddleware(backend=LocalBackend(tmp_path), diagnostics=False)
    assert "diagnostics" not in {tool.name for tool in middleware.tools}


def test_the_diagnostics_tool_asked_by_name_needs_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DIAGNOSTICS_ENV, "off")
    with pytest.raises(ValueError, match=r"\['diagnostics'\] need language servers"):
        FileToolkit(LocalBackend(tmp_path), tools=["read_file", "diagnostics"])


def test_the_diagnostics_tool_asked_by_name_lists_a_file_s_diagnostics(
    tmp_path: Path, toolkits: list[FileToolkit]
) -> None:
    (tmp_path / "app.py").write_text("print(one)\n")
    servers = Diagnostics(servers={"ty": None}, timeout=10)
    toolkit = FileToolkit(LocalBackend(tmp_path), tools=["diagnostics"], diagnostics=servers)
    toolkits.append(toolkit)
    (tool,) = toolkit.get_tools()
    assert tool.metadata["read_only"] is True
    found = call(tool, path="/app.py")
    assert found.content == "/app.py:1:7: error F821 Undefined name `one` (ruff)"
