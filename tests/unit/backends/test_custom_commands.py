"""A backend of one's own runs commands: its method is the one called, or its class is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_fstools import FileToolkit, LocalBackend, StateBackend
from langchain_fstools.core.results import ExecutionResult


def test_a_local_backend_subclass_overriding_only_execute_is_refused() -> None:
    with pytest.raises(
        TypeError, match="Mine overrides execute, which the execute tool would"
    ) as e:

        class Mine(LocalBackend):
            def execute(
                self, command: str, *, timeout: float, output_limit: int
            ) -> ExecutionResult:
                return ExecutionResult(output="mine", exit_code=0)

    assert "override execute_changes too (its result with changes=None" in str(e.value)


def test_a_backend_whose_execute_changes_is_the_default_may_override_execute() -> None:
    class Runs(StateBackend):
        supports_execute = True

        def execute(self, command: str, *, timeout: float, output_limit: int) -> ExecutionResult:
            return ExecutionResult(output=f"ran {command}", exit_code=0)

    assert Runs().execute_changes("ls", timeout=1, output_limit=100).output == "ran ls"


def test_a_local_backend_subclass_overriding_execute_changes_is_called(tmp_path: Path) -> None:
    calls: list[str] = []

    class Mine(LocalBackend):
        def execute_changes(
            self, command: str, *, timeout: float, output_limit: int, **options: object
        ) -> ExecutionResult:
            calls.append(command)
            return ExecutionResult(output="from my runner\n", exit_code=0)

    backend = Mine(tmp_path, execute=True, sandbox=None)
    tools = {tool.name: tool for tool in FileToolkit(backend).get_tools()}
    assert tools["execute"].invoke({"command": "echo hi"}) == "from my runner\nExit code: 0"
    assert calls == ["echo hi"]
