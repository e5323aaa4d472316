"""Tokens a fixed session costs: our tools vs deepagents' on the same repository.

    python bench/economy.py [--show]

The repository is a copy of the installed `langchain_core` package's source (about 190
Python files). One scripted session runs through `create_agent` twice, once with our
`FilesystemMiddleware(backend=LocalBackend(copy, execute=True))` and once with
deepagents' `FilesystemMiddleware(backend=LocalShellBackend(copy, virtual_mode=True))`,
each on its own fresh copy: ls, glob, grep in each output mode, reads of a small, a
medium and a large window, a re-read, an edit, a patch (deepagents has no apply_patch:
the same three changes as three edit_file calls), a new file and a command. Both get
the same arguments (deepagents' `offset` is 0-based, so it gets ours minus one).

Counted with o200k_base (through `default_counter`): the text of every tool result, and
at every model call the tool schemas the model is bound with (the JSON
`convert_to_openai_tool` makes, as providers receive it) plus the system prompt text
the middleware adds. Shared tools are the seven both have: ls, read_file, write_file,
edit_file, glob, grep, execute.

Every call must succeed for both, and the script checks that each result holds what the
step needs (the paths, line numbers and counts), so a cheaper result is never a result
with something missing. Targets (issue 28): results at most 0.5x deepagents', schemas of
the shared tools at most 1.0x. `--show` prints every result.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import sysconfig
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deepagents.backends import LocalShellBackend
from deepagents.middleware.filesystem import FilesystemMiddleware as DeepFilesystemMiddleware
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

from langchain_fstools import FilesystemMiddleware, LocalBackend
from langchain_fstools.core.tokens import default_counter
from langchain_fstools.testing import ScriptedChatModel

SHARED = ("ls", "read_file", "write_file", "edit_file", "glob", "grep", "execute")
COUNT = default_counter("o200k_base")

PATCH = """*** Begin Patch
*** Update File: /messages/human.py
@@ class HumanMessage(BaseMessage):
-    \"\"\"Message from the user.
+    \"\"\"Message from the person using the app.
*** Update File: /utils/strings.py
@@ def comma_list(items: Iterable[Any]) -> str:
-    \"\"\"Convert an iterable to a comma-separated string.
+    \"\"\"Join an iterable into a comma-separated string.
@@ def sanitize_for_postgres(text: str, replacement: str = "") -> str:
-    r\"\"\"Sanitize text by removing NUL bytes that are incompatible with PostgreSQL.
+    r\"\"\"Remove the NUL bytes PostgreSQL refuses from text.
*** End Patch"""
"""Three changes in two files: one apply_patch for us, three edit_file calls for them."""

PATCH_AS_EDITS = [
    ("/messages/human.py", "Message from the user.", "Message from the person using the app."),
    (
        "/utils/strings.py",
        "Convert an iterable to a comma-separated string.",
        "Join an iterable into a comma-separated string.",
    ),
    (
        "/utils/strings.py",
        "Sanitize text by removing NUL bytes that are incompatible with PostgreSQL.",
        "Remove the NUL bytes PostgreSQL refuses from text.",
    ),
]


@dataclass(frozen=True)
class Step:
    """One tool call of the session, and what its result must show."""

    label: str
    name: str
    args: dict[str, Any]
    needs: tuple[str, ...] = ()


def session() -> list[Step]:
    """The fixed session: the same calls for both, in order."""
    read = "read_file"
    return [
        Step("ls /", "ls", {"path": "/"}, ("messages", "runnables", "tools")),
        Step("ls /runnables", "ls", {"path": "/runnables"}, ("/runnables/base.py",)),
        Step("glob **/*.py", "glob", {"pattern": "**/*.py"}, ("/runnables/base.py",)),
        Step("glob in /messages", "glob", {"pattern": "*.py", "path": "/messages"}, ("tool.py",)),
        Step(
            "grep files",
            "grep",
            {"pattern": "def invoke(", "output_mode": "files_with_matches"},
            ("/runnables/base.py", "/tools/base.py"),
        ),
        Step(
            "grep content",
            "grep",
            {"pattern": "class BaseTool(", "output_mode": "content", "path": "/tools"},
            ("/tools/base.py", "class BaseTool("),
        ),
        Step(
            "grep count",
            "grep",
            {"pattern": "import ", "output_mode": "count", "path": "/messages"},
            ("/messages/tool.py",),
        ),
        Step("read small (70 lines)", read, {"file_path": "/messages/human.py", "limit": 500}),
        Step("read medium (399 lines)", read, {"file_path": "/prompts/string.py", "limit": 500}),
        Step(
            "read large window (200 of 6,712)",
            read,
            {"file_path": "/runnables/base.py", "offset": 1001, "limit": 200},
        ),
        Step("re-read small", read, {"file_path": "/messages/human.py", "limit": 500}),
        Step("read for the patch", read, {"file_path": "/utils/strings.py", "limit": 500}),
        Step(
            "edit",
            "edit_file",
            {
                "file_path": "/messages/human.py",
                "old_string": "A `HumanMessage` is a message that is passed in from a user",
                "new_string": "A `HumanMessage` is what a user passes",
            },
        ),
        Step("patch (3 changes, 2 files)", "apply_patch", {"patch": PATCH}),
        Step(
            "write new file",
            "write_file",
            {"file_path": "/notes/plan.md", "content": "# Plan\n\n- rename\n- test\n"},
        ),
        Step(
            "execute",
            "execute",
            {
                "command": "python3 -c 'import ast,sys; ast.parse(open(sys.argv[1]).read())' "
                "utils/strings.py && echo parsed"
            },
            ("parsed",),
        ),
    ]


def deepagents_calls(step: Step) -> list[tuple[str, dict[str, Any]]]:
    """The same step as deepagents' tools spell it."""
    if step.name == "apply_patch":
        return [
            ("edit_file", {"file_path": path, "old_string": old, "new_string": new})
            for path, old, new in PATCH_AS_EDITS
        ]
    args = dict(step.args)
    if step.name == "read_file" and "offset" in args:
        args["offset"] -= 1
    if step.name == "execute":
        args["command"] = args["command"].replace("utils/", "./utils/")
    return [(step.name, args)]


class RecordingModel(ScriptedChatModel):
    """A scripted model that records the tools it is bound with at each call."""

    _bound: list[list[dict[str, Any]]] = PrivateAttr(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self._bound.append([convert_to_openai_tool(tool) for tool in tools])
        return super().bind_tools(tools, **kwargs)


@dataclass
class Tally:
    """What one side of the session cost."""

    results: list[tuple[str, int, str]] = field(default_factory=list)
    schema_turns: list[dict[str, int]] = field(default_factory=list)
    system_prompt: int = 0


def run(kind: str, repo: Path, steps: list[Step]) -> Tally:
    """Run the session through `create_agent` with one side's middleware."""
    turns: list[AIMessage] = []
    labels: list[str] = []
    for n, step in enumerate(steps):
        calls = [(step.name, step.args)] if kind == "ours" else deepagents_calls(step)
        for k, (name, args) in enumerate(calls):
            call = {"name": name, "args": args, "id": f"c{n}_{k}"}
            turns.append(AIMessage("", tool_calls=[call]))
            labels.append(step.label)
    model = RecordingModel(turns=[*turns, AIMessage("done")])
    middleware: Any
    if kind == "ours":
        middleware = FilesystemMiddleware(backend=LocalBackend(repo, execute=True))
    else:
        middleware = DeepFilesystemMiddleware(
            backend=LocalShellBackend(root_dir=repo, virtual_mode=True, inherit_env=True)
        )
    agent = create_agent(model, middleware=[middleware])
    state = agent.invoke(
        {"messages": [{"role": "user", "content": "work"}]}, {"recursion_limit": 200}
    )
    tally = Tally()
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert len(results) == len(labels), (kind, len(results), len(labels))
    for label, message in zip(labels, results, strict=True):
        text = message.text if hasattr(message, "text") else str(message.content)
        if message.status == "error":
            raise SystemExit(f"{kind}: step {label!r} failed: {text}")
        tally.results.append((label, COUNT(text), text))
    for bound in model._bound:  # noqa: SLF001 - our own recording
        tally.schema_turns.append(
            {tool["function"]["name"]: COUNT(json.dumps(tool)) for tool in bound}
        )
    system = model.calls[0][0] if model.calls and model.calls[0] else None
    if isinstance(system, SystemMessage):
        tally.system_prompt = COUNT(system.text)
    return tally


def expanded(text: str) -> str:
    """A listing with every grouped name spelled as its whole path (`formats.listing`)."""
    lines, folder = [], ""
    for line in text.split("\n"):
        if line.startswith("/") and line.endswith("/"):
            folder = line
        elif line and not line.startswith(("/", "(")) and folder:
            lines.append(folder + line)
        else:
            lines.append(line)
    return "\n".join(lines)


def check(kind: str, tally: Tally, steps: list[Step]) -> None:
    """Fail loudly when a result lacks what its step needs (grouped paths count)."""
    texts: dict[str, str] = {}
    for label, _tokens, text in tally.results:
        texts[label] = texts.get(label, "") + text + "\n" + expanded(text)
    for step in steps:
        for needed in step.needs:
            if needed not in texts[step.label] and needed.lstrip("/") not in texts[step.label]:
                raise SystemExit(f"{kind}: {step.label!r} lacks {needed!r}")


def main() -> int:
    """Run both sides and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="print every result")
    options = parser.parse_args()
    source = Path(sysconfig.get_paths()["purelib"]) / "langchain_core"
    steps = session()
    tallies: dict[str, Tally] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("ours", "deepagents"):
            repo = Path(tmp) / kind
            shutil.copytree(source, repo, ignore=shutil.ignore_patterns("__pycache__"))
            tallies[kind] = run(kind, repo, steps)
            check(kind, tallies[kind], steps)
    ours, deep = tallies["ours"], tallies["deepagents"]
    print(
        f"Session on a copy of langchain_core ({source.parent.name}), counted with {COUNT.name}\n"
    )
    print("| step | ours | deepagents | ratio |")
    print("|---|---:|---:|---:|")
    per_step: dict[str, list[int]] = {}
    for side, tally in enumerate((ours, deep)):
        for label, tokens, _text in tally.results:
            per_step.setdefault(label, [0, 0])[side] += tokens
    for label, (mine, theirs) in per_step.items():
        print(f"| {label} | {mine:,} | {theirs:,} | {mine / max(theirs, 1):.2f}x |")
    result_ours = sum(t for _l, t, _x in ours.results)
    result_deep = sum(t for _l, t, _x in deep.results)
    print(
        f"| **all results** | **{result_ours:,}** | **{result_deep:,}** |"
        f" **{result_ours / result_deep:.2f}x** |"
    )
    print()
    schema_rows = []
    for name, tally in (("ours", ours), ("deepagents", deep)):
        turn = tally.schema_turns[0]
        shared = sum(v for k, v in turn.items() if k in SHARED)
        schema_rows.append(
            (
                name,
                shared,
                sum(turn.values()),
                len(turn),
                tally.system_prompt,
                len(tally.schema_turns),
            )
        )
    print(
        "| per model call | shared tools' schemas | all tools' schemas | tools |"
        " system prompt added | model calls |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for name, shared, total, tools, prompt, calls in schema_rows:
        print(f"| {name} | {shared:,} | {total:,} | {tools} | {prompt:,} | {calls} |")
    (_, shared_ours, total_ours, _, prompt_ours, calls_ours) = schema_rows[0]
    (_, shared_deep, total_deep, _, prompt_deep, calls_deep) = schema_rows[1]
    print()
    whole_ours = (total_ours + prompt_ours) * calls_ours + result_ours
    whole_deep = (total_deep + prompt_deep) * calls_deep + result_deep
    ratio_results = result_ours / result_deep
    ratio_shared = shared_ours / shared_deep
    print(
        f"Results: {ratio_results:.2f}x deepagents' (target at most 0.5x):"
        f" {'PASS' if ratio_results <= 0.5 else 'FAIL'}"
    )
    print(
        f"Shared tools' schemas: {ratio_shared:.2f}x deepagents' (target at most 1.0x):"
        f" {'PASS' if ratio_shared <= 1.0 else 'FAIL'}"
    )
    print(
        f"Whole session as the model reads it (schemas and prompt at every call, plus"
        f" results): ours {whole_ours:,}, deepagents {whole_deep:,},"
        f" {whole_ours / whole_deep:.2f}x"
    )
    if options.show:
        for name, tally in (("ours", ours), ("deepagents", deep)):
            for label, tokens, text in tally.results:
                print(f"\n--- {name}: {label} ({tokens} tokens)\n{text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
