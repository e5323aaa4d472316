"""Getting started walks through the six tasks people do on their first day, each as an
example that runs as written: tests/integration/test_readme.py runs every Python block of
the site, and tests/integration/test_mcp_desktop_config.py starts the MCP entry as a
desktop client would. This test keeps the six there, in order, each with its example."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```(python|json)\n(.*?)^```$", re.DOTALL | re.MULTILINE)

# Each task's title, the language of its one example, and what the example must use.
TASKS = [
    (
        "Files only in graph state",
        "python",
        ["StateBackend()", "StateBackend.seed(", "file_bytes("],
    ),
    (
        "A folder on disk and a store in one workspace",
        "python",
        ["CompositeBackend(LocalBackend(", "StoreBackend(", '"/memories/"'],
    ),
    ("Approve or reject a change", "python", ['"approve"', '"reject"', "Command(resume="]),
    ("Run a command in the sandbox", "python", ["execute=True", 'tool_call("execute"']),
    (
        "Read back an evicted result",
        "python",
        ["LargeResultEviction(", 'tool_call("read_file", file_path="/large_tool_results/'],
    ),
    ("The tools in a desktop MCP client", "json", ['"mcpServers"', "langchain-fstools-mcp"]),
]


def first_tasks() -> list[tuple[str, str]]:
    """(title, text) of each task in getting-started's "Six first tasks" section."""
    page = (ROOT / "docs" / "getting-started.md").read_text()
    section = page.split("\n## Six first tasks\n", 1)[1].split("\n## ", 1)[0]
    parts = re.split(r"^### \d\. (.+)$", section, flags=re.MULTILINE)[1:]
    return list(zip(parts[::2], parts[1::2], strict=True))


def test_getting_started_has_the_six_first_tasks_in_order() -> None:
    assert [title for title, _ in first_tasks()] == [title for title, _, _ in TASKS]
    page = (ROOT / "docs" / "getting-started.md").read_text()
    numbers = re.findall(r"^### (\d)\. ", page, re.MULTILINE)
    assert numbers == ["1", "2", "3", "4", "5", "6"]


def test_each_first_task_has_one_example_that_does_it() -> None:
    for (title, text), (_, language, uses) in zip(first_tasks(), TASKS, strict=True):
        (block,) = BLOCK.findall(text)
        assert block[0] == language, title
        for needed in uses:
            assert needed in block[1], f"{title}: {needed}"
        if language == "json":
            json.loads(block[1])
