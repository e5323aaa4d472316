"""What the model sees — names, descriptions, JSON schemas — changes only on purpose.

Regenerate after a deliberate change with `FSTOOLS_UPDATE_SNAPSHOTS=1 pytest`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from deepagents.backends import LocalShellBackend
from deepagents.middleware.filesystem import FilesystemMiddleware as DeepFilesystemMiddleware
from langchain.tools import ToolRuntime
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.utils.function_calling import convert_to_openai_tool

from langchain_fstools import FilesystemMiddleware, FileToolkit, LocalBackend, StateBackend
from langchain_fstools.backends.protocol import Backend
from langchain_fstools.backends.state import file_record
from langchain_fstools.core import tokens
from langchain_fstools.middleware.filesystem import SYSTEM_PROMPT
from langchain_fstools.tools.toolkit import TOOL_CLASSES

SNAPSHOTS = Path(__file__).parent / "snapshots"


def _backend_for(name: str, tmp_path: Path) -> Backend:
    """A state backend, or local disk for tools that run commands."""
    runs_commands = TOOL_CLASSES[name].requires_execute  # type: ignore[attr-defined]
    return LocalBackend(tmp_path, execute=True) if runs_commands else StateBackend()


def _portable(text: str, workspace: Path) -> str:
    """`text` with the workspace's host path (execute names it) as `/path/to/workspace`."""
    return text.replace(os.path.realpath(workspace), "/path/to/workspace")


def _matches_snapshot(name: str, text: str) -> bool:
    snapshot = SNAPSHOTS / name
    if os.environ.get("FSTOOLS_UPDATE_SNAPSHOTS") == "1":
        snapshot.write_text(text, encoding="utf-8")
    return snapshot.read_text(encoding="utf-8") == text


@pytest.mark.parametrize("name", sorted(TOOL_CLASSES))
def test_tool_schema_snapshot(name: str, tmp_path: Path) -> None:
    """Every tool as the model sees it in the full toolkit with default settings.

    With language servers (`diagnostics=True`), as where the `lsp` extra is installed.
    """
    tools = FileToolkit(LocalBackend(tmp_path, execute=True), diagnostics=True).get_tools()
    (tool,) = [tool for tool in tools if tool.name == name]
    rendered = json.dumps(convert_to_openai_tool(tool), indent=2, ensure_ascii=False) + "\n"
    assert _matches_snapshot(f"{name}.json", _portable(rendered, tmp_path))


_SETTINGS = {
    "read_limit": 500,
    "read_token_budget": 8000,
    "read_max_bytes": 0,
    "ls_limit": 50,
    "glob_limit": 20,
    "grep_head_limit": 30,
    "execute_timeout": 30,
    "execute_max_timeout": 600,
    "execute_output_limit": 20_000,
    "pdf_pages_without_range": 4,
    "pdf_pages_per_call": 8,
}


def test_descriptions_follow_the_settings(tmp_path: Path) -> None:
    tools = FileToolkit(LocalBackend(tmp_path, execute=True), **_SETTINGS).get_tools()
    text = "\n\n".join(f"## {tool.name}\n{tool.description}" for tool in tools) + "\n"
    assert _matches_snapshot("descriptions_with_settings.md", _portable(text, tmp_path))
    described = {tool.name: " ".join(tool.description.split()) for tool in tools}
    schemas = {tool.name: tool.tool_call_schema.model_json_schema() for tool in tools}
    arguments = {name: schema["properties"] for name, schema in schemas.items()}  # type: ignore[union-attr]
    assert "Default: 500," in arguments["read_file"]["limit"]["description"]
    assert "8,000 tokens" in arguments["read_file"]["limit"]["description"]
    assert "Files over" not in described["read_file"]  # read_max_bytes=0: no cap
    assert "at most 50 entries" in described["ls"]
    assert "at most 20;" in described["glob"]
    assert "Default: 30." in arguments["grep"]["head_limit"]["description"]
    assert "Default: 30; at most 600." in arguments["execute"]["timeout"]["description"]
    assert "over 20,000 bytes" in described["execute"]
    for description in described.values():
        assert "2,000" not in description
        assert "1000" not in description
        assert not re.search(r"\{[a-z_]+[:}]", description)  # every field was filled


@pytest.mark.parametrize(
    "subset", [["read_file", "grep"], ["ls", "glob", "read_file"], ["read_file", "edit_file"]]
)
def test_descriptions_name_only_the_tools_present(subset: list[str]) -> None:
    middleware = FilesystemMiddleware(backend=StateBackend(), tools=subset, eviction=False)
    absent = set(TOOL_CLASSES) - set(subset)
    texts = [tool.description for tool in middleware.tools]
    for text in texts:
        named = {name for name in absent if re.search(rf"(?<![\w`-]){name}(?![\w`-])", text)}
        assert named == set(), text
    rendered = "\n\n".join(texts) + "\n"
    assert _matches_snapshot(f"descriptions_{'_'.join(subset)}.md", rendered)


def test_the_prompt_says_only_what_no_description_can(tmp_path: Path) -> None:
    """With the grammars installed nothing is added; the note on them names no tool."""
    assert FilesystemMiddleware(backend=LocalBackend(tmp_path, execute=True)).system_prompt == ""
    assert "langchain-fstools[syntax]" in SYSTEM_PROMPT
    assert not {name for name in TOOL_CLASSES if re.search(rf"\b{name}\b", SYSTEM_PROMPT)}
    assert "-[" not in SYSTEM_PROMPT


def test_the_essential_rules_stay_in_the_descriptions(tmp_path: Path) -> None:
    """What the prompt used to say is where the model meets it: the tool it is about."""
    tools = FilesystemMiddleware(backend=LocalBackend(tmp_path, execute=True)).tools
    described = {tool.name: " ".join(tool.description.split()) for tool in tools}
    for name in ("read_file", "edit_file"):
        assert "files not read, or changed since, are refused" in described[name], name
    assert "unread or changed notebooks are refused" in described["notebook_edit"]
    assert "Files changed since you read them are refused" in described["apply_patch"]
    assert "Overwriting needs a read of the whole file first" in described["write_file"]
    assert "Prefer edit_file to change part of a file" in described["write_file"]
    assert "For many changes at once use apply_patch" in described["edit_file"]
    for marker in (
        "*** Begin Patch",
        "*** Update File:",
        "*** Add File:",
        "*** Delete File:",
        "*** Move to:",
        "*** End of File",
        "@@",
        "*** End Patch",
    ):
        assert marker in described["apply_patch"], marker
    assert "not cat/head/tail, grep/rg, find, sed/awk/echo >" in described["execute"]
    assert "On timeout all is killed" in described["execute"]
    assert "over 100,000 bytes is cut" in described["execute"]
    assert "not grep or rg in execute" in described["grep"]


@pytest.mark.parametrize("name", sorted(TOOL_CLASSES))
def test_runtime_is_hidden_from_the_model(name: str, tmp_path: Path) -> None:
    toolkit = FileToolkit(
        _backend_for(name, tmp_path), tools=sorted({name, "read_file"}), diagnostics=True
    )
    (tool,) = [tool for tool in toolkit.get_tools() if tool.name == name]
    properties = convert_to_openai_tool(tool)["function"]["parameters"]["properties"]
    assert "runtime" not in properties


def test_metadata_tells_reads_from_mutations() -> None:
    tools = {t.name: t for t in FileToolkit(StateBackend()).get_tools()}
    for name in ("ls", "read_file"):
        assert tools[name].metadata == {
            "fstools_family": "langchain_fstools",
            "fstools_backend": "state",
            "fstools_access": "read",
            "read_only": True,
            "concurrency_safe": True,
            "bounded_output": True,
        }
    for name in ("write_file", "edit_file", "apply_patch"):
        assert tools[name].metadata is not None
        assert tools[name].metadata["read_only"] is False
        assert tools[name].metadata["fstools_access"] == "mutate"
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


def test_a_count_of_one_is_singular_in_the_descriptions(tmp_path: Path) -> None:
    tools = FileToolkit(LocalBackend(tmp_path), ls_limit=1, read_limit=1, glob_limit=1).get_tools()
    described = {tool.name: " ".join(tool.description.split()) for tool in tools}
    assert "at most 1 entry." in described["ls"]
    assert not re.search(r"\b1 (lines|entries|tokens|pages|bytes)\b", " ".join(described.values()))


# ----- token budgets of what the model reads at every call ------------------------------

SHARED_WITH_DEEPAGENTS = ("ls", "read_file", "write_file", "edit_file", "glob", "grep", "execute")
SCHEMA_BUDGETS = {
    "ls": 90,
    "read_file": 275,
    "write_file": 125,
    "edit_file": 210,
    "glob": 130,
    "grep": 410,
    "execute": 330,
    "process": 135,
    "apply_patch": 275,
    "notebook_edit": 250,
    "diagnostics": 95,
    "undo_edit": 110,
}
"""o200k_base tokens of each tool's schema as providers receive it (name, description,
parameters: `convert_to_openai_tool` JSON), with the default settings and language
servers: the per-call cost of a model call offered every tool stays at deepagents'
(2,365 against 2,394), and the eight offered before a notebook, a source file, a
background process or a change cost about 0.75x of it."""


def schema_tokens(tools: list[Any], workspace: Path | None = None) -> dict[str, int]:
    """Tokens of each tool's schema; the `workspace`'s path (execute names it) as a
    typical one (`/path/to/workspace`), not a test's long temporary path."""
    count = tokens.default_counter("o200k_base")
    assert count.name in {"bpe-openai o200k_base", "tiktoken o200k_base"}  # a real tokenizer
    schemas = {tool.name: json.dumps(convert_to_openai_tool(tool)) for tool in tools}
    if workspace is not None:
        schemas = {name: _portable(text, workspace) for name, text in schemas.items()}
    return {name: count(text) for name, text in schemas.items()}


def _every_tool(tmp_path: Path) -> FilesystemMiddleware:
    """The middleware with every tool it can offer: commands, history, language servers."""
    backend = LocalBackend(tmp_path, execute=True)
    return FilesystemMiddleware(backend=backend, history=True, diagnostics=True)


def test_every_tool_schema_fits_its_token_budget(tmp_path: Path) -> None:
    middleware = _every_tool(tmp_path)
    costs = schema_tokens(middleware.tools, tmp_path)
    assert set(costs) == set(SCHEMA_BUDGETS)
    over = {name: cost for name, cost in costs.items() if cost > SCHEMA_BUDGETS[name]}
    assert not over, f"over budget: {over} (budgets {SCHEMA_BUDGETS})"


def test_the_shared_tools_cost_no_more_than_deepagents(tmp_path: Path) -> None:
    """deepagents' tools measured here, in the same run: its version may change."""
    ours = schema_tokens(FileToolkit(LocalBackend(tmp_path, execute=True)).get_tools(), tmp_path)
    deep = DeepFilesystemMiddleware(backend=LocalShellBackend(root_dir=tmp_path, virtual_mode=True))
    theirs = schema_tokens(deep.tools)
    assert set(SHARED_WITH_DEEPAGENTS) <= set(theirs)
    mine = sum(ours[name] for name in SHARED_WITH_DEEPAGENTS)
    their = sum(theirs[name] for name in SHARED_WITH_DEEPAGENTS)
    assert mine <= their, (mine, their)


def test_a_model_call_offered_every_tool_costs_no_more_than_deepagents(tmp_path: Path) -> None:
    """The fixed cost of a call: the schemas offered plus the prompt the middleware adds."""
    middleware = _every_tool(tmp_path)
    count = tokens.default_counter("o200k_base")
    ours = sum(schema_tokens(middleware.tools, tmp_path).values())
    ours += count(middleware.system_prompt or "")
    deep = DeepFilesystemMiddleware(backend=LocalShellBackend(root_dir=tmp_path, virtual_mode=True))
    theirs = sum(schema_tokens(deep.tools).values())
    assert ours <= theirs, (ours, theirs)
