"""The rule table of `langchain_fstools.permissions.rules`: every mode, operation and path kind.

Issue 8: each mode's documented default, protected paths asking in every mode, rules in
order, case and traversal tricks, command lists, per-tool targets.
"""

from __future__ import annotations

import pytest

from langchain_fstools import LocalBackend
from langchain_fstools.permissions.rules import (
    MODE_DEFAULTS,
    Permission,
    Policy,
    Target,
)
from langchain_fstools.tools.base import FileTool
from langchain_fstools.tools.toolkit import FileToolkit

MODES = ["default", "accept_edits", "plan", "bypass"]
EXPECTED = {
    # mode: (read, write, execute) for an unprotected path
    "default": ("allow", "ask", "ask"),
    "accept_edits": ("allow", "allow", "ask"),
    "plan": ("allow", "deny", "deny"),
    "bypass": ("allow", "allow", "allow"),
}
PROTECTED = [
    "/.git/config",
    "/SRC/../.git/config",
    "/.GIT/HEAD",
    "/sub/.git",
    "/.gitconfig",
    "/lib/.gitmodules",
    "/home/u/.bashrc",
    "/.ZSHRC",
    "/.profile",
    "/.ssh/id_rsa",
    "/.env",
    "/app/.env.production",
    "/.fstools/settings.json",
    "/./.claude//settings.json",
]
UNPROTECTED = ["/src/app.py", "/docs/git.md", "/environment.py", "/.github/workflows/ci.yml"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", UNPROTECTED)
def test_unprotected_paths_follow_the_mode(mode: str, path: str) -> None:
    policy = Policy(mode=mode)  # type: ignore[arg-type]
    read, write, _ = EXPECTED[mode]
    assert policy.decide_path("read", path).action == read
    assert policy.decide_path("write", path).action == write


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", PROTECTED)
def test_protected_paths_ask_in_every_mode(mode: str, path: str) -> None:
    policy = Policy(mode=mode)  # type: ignore[arg-type]
    write = EXPECTED[mode][1]
    assert policy.decide_path("read", path).action == "ask"
    # plan denies writes outright; every other mode asks.
    assert policy.decide_path("write", path).action == ("deny" if write == "deny" else "ask")


@pytest.mark.parametrize("mode", MODES)
def test_execute_follows_the_mode(mode: str) -> None:
    assert Policy(mode=mode).decide_command("make test").action == EXPECTED[mode][2]  # type: ignore[arg-type]


def test_mode_defaults_table_is_the_documented_one() -> None:
    assert {m: tuple(d.values()) for m, d in MODE_DEFAULTS.items()} == EXPECTED


def test_traversal_is_normalised_before_matching() -> None:
    policy = Policy([Permission(operations=["write"], paths=["/secrets/**"], action="deny")])
    verdict = policy.decide_path("write", "/public/../SECRETS/key.pem")
    assert (verdict.action, verdict.target, verdict.reason) == (
        "deny",
        "/SECRETS/key.pem",
        "permission rule 1",
    )


def test_a_directory_glob_covers_its_contents_case_insensitively() -> None:
    policy = Policy([Permission(operations=["read"], paths=["build"], action="deny")])
    assert policy.decide_path("read", "/pkg/Build/out/a.o").action == "deny"
    assert policy.decide_path("read", "/pkg/builder.py").action == "allow"


def test_rules_are_tried_in_order_first_match_wins() -> None:
    policy = Policy(
        [
            Permission(operations=["write"], paths=["/src/generated/**"], action="deny"),
            Permission(operations=["write"], paths=["/src/**"], action="allow"),
        ]
    )
    assert policy.decide_path("write", "/src/generated/a.py").action == "deny"
    assert policy.decide_path("write", "/src/a.py").action == "allow"
    assert policy.decide_path("write", "/README.md").action == "ask"


def test_an_allow_rule_cannot_open_a_protected_path() -> None:
    policy = Policy([Permission(operations=["write"], paths=["**"], action="allow")])
    verdict = policy.decide_path("write", "/.git/hooks/pre-commit")
    assert (verdict.action, verdict.reason) == ("ask", "the protected path /.git/hooks/pre-commit")


def test_plan_denies_writes_whatever_a_rule_says() -> None:
    policy = Policy([Permission(operations=["write", "execute"])], mode="plan")
    assert policy.decide_path("write", "/a.txt").action == "deny"
    assert policy.decide_command("ls").action == "deny"


def test_bypass_keeps_denies_and_turns_asks_into_allows() -> None:
    policy = Policy(
        [
            Permission(operations=["write"], paths=["/vendor/**"], action="deny"),
            Permission(operations=["write"], paths=["/docs/**"], action="ask"),
        ],
        mode="bypass",
    )
    assert policy.decide_path("write", "/vendor/x.py").action == "deny"
    assert policy.decide_path("write", "/docs/a.md").action == "allow"


def test_command_prefixes_match_word_by_word() -> None:
    policy = Policy([Permission(operations=["execute"], commands=["git status"])])
    assert policy.decide_command("git  status -s").action == "allow"
    assert policy.decide_command("git stash").action == "ask"


def test_each_command_of_a_list_is_decided_and_the_strictest_wins() -> None:
    policy = Policy(
        [
            Permission(operations=["execute"], commands=["rm"], action="deny"),
            Permission(operations=["execute"], commands=["git status"]),
        ]
    )
    assert policy.decide_command("git status && rm -rf /").action == "deny"
    assert policy.decide_command("git status; curl x | wc -l").action == "ask"
    assert policy.decide_command("curl x | sh").action == "deny"  # sh runs unknown input
    assert policy.decide_command("git status $(rm -rf /)").action == "deny"


def test_invalid_paths_pass_to_the_tool_which_refuses_them() -> None:
    verdict = Policy(mode="plan").decide_path("read", "/../../etc/passwd")
    assert verdict.action == "allow"
    assert "invalid" in verdict.reason


@pytest.mark.parametrize(
    ("rule", "error"),
    [
        ({"operations": ["delete"]}, ValueError),
        ({"operations": ["read"], "action": "maybe"}, ValueError),
        ({"operations": ["read"], "commands": ["ls"]}, ValueError),
        ({"operations": ["read"], "paths": ["src/[a"]}, ValueError),
        ({"operations": ["read"], "paths": "src/**"}, TypeError),
    ],
)
def test_bad_rules_fail_up_front(rule: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        Permission(**rule)  # type: ignore[arg-type]


def test_unknown_mode_fails_up_front() -> None:
    with pytest.raises(ValueError, match="mode"):
        Policy(mode="yolo")  # type: ignore[arg-type]


TOOLS = {tool.name: tool for tool in FileToolkit(LocalBackend(".", execute=True)).get_tools()}


def tool_targets(name: str, args: dict[str, object]) -> list[Target] | None:
    """What the tool `name` declares a call with `args` touches (None: invalid args)."""
    tool = TOOLS[name]
    assert isinstance(tool, FileTool)
    validated = tool.validated(args)
    return None if validated is None else tool.targets(validated)


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("read_file", {"file_path": "/a"}, [Target("read", "/a")]),
        ("ls", {}, [Target("read", "/")]),
        ("grep", {"pattern": "x", "path": "/src"}, [Target("read", "/src")]),
        ("glob", {"pattern": "*"}, [Target("read", "/")]),
        ("write_file", {"file_path": "/a", "content": ""}, [Target("write", "/a")]),
        (
            "edit_file",
            {"file_path": "/a", "old_string": "a", "new_string": "b"},
            [Target("write", "/a")],
        ),
        (
            "notebook_edit",
            {"notebook_path": "/n.ipynb", "new_source": "x"},
            [Target("write", "/n.ipynb")],
        ),
        ("execute", {"command": "make"}, [Target("execute", command="make")]),
        (
            "execute",
            {
                "command": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a.py\n+x\n*** End Patch\nEOF"
            },
            [Target("write", "/a.py")],
        ),
        (
            "apply_patch",
            {
                "patch": "*** Begin Patch\n*** Add File: /new.py\n+x\n"
                "  *** Update File: /old.py\n*** Move to: /moved.py\n@@\n-a\n+b\n"
                "*** Delete File: /gone.py\n*** End Patch"
            },
            [
                Target("write", "/new.py"),
                Target("write", "/old.py"),
                Target("write", "/moved.py"),
                Target("write", "/gone.py"),
            ],
        ),
        ("apply_patch", {"patch": "nonsense"}, [Target("write", None)]),
        (
            "apply_patch",
            {
                "patch": "cd .git && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: config\n+x\n*** End Patch\nEOF"
            },
            [Target("write", "/.git/config")],
        ),
        ("edit_file", {"file_path": "/a"}, None),
    ],
)
def test_each_tool_declares_its_targets(
    name: str, args: dict[str, object], expected: list[Target] | None
) -> None:
    assert tool_targets(name, args) == expected


@pytest.mark.parametrize("mode", MODES)
def test_a_patch_is_decided_per_file(mode: str) -> None:
    policy = Policy(mode=mode)  # type: ignore[arg-type]
    patch = (
        "*** Begin Patch\n*** Update File: /src/a.py\n@@\n-x\n+y\n"
        "*** Add File: /.bashrc\n+alias ll=ls\n*** End Patch"
    )
    verdict = policy.decide_all(tool_targets("apply_patch", {"patch": patch}) or [])
    assert verdict is not None
    assert verdict.action == ("deny" if mode == "plan" else "ask")
    if mode in {"accept_edits", "bypass"}:
        assert verdict.target == "/.bashrc"


def test_a_patch_naming_no_file_asks_even_when_writes_are_allowed() -> None:
    verdict = Policy(mode="bypass").decide(Target("write", None))
    assert verdict.action == "ask"
