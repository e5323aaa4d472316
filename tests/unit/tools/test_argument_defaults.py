"""Every argument whose default the settings decide says that default, as configured."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_fstools import FileToolkit, LocalBackend

if TYPE_CHECKING:
    from pathlib import Path


def properties(root: Path, **settings: Any) -> dict[str, dict[str, Any]]:
    tools = FileToolkit(LocalBackend(root, execute=True), **settings).get_tools()
    return {
        f"{tool.name}.{name}": spec
        for tool in tools
        for name, spec in tool.tool_call_schema.model_json_schema()["properties"].items()
    }


def test_defaults_follow_the_settings(tmp_path: Path) -> None:
    configured = properties(
        tmp_path, read_limit=500, grep_head_limit=40, execute_timeout=30, execute_max_timeout=90
    )
    assert configured["read_file.limit"]["description"].endswith(
        "Default: 500, fewer past 25,000 tokens."
    )
    assert configured["grep.head_limit"]["description"].endswith("Default: 40.")
    assert configured["execute.timeout"]["description"].endswith("Default: 30; at most 90.")


def test_no_argument_leaves_its_default_to_the_imagination(tmp_path: Path) -> None:
    for name, spec in properties(tmp_path).items():
        description = spec.get("description", "")
        assert "as described" not in description, name
        assert description, name
