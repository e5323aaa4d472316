"""What the model sees — names, descriptions, JSON schemas — changes only on purpose.

Regenerate after a deliberate change with `FSTOOLS_UPDATE_SNAPSHOTS=1 pytest`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from langchain.tools import ToolRuntime
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.utils.function_calling import convert_to_openai_tool

from langchain_fstools import FileToolkit, LocalBackend, StateBackend
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.backends.state import file_record
from langchain_fstools.tools.toolkit import TOOL_CLASSES

SNAPSHOTS = Path(__file__).parent / "snapshots"


def _backend_for(name: str, tmp_path: Path) -> Backend:
    """A state backend, or local disk for tools that run commands."""
    return LocalBackend(tmp_path, execute=True) if name == "execute" else StateBackend()


@pytest.mark.parametrize("name", sorted(TOOL_CLASSES))
def test_tool_schema_snapshot(name: str, tmp_path: Path) -> None:
    tool = _only(name, tmp_path)
    seen = convert_to_openai_tool(tool)
    snapshot = SNAPSHOTS / f"{name}.json"
    rendered = json.dumps(seen, indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("FSTOOLS_UPDATE_SNAPSHOTS") == "1":
        snapshot.write_text(rendered, encoding="utf-8")
    assert snapshot.read_text(encoding="utf-8") == rendered


@pytest.mark.parametrize("name", sorted(TOOL_CLASSES))
def test_runtime_is_hidden_from_the_model(name: str, tmp_path: Path) -> None:
    tool = _only(name, tmp_path)
    properties = convert_to_openai_tool(tool)["function"]["parameters"]["properties"]
    assert "runtime" not in properties


def test_metadata_tells_reads_from_mutations() -> None:
    tools = {t.name: t for t in FileToolkit(StateBackend()).get_tools()}
    for name in ("ls", "read_file"):
        assert tools[name].metadata == {
            "fstools_family": "langchain_fstools",
            "fstools_backend": "state",
            "read_only": True,
            "concurrency_safe": True,
        }
    for name in ("write_file", "edit_file", "apply_patch"):
        assert tools[name].metadata is not None
        assert tools[name].metadata["read_only"] is False
        assert "mutating" in (tools[name].tags or [])


def test_unknown_tool_or_setting_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown tools"):
        FileToolkit(StateBackend(), tools=["rm"])
    with pytest.raises(ValueError, match="unknown setting"):
        FileToolkit(StateBackend(), read_limt=5)


def test_the_aliased_schema_is_built_once_per_tool() -> None:
    """Models bind tools on every turn; grep's aliased schema must not be rebuilt each time."""
    (grep,) = FileToolkit(StateBackend(), tools=["grep"]).get_tools()
    first = grep.tool_call_schema
    assert grep.tool_call_schema is first
    assert "-A" in first.model_json_schema()["properties"]  # type: ignore[union-attr]


class _StartedTools(BaseCallbackHandler):
    """Records the inputs each tool run reports to callbacks (what traces show)."""

    def __init__(self) -> None:
        self.inputs: list[dict[str, Any] | None] = []

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        del serialized, input_str, kwargs
        self.inputs.append(inputs)


def test_traced_inputs_are_the_model_arguments_without_the_runtime() -> None:
    tools = {t.name: t for t in FileToolkit(StateBackend()).get_tools()}
    runtime = ToolRuntime(
        state={"messages": [], "files": {"/a.txt": file_record(b"one\ntwo\n")}},
        context=None,
        config={},
        stream_writer=lambda _: None,
        tool_call_id="call-1",
        store=None,
    )
    started = _StartedTools()
    args = {"pattern": "two", "path": "/", "-n": True, "runtime": runtime}
    call = {"type": "tool_call", "name": "grep", "args": args, "id": "call-1"}
    message = tools["grep"].invoke(call, config={"callbacks": [started]})
    assert started.inputs == [{"pattern": "two", "path": "/", "-n": True}]
    assert message.status == "success"
    assert "/a.txt" in message.content


def _only(name: str, tmp_path: Path) -> Any:
    """The tool `name` (with read_file alongside, which edits need)."""
    toolkit = FileToolkit(_backend_for(name, tmp_path), tools=sorted({name, "read_file"}))
    return next(tool for tool in toolkit.get_tools() if tool.name == name)
