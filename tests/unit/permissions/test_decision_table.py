"""docs/permissions.md's decision table of a command's changes is what the code decides.

Every cell is walked: the mode and how the command ran (the row) against the path's
category (the column), through `CallGuard.commit_decision` (a permission layer) or
`Backend.judge_changes` (none); the host-run table's every example is host-run; and
the table of what is decided before a command runs, by the rule on reads and whether
the backend can hide paths from commands, through `Policy.decide`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from langchain_fstools import LocalBackend
from langchain_fstools.core.changesets import Change, ChangeKind, ChangeSet
from langchain_fstools.permissions.gate import CallGuard
from langchain_fstools.permissions.rules import Permission, Policy
from langchain_fstools.shell.sandbox.protected import HOST_RUN, PROTECTED, Finding, classify
from langchain_fstools.tools.targets import Target

if TYPE_CHECKING:
    from langchain_fstools.backends.guarded import CommitDecision

DOCS = Path(__file__).resolve().parents[3] / "docs" / "permissions.md"
CATEGORIES = ("ordinary", "ignored", "host-run", "protected")
WORDS: dict[str, CommitDecision] = {"keep": "allow", "ask": "ask", "refuse": "refuse"}
RULE = Permission(operations=["execute"], commands=["touch"])
ALLOW_CAT = Permission(operations=["execute"], commands=["cat"])


def table(heading: str) -> list[list[str]]:
    """The rows of the first table after `heading` in docs/permissions.md, cells stripped."""
    lines = DOCS.read_text().split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    block = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        block.append([cell.strip() for cell in line.strip("|").split("|")])
    return block[2:]  # past the header and its rule


DECISIONS = table("## What a command may keep: one decision table")


def decide(mode: str, command: str, category: str) -> str:
    """What the code does with a change of `category` by a command run as `command`."""
    if mode == "no permission layer":
        return _without_a_layer(category)
    policy = Policy([RULE], mode=mode)  # type: ignore[arg-type]
    if command == "direct":
        before = policy.decide_command("make build", contained=False).action
        assert before == ("allow" if mode == "bypass" else "ask")  # asked before it runs
        return "in place"
    guard = CallGuard(
        policy,
        command_approved=command == "network, approved before it ran",
        command_allowed=command.endswith("allowed by a rule"),
    )
    finding = {"host-run": Finding(HOST_RUN, "x"), "protected": Finding(PROTECTED, "x")}
    decided = guard.commit_decision(
        "/src/out.txt", finding.get(category), ignored=category == "ignored"
    )
    return next(word for word, action in WORDS.items() if action == decided)


def _without_a_layer(category: str) -> str:
    path = {"protected": "/.git/commondir", "host-run": "/x.pyc"}.get(category, "/out.txt")
    changes = ChangeSet((Change(path, ChangeKind.ADDED, "file", 0o644),), "/nonexistent")
    review = LocalBackend("/").judge_changes(changes)
    return "refuse" if review.refused else "keep"


def test_the_table_has_every_cell() -> None:
    modes = {row[0] for row in DECISIONS}
    assert modes == {"`default`", "`accept_edits`", "`bypass`", "no permission layer"}
    assert all(len(row) == 2 + len(CATEGORIES) for row in DECISIONS)


@pytest.mark.parametrize("row", DECISIONS, ids=[f"{r[0]} {r[1]}" for r in DECISIONS])
def test_each_cell_of_the_decision_table_is_what_the_code_decides(row: list[str]) -> None:
    mode, command, *cells = row
    for category, cell in zip(CATEGORIES, cells, strict=True):
        assert decide(mode.strip("`"), command, category) == cell, (mode, command, category)


def test_a_contained_command_runs_without_asking_first_and_plan_runs_none() -> None:
    assert Policy(mode="default").decide_command("make", contained=True).action == "allow"
    assert Policy(mode="plan").decide_command("make", contained=True).action == "deny"


HOST_RUN_ROWS = table("Host-run paths")


@pytest.mark.parametrize("row", HOST_RUN_ROWS, ids=[r[0] for r in HOST_RUN_ROWS])
def test_each_row_of_the_host_run_table_is_host_run(row: list[str]) -> None:
    what, examples, _why = row
    found = re.findall(r"`(/[^`]+)`", examples)
    if what == "executables":
        changes = (Change("/build/tool", ChangeKind.ADDED, "file", 0o755),)
    else:
        assert found, what
        changes = tuple(Change(path, ChangeKind.ADDED, "file", 0o644) for path in found)

    classified = classify(ChangeSet(changes, "/nonexistent"), ())

    assert {c.path: classified[c.path].category for c in changes} == dict.fromkeys(
        (c.path for c in changes), HOST_RUN
    )


BEFORE = table("## Before a command runs, where nothing can be hidden")
READ_RULES = {
    "none": None,
    "asks before reading a path": Permission(operations=["read"], paths=["/secrets"], action="ask"),
    "denies reading a path": Permission(operations=["read"], paths=["/secrets"], action="deny"),
}
BEFORE_WORDS = {"allow": "run", "ask": "ask", "deny": "refuse"}


def test_the_before_it_runs_table_has_every_cell() -> None:
    cells = {(row[0].strip("`"), row[1]) for row in BEFORE}
    assert cells == {(m, r) for m in ("default", "accept_edits", "bypass") for r in READ_RULES}
    assert all(len(row) == 4 for row in BEFORE)


@pytest.mark.parametrize("row", BEFORE, ids=[f"{r[0]} {r[1]}" for r in BEFORE])
def test_each_cell_before_a_command_runs_is_what_the_code_decides(row: list[str]) -> None:
    mode, rule, hidden, unmasked = row
    reads = READ_RULES[rule]
    policy = Policy([*([reads] if reads else []), ALLOW_CAT], mode=mode.strip("`"))  # type: ignore[arg-type]
    for masked, cell in ((True, hidden), (False, unmasked)):
        verdict = policy.decide(Target("execute", command="cat x", masked=masked))
        assert BEFORE_WORDS[verdict.action] == cell, (mode, rule, masked)


def test_where_nothing_can_be_hidden_plan_still_runs_nothing() -> None:
    reads = READ_RULES["denies reading a path"]
    assert reads is not None
    policy = Policy([reads, ALLOW_CAT], mode="plan")
    assert policy.decide(Target("execute", command="cat x", masked=False)).action == "deny"
