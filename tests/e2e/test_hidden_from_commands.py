"""What a rule keeps from reads stays out of commands' reach, end to end through `create_agent`.

Three ways it could leak: a copy of a folder holding a masked file (the copy must fail
loudly, never commit an empty stand-in), a rule that asks before a read (it hides the
path too: no person can be asked in the middle of a command), and a backend that
cannot hide paths from commands at all (Landlock alone, `sandbox=None`; SSH in
tests/integration/ssh/test_ssh_hidden.py): there a command asks first, or in `bypass`
is refused. Controls show each command does run, and does see the file, when nothing
hides it. As an unprivileged user: tests/integration/test_sandbox_unprivileged.py.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langchain_fstools import FilesystemMiddleware, LocalBackend
from langchain_fstools.permissions.rules import Permission
from langchain_fstools.shell.sandbox.sandbox import Sandbox, find_bwrap
from langchain_fstools.testing import ScriptedChatModel
from tests.e2e.agent_runs import run_command

if TYPE_CHECKING:
    from langchain_fstools.backends.protocol import Backend

needs_bwrap = pytest.mark.skipif(find_bwrap() is None, reason="needs bubblewrap")
CONFIG: Any = {"configurable": {"thread_id": "t"}}

_RSYNC_LIKE = """
import os, sys
for top, _, names in os.walk("proj"):
    out = "copy" + top[len("proj"):]
    os.makedirs(out, exist_ok=True)
    for name in names:
        try:
            with open(os.path.join(out, name), "wb") as made, open(os.path.join(top, name), "rb") as read:
                made.write(read.read())
        except OSError as error:
            print(error, file=sys.stderr)
"""
"""A copy that makes each output file before reading its source, going on past errors."""

COPIES = {
    "cp -r": "cp -r proj copy",
    "cp -a": "cp -a proj copy",
    "mv": "mv proj copy",
    "tar": "mkdir copy && tar -C proj -cf - . | tar -C copy -xf -",
    "python copytree": 'python3 -c \'import shutil; shutil.copytree("proj", "copy")\'',
    "file by file, output first": f"python3 -c {shlex.quote(_RSYNC_LIKE)}",
}
"""Ways a command copies the folder `proj` to `copy`, each reading every file."""

COULD_NOT_READ = ("Permission denied", "Operation not permitted")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A workspace whose `proj/secrets` holds the secret `key` beside an ordinary file."""
    folder = tmp_path / "ws"
    (folder / "proj" / "secrets").mkdir(parents=True)
    (folder / "proj" / "secrets" / "key").write_text("SECRET-KEY\n")
    (folder / "proj" / "secrets" / "other").write_text("other\n")
    (folder / "proj" / "a.txt").write_text("a\n")
    return folder


def _masking(root: Path, how: str) -> tuple[Backend, list[Permission]]:
    """A backend and rules that mask the file `proj/secrets/key` in commands' view."""
    if how == "Sandbox(hidden=...)":
        hidden = Sandbox(hidden=[str(root / "proj" / "secrets" / "key")])
        return LocalBackend(root, execute=True, sandbox=hidden), []
    rule = Permission(operations=["read"], paths=["/proj/secrets/key"], action=how)  # type: ignore[arg-type]
    return LocalBackend(root, execute=True), [rule]


# ----- a copy of a masked file --------------------------------------------------------------


@needs_bwrap
@pytest.mark.parametrize("how", ["deny", "ask", "Sandbox(hidden=...)"])
@pytest.mark.parametrize("command", list(COPIES.values()), ids=list(COPIES))
def test_a_copy_of_a_folder_holding_a_masked_file_commits_no_stand_in_for_it(
    root: Path, how: str, command: str
) -> None:
    backend, rules = _masking(root, how)

    outcome = run_command(backend, command, mode="accept_edits", permissions=rules)

    assert outcome.message is not None
    assert "SECRET-KEY" not in outcome.text
    assert any(words in outcome.text for words in COULD_NOT_READ), outcome.text
    copy = root / "copy" / "secrets"
    assert (copy / "other").read_text() == "other\n"  # the rest of the folder is copied
    assert not (copy / "key").exists()  # no empty file standing in for the masked one
    assert (root / "proj" / "secrets" / "key").read_text() == "SECRET-KEY\n"
    if command == COPIES["file by file, output first"]:  # it made one: the result says so
        assert "Not kept: /copy/secrets/key (empty, named as files hidden" in outcome.text
    else:
        assert "Not kept" not in outcome.text


@needs_bwrap
@pytest.mark.parametrize("command", list(COPIES.values()), ids=list(COPIES))
def test_the_control_the_same_copy_of_an_unmasked_folder_copies_the_file(
    root: Path, command: str
) -> None:
    outcome = run_command(LocalBackend(root, execute=True), command, mode="accept_edits")

    assert outcome.ran, outcome.text
    assert (root / "copy" / "secrets" / "key").read_text() == "SECRET-KEY\n"


# ----- a rule that asks before a read -------------------------------------------------------

READS = [
    "cat proj/secrets/key",
    "python3 -c 'print(open(\"proj/secrets/key\").read())'",
    "cat proj/secre*/*",
    "tar -cO proj",
    "grep -r SECRET .",
]


@needs_bwrap
@pytest.mark.parametrize("mode", ["default", "accept_edits"])
@pytest.mark.parametrize("command", READS)
def test_a_path_a_rule_asks_before_reading_is_hidden_from_commands(
    root: Path, mode: str, command: str
) -> None:
    rule = Permission(operations=["read"], paths=["/proj/secrets"], action="ask")

    outcome = run_command(LocalBackend(root, execute=True), command, mode=mode, permissions=[rule])

    assert not outcome.asked  # a contained command runs; what it cannot see is the point
    assert outcome.message is not None
    assert "SECRET-KEY" not in outcome.text


@needs_bwrap
def test_in_bypass_mode_a_rule_that_asks_before_reading_hides_nothing(root: Path) -> None:
    rule = Permission(operations=["read"], paths=["/proj/secrets"], action="ask")

    outcome = run_command(
        LocalBackend(root, execute=True), "cat proj/secrets/key", mode="bypass", permissions=[rule]
    )

    assert "SECRET-KEY" in outcome.text  # bypass asks no one: the rule is an allow there


# ----- backends that cannot hide paths from commands ----------------------------------------

UNMASKED = [pytest.param(Sandbox(method="landlock"), id="landlock alone"), None]
ALLOW_CAT = Permission(operations=["execute"], commands=["cat"])


class Conversation:
    """One scripted `execute` call through `create_agent`, answerable by a person."""

    def __init__(self, backend: Backend, command: str, **middleware: Any) -> None:
        call = AIMessage(
            content="", tool_calls=[{"name": "execute", "args": {"command": command}, "id": "c1"}]
        )
        self.graph = create_agent(
            ScriptedChatModel(turns=[call, AIMessage(content="done")]),
            middleware=[FilesystemMiddleware(backend=backend, **middleware)],
            checkpointer=InMemorySaver(),
        )
        first = self.graph.invoke({"messages": [("user", "go")]}, CONFIG, version="v2")
        self.asked = [dict(r) for i in first.interrupts for r in i.value["action_requests"]]

    def answer(self, decision: dict[str, Any]) -> ToolMessage:
        self.graph.invoke(Command(resume={"decisions": [decision]}), CONFIG, version="v2")
        values = self.graph.get_state(CONFIG).values["messages"]
        return [m for m in values if isinstance(m, ToolMessage)][-1]


@pytest.mark.parametrize("rule", ["deny", "ask"])
@pytest.mark.parametrize("mode", ["default", "accept_edits"])
@pytest.mark.parametrize("sandbox", UNMASKED)
def test_where_nothing_can_be_hidden_an_allowed_command_asks_first(
    root: Path, sandbox: Sandbox | None, mode: str, rule: str
) -> None:
    reads = Permission(operations=["read"], paths=["/proj/secrets"], action=rule)  # type: ignore[arg-type]
    backend = LocalBackend(root, execute=True, sandbox=sandbox)

    talk = Conversation(backend, "cat proj/secrets/key", mode=mode, permissions=[reads, ALLOW_CAT])

    (request,) = talk.asked
    assert "commands here cannot be kept from it" in request["description"]
    assert "/proj/secrets" in request["description"]
    rejected = talk.answer({"type": "reject", "message": "no"})
    assert "SECRET-KEY" not in str(rejected.content)


@pytest.mark.parametrize("sandbox", UNMASKED)
def test_where_nothing_can_be_hidden_a_command_a_person_approved_runs(
    root: Path, sandbox: Sandbox | None
) -> None:
    reads = Permission(operations=["read"], paths=["/proj/secrets"], action="deny")
    backend = LocalBackend(root, execute=True, sandbox=sandbox)

    talk = Conversation(backend, "cat proj/secrets/key", mode="default", permissions=[reads])

    assert talk.asked
    message = talk.answer({"type": "approve"})
    assert message.status == "success", message.content
    assert "SECRET-KEY" in str(message.content)  # the person decided it may see it


@pytest.mark.parametrize("sandbox", UNMASKED)
def test_where_nothing_can_be_hidden_bypass_refuses_a_command_while_a_rule_denies_reads(
    root: Path, sandbox: Sandbox | None
) -> None:
    reads = Permission(operations=["read"], paths=["/proj/secrets"], action="deny")
    backend = LocalBackend(root, execute=True, sandbox=sandbox)

    outcome = run_command(backend, "cat proj/a.txt", mode="bypass", permissions=[reads])

    assert outcome.message is not None
    assert outcome.message.status == "error"
    assert "permission rule 1 (it denies reading /proj/secrets" in outcome.text


@pytest.mark.parametrize("sandbox", UNMASKED)
def test_the_control_where_nothing_is_hidden_the_allowed_command_runs_without_asking(
    root: Path, sandbox: Sandbox | None
) -> None:
    writes = Permission(operations=["write"], paths=["/proj/secrets"], action="deny")
    backend = LocalBackend(root, execute=True, sandbox=sandbox)

    talk = Conversation(backend, "cat proj/a.txt", mode="default", permissions=[writes, ALLOW_CAT])

    assert not talk.asked
    assert "a\n" in str(talk.graph.get_state(CONFIG).values["messages"][-2].content)


@needs_bwrap
def test_a_copy_approved_later_still_says_what_was_not_kept(root: Path) -> None:
    """The person is shown the empty stand-ins left out, and the approved result names them."""
    backend, rules = _masking(root, "deny")
    call = AIMessage(
        "",
        tool_calls=[
            {
                "name": "execute",
                "args": {"command": COPIES["file by file, output first"]},
                "id": "c",
            }
        ],
    )
    graph = create_agent(
        ScriptedChatModel(turns=[call, AIMessage("done")]),
        middleware=[FilesystemMiddleware(backend=backend, mode="default", permissions=rules)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    try:
        first = graph.invoke({"messages": [("user", "go")]}, config, version="v2")
        (asked,) = first.interrupts
        assert "Not kept: /copy/secrets/key" in asked.value["action_requests"][0]["description"]
        after = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    finally:
        backend.close()

    (result,) = [m for m in after["messages"] if isinstance(m, ToolMessage)]
    assert "A person approved these changes; they are kept." in str(result.content)
    assert "Not kept: /copy/secrets/key (empty, named as files hidden" in str(result.content)
    assert (root / "copy" / "secrets" / "other").read_text() == "other\n"
    assert not (root / "copy" / "secrets" / "key").exists()
