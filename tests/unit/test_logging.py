"""Loggers: one per module, named after it, with debug lines where decisions are made."""

from __future__ import annotations

import ast
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.tools import tool

from langchain_fstools import FilesystemMiddleware, FileToolkit, LocalBackend, StateBackend
from langchain_fstools.testing import ScriptedChatModel, tool_call

SRC = Path(__file__).resolve().parents[2] / "src" / "langchain_fstools"
REQUEST = {"messages": [{"role": "user", "content": "go"}]}


def test_every_logger_is_named_after_its_module() -> None:
    named = [
        (module.name, ast.unparse(node.args[0]) if node.args else "")
        for module in SRC.rglob("*.py")
        for node in ast.walk(ast.parse(module.read_text()))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "getLogger"
    ]
    assert named, "no loggers found"
    assert {arg for _, arg in named} == {"__name__"}, named


def test_search_engine_choice_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    caplog.set_level(logging.DEBUG, logger="langchain_fstools")
    grep = {t.name: t for t in FileToolkit(LocalBackend(tmp_path)).get_tools()}["grep"]
    grep.invoke({"pattern": "x"})
    python = {t.name: t for t in FileToolkit(LocalBackend(tmp_path, use_ripgrep=False)).get_tools()}
    python["grep"].invoke({"pattern": "x"})
    lines = [(r.name, r.getMessage()) for r in caplog.records]
    assert ("langchain_fstools.tools.searching", "search of /: native engine") in lines
    assert ("langchain_fstools.tools.searching", "search of /: python engine") in lines
    assert any(
        name == "langchain_fstools.backends.local.backend"
        and message.startswith("LocalBackend searches with ripgrep")
        for name, message in lines
    )


@tool
def dump() -> str:
    """A large result."""
    return "line\n" * 40_000


def test_evictions_and_permission_decisions_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="langchain_fstools")
    model = ScriptedChatModel(
        turns=[
            tool_call("dump", call_id="d"),
            tool_call("write_file", call_id="w", file_path="/a.txt", content="x\n"),
            "Done.",
        ]
    )
    middleware = FilesystemMiddleware(backend=StateBackend(), mode="plan")
    create_agent(model, tools=[dump], middleware=[middleware]).invoke(REQUEST)
    lines = {(r.name, r.getMessage()) for r in caplog.records}
    assert any(
        name == "langchain_fstools.tools.eviction"
        and message.startswith("evicted the dump result of d (")
        and message.endswith(" to /large_tool_results/d")
        for name, message in lines
    )
    assert any(
        name == "langchain_fstools.permissions.gate"
        and message.startswith("permission: write_file write /a.txt: deny")
        for name, message in lines
    )


def _logged_by_a_failure(configure: str) -> str:
    """The stderr of a process where an object store request fails (`configure` first)."""
    code = (
        f"{configure}\n"
        "from langchain_fstools.backends.objectstore.failures import unavailable\n"
        "unavailable(ConnectionRefusedError('connection refused'), 'GET a.txt')\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stderr


def test_nothing_reaches_stderr_unless_the_application_configures_logging() -> None:
    assert _logged_by_a_failure("") == ""
    shown = _logged_by_a_failure("import logging; logging.basicConfig()")
    assert shown.startswith("WARNING:langchain_fstools.backends.objectstore.failures:object store")
