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
at every model call the fixed cost: the tool schemas the model is offered (the JSON
`convert_to_openai_tool` makes, as providers receive it) plus the system prompt text
the middleware adds. Ours offers a tool only while it can be of use (`notebook_edit`
once a notebook was named, `diagnostics` once a file a language server checks was; the
`lsp` extra's servers, where installed, check every change, as by default), so the
fixed cost is given for the first call, the mean,
the costliest call, and a call offered every tool. A whole session of N model calls is
the mean fixed cost times N plus the session's results, for N = 10 and 50. Shared
tools are the seven both have: ls, read_file, write_file, edit_file, glob, grep,
execute.

Every call must succeed for both, and the script checks that each result holds what the
step needs (the paths, line numbers and counts), so a cheaper result is never a result
with something missing. Targets: results at most 0.5x deepagents', schemas of the shared tools
at most 1.0x (issue 28); the costliest call's fixed cost at most 1.0x and the whole
50-call session at most 0.8x (issue 40). `--show` prints every result.
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
    prompt_turns: list[int] = field(default_factory=list)
    every_tool: int = 0
    """The fixed cost of a call offered every tool the middleware has (a notebook seen)."""

    def fixed(self) -> list[int]:
        """What each model call paid before any message: tool schemas plus system prompt."""
        return [
            sum(turn.values()) + prompt
            for turn, prompt in zip(self.schema_turns, self.prompt_turns, strict=True)
        ]

    def mean_fixed(self) -> float:
        """The fixed cost of an average model call of the session."""
        return sum(self.fixed()) / len(self.fixed())

    def whole(self, calls: int) -> float:
        """A session of `calls` model calls: the mean fixed cost at each, plus the results."""
        return self.mean_fixed() * calls + sum(tokens for _l, tokens, _x in self.results)


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
    for messages in model.calls:  # the agent has no prompt of its own: all of it is added
        system = messages[0] if messages else None
        tally.prompt_turns.append(COUNT(system.text) if isinstance(system, SystemMessage) else 0)
    every = [convert_to_openai_tool(tool) for tool in middleware.tools]
    tally.every_tool = sum(COUNT(json.dumps(tool)) for tool in every) + max(tally.prompt_turns)
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


def verdict(ratio: float, target: float) -> str:
    """PASS when `ratio` is at most `target`."""
    return "PASS" if ratio <= target else "FAIL"


def print_fixed(ours: Tally, deep: Tally) -> None:
    """The fixed cost of a model call, then whole sessions of 10 and 50 calls."""
    print(
        "| per model call (tool schemas + system prompt added) | first call | mean | costliest"
        " | every tool offered | tools offered | system prompt | model calls |"
    )
    print("|---|---:|---:|---:|---:|---|---:|---:|")
    for name, tally in (("ours", ours), ("deepagents", deep)):
        fixed = tally.fixed()
        sizes = sorted({len(turn) for turn in tally.schema_turns})
        offered = f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]}-{sizes[-1]}"
        print(
            f"| {name} | {fixed[0]:,} | {tally.mean_fixed():,.0f} | {max(fixed):,} |"
            f" {tally.every_tool:,} | {offered} | {max(tally.prompt_turns):,} | {len(fixed)} |"
        )
    print(
        f"| **ratio** | **{ours.fixed()[0] / deep.fixed()[0]:.2f}x** |"
        f" **{ours.mean_fixed() / deep.mean_fixed():.2f}x** |"
        f" **{max(ours.fixed()) / max(deep.fixed()):.2f}x** |"
        f" **{ours.every_tool / deep.every_tool:.2f}x** | | | |"
    )
    print()
    print(
        "| whole session (mean fixed cost x calls + the session's results)"
        " | ours | deepagents | ratio |"
    )
    print("|---|---:|---:|---:|")
    for calls in (10, 50):
        mine, theirs = ours.whole(calls), deep.whole(calls)
        print(f"| {calls} model calls | {mine:,.0f} | {theirs:,.0f} | {mine / theirs:.2f}x |")


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
    print_fixed(ours, deep)
    ratio_results = result_ours / result_deep
    shared_ours = sum(v for k, v in ours.schema_turns[0].items() if k in SHARED)
    shared_deep = sum(v for k, v in deep.schema_turns[0].items() if k in SHARED)
    ratio_shared = shared_ours / shared_deep
    ratio_call = max(ours.fixed()) / max(deep.fixed())
    ratio_50 = ours.whole(50) / deep.whole(50)
    print()
    print(
        f"Results: {ratio_results:.2f}x deepagents' (target at most 0.5x):"
        f" {verdict(ratio_results, 0.5)}"
    )
    print(
        f"Shared tools' schemas: {ratio_shared:.2f}x deepagents' (target at most 1.0x):"
        f" {verdict(ratio_shared, 1.0)}"
    )
    print(
        f"Fixed cost of the costliest model call: {ratio_call:.2f}x deepagents'"
        f" (target at most 1.0x): {verdict(ratio_call, 1.0)}"
    )
    print(
        f"Whole 50-call session: {ratio_50:.2f}x deepagents' (target at most 0.8x):"
        f" {verdict(ratio_50, 0.8)}"
    )
    if options.show:
        for name, tally in (("ours", ours), ("deepagents", deep)):
            for label, tokens, text in tally.results:
                print(f"\n--- {name}: {label} ({tokens} tokens)\n{text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
