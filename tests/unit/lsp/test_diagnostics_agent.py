"""Diagnostics after every change, through `create_agent` with a scripted model.

The real servers of the `lsp` extra (ruff server, ty server) check the ordinary cases;
a fake server (`fake_server.py`) crashes, hangs or floods for the failure cases.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langchain_fstools import FilesystemMiddleware, FileToolkit, LocalBackend, StateBackend
from langchain_fstools.lsp import Diagnostics, ServerSpec, TextChange
from langchain_fstools.shell.sandbox import confine
from langchain_fstools.testing import ScriptedChatModel, parallel, tool_call
from tests.unit.lsp.starting import started

FAKE = str(Path(__file__).with_name("fake_server.py"))
ONLY_RUFF = {"ty": None}
ONLY_TY = {"ruff": None}


def fake(mode: str) -> dict[str, ServerSpec | None]:
    """The fake server in `mode` for `.py` files, and no real one."""
    spec = ServerSpec((sys.executable, FAKE, mode), frozenset({".py"}), "python")
    return {"ruff": None, "ty": None, "fake": spec}


@pytest.fixture
def servers() -> list[Diagnostics]:
    made: list[Diagnostics] = []
    yield made
    for diagnostics in made:
        diagnostics.close()


def run(
    root: Path,
    turns: list[Any],
    servers: list[Diagnostics],
    *,
    table: dict[str, ServerSpec | None] | None = None,
    backend: Any = None,
    timeout: float = 10.0,
    diagnostics: Diagnostics | None = None,
    **settings: Any,
) -> list[ToolMessage]:
    """Run the scripted turns; the tool messages, in order."""
    if diagnostics is None:
        diagnostics = Diagnostics(servers=table, timeout=timeout)
        servers.append(diagnostics)
    middleware = FilesystemMiddleware(
        backend=backend or LocalBackend(root), diagnostics=diagnostics, **settings
    )
    agent = create_agent(ScriptedChatModel(turns=[*turns, "done"]), middleware=[middleware])
    result = agent.invoke({"messages": [("user", "go")]})
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


def introduced(message: ToolMessage) -> list[tuple[str, str]]:
    found = message.artifact.get("diagnostics", {}).get("introduced", [])
    return [(item["path"], item["code"]) for item in found]


def fixed(message: ToolMessage) -> list[tuple[str, str]]:
    found = message.artifact.get("diagnostics", {}).get("fixed", [])
    return [(item["path"], item["code"]) for item in found]


def edit(path: str, old: str, new: str) -> Any:
    return tool_call("edit_file", file_path=path, old_string=old, new_string=new)


SOURCE = "def total(values: list[int]) -> int:\n    return sum(values)\n\n\nCOUNT = 1\n"


def test_an_undefined_name_is_reported_then_not_repeated_then_fixed(
    tmp_path: Path, servers: list[Diagnostics]
) -> None:
    (tmp_path / "app.py").write_text(SOURCE)
    messages = run(
        tmp_path,
        [
            tool_call("read_file", file_path="/app.py"),
            edit("/app.py", "sum(values)", "sum(valuez)"),
            edit("/app.py", "COUNT = 1", "COUNT = 2"),
            edit("/app.py", "sum(valuez)", "sum(values)"),
        ],
        servers,
        table=ONLY_RUFF,
    )
    broke, unrelated, fix = messages[1:]
    assert introduced(broke) == [("/app.py", "F821")]
    assert "/app.py:2:16: error F821 Undefined name `valuez` (ruff)" in broke.content
    assert introduced(unrelated) == []
    assert "F821" not in unrelated.content
    assert fixed(fix) == [("/app.py", "F821")]
    assert "It fixed these:\n/app.py:2:16: error F821" in fix.content
    assert str(tmp_path) not in "".join(m.content for m in messages)


def test_a_type_error_is_reported_by_the_type_server(
    tmp_path: Path, servers: list[Diagnostics]
) -> None:
    (tmp_path / "app.py").write_text(SOURCE)
    messages = run(
        tmp_path,
        [
            tool_call("read_file", file_path="/app.py"),
            edit("/app.py", "COUNT = 1", 'COUNT = total(["a"])'),
        ],
        servers,
        table=ONLY_TY,
    )
    assert introduced(messages[1]) == [("/app.py", "invalid-argument-type")]
    assert "error invalid-argument-type" in messages[1].content


def test_a_rename_reports_the_broken_caller_in_another_file(
    tmp_path: Path, servers: list[Diagnostics]
) -> None:
    (tmp_path / "app.py").write_text(SOURCE)
    messages = run(
        tmp_path,
        [
            tool_call(
                "write_file", file_path="/main.py", content="from app import total\n\ntotal([1])\n"
            ),
            tool_call("read_file", file_path="/app.py"),
            edit("/app.py", "def total(", "def grand_total("),
        ],
        servers,
        table=ONLY_TY,
    )
    assert introduced(messages[0]) == []
    assert ("/main.py", "unresolved-import") in introduced(messages[2]) or (
        "/main.py",
        "missing-module-member",
    ) in introduced(messages[2])


def test_apply_patch_reports_what_its_files_introduced(
    tmp_path: Path, servers: list[Diagnostics]
) -> None:
    (tmp_path / "app.py").write_text(SOURCE)
    patch = (
        "*** Begin Patch\n*** Update File: app.py\n@@\n-COUNT = 1\n+COUNT = missing\n"
        "*** Add File: extra.py\n+print(other)\n*** End Patch"
    )
    messages = run(
        tmp_path,
        [tool_call("read_file", file_path="/app.py"), tool_call("apply_patch", patch=patch)],
        servers,
        table=ONLY_RUFF,
    )
    assert introduced(messages[1]) == [("/app.py", "F821"), ("/extra.py", "F821")]


def test_diagnostics_off_for_one_tool(tmp_path: Path, servers: list[Diagnostics]) -> None:
    (tmp_path / "app.py").write_text(SOURCE)
    messages = run(
        tmp_path,
        [
            tool_call("read_file", file_path="/app.py"),
            edit("/app.py", "sum(values)", "sum(valuez)"),
        ],
        servers,
        table=ONLY_RUFF,
    )
    assert introduced(messages[1]) == [("/app.py", "F821")]
    diagnostics = Diagnostics(servers=ONLY_RUFF)
    servers.append(diagnostics)
    middleware = FilesystemMiddleware(backend=LocalBackend(tmp_path), diagnostics=diagnostics)
    for tool in middleware.tools:
        if tool.name == "edit_file":
            tool.diagnostics = False
    agent = create_agent(
        ScriptedChatModel(
            turns=[
                tool_call("read_file", file_path="/app.py"),
                edit("/app.py", "COUNT = 1", "COUNT = nothing"),
                "done",
            ]
        ),
        middleware=[middleware],
    )
    result = agent.invoke({"messages": [("user", "go")]})
    last = [m for m in result["messages"] if isinstance(m, ToolMessage)][-1]
    assert "diagnostics" not in last.artifact
    middleware.toolkit.context._background.submit(lambda: None).result()  # the read's hold
    assert diagnostics.server_pids() == []  # a read never starts a server


def test_a_backend_without_local_files_says_nothing_and_starts_no_server(
    tmp_path: Path, servers: list[Diagnostics]
) -> None:
    messages = run(
        tmp_path,
        [tool_call("write_file", file_path="/app.py", content="print(nothing)\n")],
        servers,
        table=ONLY_RUFF,
        backend=StateBackend(),
    )
    assert messages[0].status == "success"
    assert "diagnostics" not in messages[0].artifact
    assert servers[0].server_pids() == []


# ----- servers that are missing, crash, hang or flood never fail the edit ---------------


def broken_edit(tmp_path: Path, servers: list[Diagnostics], table: Any, **kw: Any) -> ToolMessage:
    (tmp_path / "app.py").write_text("fine = 1\n")
    messages = run(
        tmp_path,
        [tool_call("read_file", file_path="/app.py"), edit("/app.py", "fine = 1", "BAD = 1")],
        servers,
        table=table,
        **kw,
    )
    assert messages[1].status == "success"
    assert (tmp_path / "app.py").read_text() == "BAD = 1\n"
    return messages[1]


def test_a_missing_server_is_one_sentence(tmp_path: Path, servers: list[Diagnostics]) -> None:
    table = {
        "ruff": None,
        "ty": None,
        "gone": ServerSpec(("no-such-server-51",), frozenset({".py"}), "python"),
    }
    message = broken_edit(tmp_path, servers, table)
    assert message.content.endswith(
        "Diagnostics unavailable: gone (no-such-server-51) is not installed."
    )


def test_the_fake_server_reports_a_bad_line(tmp_path: Path, servers: list[Diagnostics]) -> None:
    message = broken_edit(tmp_path, servers, fake("ok"))
    assert introduced(message) == [("/app.py", "B0")]


def test_a_server_without_pull_diagnostics_gives_the_published_ones(
    tmp_path: Path, servers: list[Diagnostics]
) -> None:
    (tmp_path / "app.py").write_text("BAD = 0\nfine = 1\n")
    messages = run(
        tmp_path,
        [
            tool_call("read_file", file_path="/app.py"),
            edit("/app.py", "fine = 1", "BAD = 1"),
            edit("/app.py", "BAD = 1", "fine = 1"),
        ],
        servers,
        table=fake("push"),
    )
    assert [i["line"] for i in messages[1].artifact["diagnostics"]["introduced"]] == [2]
    assert [i["line"] for i in messages[2].artifact["diagnostics"]["fixed"]] == [2]


def test_a_default_server_that_is_not_installed_is_skipped_silently(
    tmp_path: Path, servers: list[Diagnostics]
) -> None:
    diagnostics = Diagnostics(servers={"ruff": None, "ty": None})
    diagnostics.servers["gopls"] = ServerSpec(("no-such-gopls-51",), frozenset({".go"}), "go")
    servers.append(diagnostics)
    report = diagnostics.check(str(tmp_path), [TextChange("/main.go", None, "package main\n")])
    assert not report
    assert diagnostics.server_pids() == []


def test_a_crashing_server_is_one_sentence(tmp_path: Path, servers: list[Diagnostics]) -> None:
    message = broken_edit(tmp_path, servers, fake("crash"))
    assert message.content.endswith(
        "Diagnostics unavailable: fake stopped; it restarts on the next change."
    )


def test_a_server_crashing_twice_is_left_out(tmp_path: Path, servers: list[Diagnostics]) -> None:
    (tmp_path / "app.py").write_text("fine = 1\n")
    messages = run(
        tmp_path,
        [
            tool_call("read_file", file_path="/app.py"),
            edit("/app.py", "fine = 1", "BAD = 1"),
            edit("/app.py", "BAD = 1", "BAD = 2"),
            edit("/app.py", "BAD = 2", "BAD = 3"),
        ],
        servers,
        table=fake("crash"),
    )
    assert [m.status for m in messages] == ["success"] * 4
    assert messages[2].content.endswith(
        "fake stopped working and is no longer used for diagnostics."
    )
    assert messages[3].content.endswith(
        "fake stopped working and is no longer used for diagnostics."
    )
    assert (tmp_path / "app.py").read_text() == "BAD = 3\n"


def test_a_hanging_server_is_not_ready_within_the_timeout(
    tmp_path: Path, servers: list[Diagnostics]
) -> None:
    diagnostics = Diagnostics(servers=fake("hang"), timeout=0.5)
    servers.append(diagnostics)
    assert started(diagnostics, tmp_path) == 1  # a running server that hangs, not a slow start
    message = broken_edit(tmp_path, servers, None, diagnostics=diagnostics)
    assert message.content.endswith("Diagnostics not ready: fake did not answer within 0.5 s.")


def test_a_server_that_never_starts_is_left_out(tmp_path: Path, servers: list[Diagnostics]) -> None:
    diagnostics = Diagnostics(servers=fake("mute"), timeout=1, start_timeout=0.5)
    servers.append(diagnostics)
    change = TextChange("/app.py", "x = 1\n", "BAD = 1\n")
    first = diagnostics.check(str(tmp_path), [change])
    assert first.notes == ("Diagnostics unavailable: fake did not start within 0.5 s.",)
    assert diagnostics.server_pids() == []
    again = diagnostics.check(str(tmp_path), [change])
    assert again.notes == first.notes


def test_a_malformed_answer_is_one_sentence(tmp_path: Path, servers: list[Diagnostics]) -> None:
    message = broken_edit(tmp_path, servers, fake("garbage"), timeout=2)
    last = message.content.splitlines()[-1]
    assert last.startswith(("Diagnostics unavailable: fake", "Diagnostics not ready: fake"))


def test_a_flooding_server_is_bounded(tmp_path: Path, servers: list[Diagnostics]) -> None:
    message = broken_edit(tmp_path, servers, fake("flood"))
    shown = [line for line in message.content.splitlines() if line.startswith("/app.py:1:1:")]
    assert len(shown) == 10
    assert message.content.endswith("... and 4990 more in 1 file.")
    assert message.artifact["diagnostics"]["counts"] == {"introduced": 5000, "fixed": 0}
    assert len(message.artifact["diagnostics"]["introduced"]) == 100


# ----- changes that land outside the file tools: commands and merges ------------------


def test_a_command_s_committed_change_set_gets_its_diagnostics(
    tmp_path: Path, servers: list[Diagnostics]
) -> None:
    (tmp_path / "app.py").write_text(SOURCE)
    (tmp_path / "notes.txt").write_text("x\n")
    messages = run(
        tmp_path,
        [tool_call("execute", command="sed -i 's/sum(values)/sum(valuez)/' app.py notes.txt")],
        servers,
        table=ONLY_RUFF,
        backend=LocalBackend(tmp_path, execute=True),
    )
    assert messages[0].status == "success", messages[0].content
    assert "sum(valuez)" in (tmp_path / "app.py").read_text()
    assert introduced(messages[0]) == [("/app.py", "F821")]
    assert "/app.py:2:16: error F821 Undefined name `valuez` (ruff)" in messages[0].content
    assert str(tmp_path) not in messages[0].content.split("Exit code")[1]


def test_a_command_s_change_set_approved_later_gets_its_diagnostics(
    tmp_path: Path, servers: list[Diagnostics]
) -> None:
    """In default mode the set waits for a person; its commit is checked as an at-once one."""
    (tmp_path / "app.py").write_text(SOURCE)
    diagnostics = Diagnostics(servers=ONLY_RUFF, timeout=10.0)
    servers.append(diagnostics)
    middleware = FilesystemMiddleware(
        backend=LocalBackend(tmp_path, execute=True), diagnostics=diagnostics, mode="default"
    )
    turns = [tool_call("execute", command="sed -i 's/sum(values)/sum(valuez)/' app.py"), "done"]
    agent = create_agent(
        ScriptedChatModel(turns=turns), middleware=[middleware], checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    first = agent.invoke({"messages": [("user", "go")]}, config, version="v2")
    assert first.interrupts, "default mode asks about the command's changes"
    assert "sum(values)" in (tmp_path / "app.py").read_text()  # nothing kept yet

    after = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)

    (message,) = [m for m in after["messages"] if isinstance(m, ToolMessage)]
    assert "A person approved these changes; they are kept." in message.content
    assert "/app.py:2:16: error F821 Undefined name `valuez` (ruff)" in message.content


def test_a_branch_merge_gets_the_diagnostics_it_introduced(
    tmp_path: Path, servers: list[Diagnostics]
) -> None:
    deepagents = pytest.importorskip("deepagents")
    (tmp_path / "m.py").write_text("def f():\n    return 1\n")
    diagnostics = Diagnostics(servers=ONLY_RUFF, timeout=10)
    servers.append(diagnostics)
    files = FilesystemMiddleware(
        backend=LocalBackend(tmp_path), branches=True, diagnostics=diagnostics
    )

    def editing(name: str, new: str) -> dict[str, Any]:
        turns = [
            tool_call("read_file", call_id=f"{name}-1", file_path="/m.py"),
            tool_call(
                "edit_file",
                call_id=f"{name}-2",
                file_path="/m.py",
                old_string="return 1",
                new_string=new,
            ),
            f"{name} edited /m.py.",
        ]
        model = ScriptedChatModel(turns=turns, disable_streaming=True)
        return {
            "name": name,
            "description": f"Subagent {name}.",
            "system_prompt": "You edit files.",
            "model": model,
            "middleware": [files],
        }

    model = ScriptedChatModel(
        turns=[
            parallel(
                tool_call("task", call_id="t-a", description="Edit.", subagent_type="a"),
                tool_call("task", call_id="t-b", description="Edit.", subagent_type="b"),
            ),
            tool_call("merge", call_id="m1", branch="t-b", sides={"/m.py": "subagent"}),
            "done",
        ],
        disable_streaming=True,
    )
    agent = deepagents.create_deep_agent(
        model=model,
        middleware=[files],
        subagents=[editing("a", "return 10"), editing("b", "return missing_b")],
    )
    state = agent.invoke({"messages": [{"role": "user", "content": "Edit /m.py."}]})
    found = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert "Merged branch t-b" in found["m1"].content
    assert (tmp_path / "m.py").read_text() == "def f():\n    return missing_b\n"
    assert introduced(found["m1"]) == [("/m.py", "F821")]


def test_the_merge_after_a_task_gets_the_diagnostics_it_introduced(
    tmp_path: Path, servers: list[Diagnostics]
) -> None:
    deepagents = pytest.importorskip("deepagents")
    (tmp_path / "m.py").write_text("def f():\n    return 1\n")
    diagnostics = Diagnostics(servers=ONLY_RUFF, timeout=10)
    servers.append(diagnostics)
    files = FilesystemMiddleware(
        backend=LocalBackend(tmp_path), branches=True, diagnostics=diagnostics
    )
    subagent = ScriptedChatModel(
        turns=[
            tool_call("read_file", call_id="a-1", file_path="/m.py"),
            tool_call(
                "edit_file",
                call_id="a-2",
                file_path="/m.py",
                old_string="return 1",
                new_string="return missing_a",
            ),
            "a edited /m.py.",
        ],
        disable_streaming=True,
    )
    model = ScriptedChatModel(
        turns=[
            tool_call("task", call_id="t-a", description="Edit.", subagent_type="a"),
            "done",
        ],
        disable_streaming=True,
    )
    spec = {
        "name": "a",
        "description": "Subagent a.",
        "system_prompt": "You edit files.",
        "model": subagent,
        "middleware": [files],
    }
    agent = deepagents.create_deep_agent(model=model, middleware=[files], subagents=[spec])
    state = agent.invoke({"messages": [{"role": "user", "content": "Edit /m.py."}]})
    found = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert (tmp_path / "m.py").read_text() == "def f():\n    return missing_a\n"
    assert "merged: /m.py" in found["t-a"].text
    assert introduced(found["t-a"]) == [("/m.py", "F821")]
    assert "/m.py:2:12: error F821 Undefined name `missing_a` (ruff)" in found["t-a"].text


# ----- the read-only diagnostics tool ---------------------------------------------------


def test_the_diagnostics_tool_is_offered_only_with_servers(tmp_path: Path) -> None:
    without = FilesystemMiddleware(backend=LocalBackend(tmp_path))
    assert "diagnostics" not in {tool.name for tool in without.tools}
    diagnostics = Diagnostics(servers=ONLY_RUFF)
    with_servers = FilesystemMiddleware(backend=LocalBackend(tmp_path), diagnostics=diagnostics)
    (tool,) = [tool for tool in with_servers.tools if tool.name == "diagnostics"]
    assert tool.metadata["read_only"] is True


def test_the_diagnostics_tool_lists_a_file_s_and_a_folder_s_existing_ones(
    tmp_path: Path, servers: list[Diagnostics]
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("print(one)\n")
    (tmp_path / "pkg" / "b.py").write_text("print(two)\n")
    (tmp_path / "clean.py").write_text("print(1)\n")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "c.py").write_text("print(three)\n")
    messages = run(
        tmp_path,
        [
            tool_call("diagnostics", path="/pkg/a.py"),
            tool_call("diagnostics"),
            tool_call("diagnostics", path="/clean.py"),
        ],
        servers,
        table=ONLY_RUFF,
    )
    one, everything, clean = messages
    assert one.content == "/pkg/a.py:1:7: error F821 Undefined name `one` (ruff)"
    assert everything.content.splitlines() == [
        "/pkg/a.py:1:7: error F821 Undefined name `one` (ruff)",
        "/pkg/b.py:1:7: error F821 Undefined name `two` (ruff)",
    ]
    assert clean.content == "No diagnostics in 1 file."
    assert (tmp_path / "pkg" / "a.py").read_text() == "print(one)\n"


def test_a_notebook_cell_s_new_error_names_its_cell_and_not_the_names_of_earlier_cells(
    tmp_path: Path, servers: list[Diagnostics]
) -> None:
    book = nbformat.v4.new_notebook()
    book.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    book.cells = [
        nbformat.v4.new_code_cell("import math\nradius = 2", id="load"),
        nbformat.v4.new_markdown_cell("# Area", id="intro"),
        nbformat.v4.new_code_cell("area = math.pi * radius**2", id="area"),
    ]
    (tmp_path / "nb.ipynb").write_text(nbformat.writes(book))
    messages = run(
        tmp_path,
        [
            tool_call("read_file", file_path="/nb.ipynb"),
            tool_call(
                "notebook_edit",
                notebook_path="/nb.ipynb",
                cell_id="area",
                new_source="area = math.pi * radius**2\nprint(aera)",
            ),
        ],
        servers,
        table=ONLY_RUFF,
    )
    assert messages[1].status == "success", messages[1].content
    assert introduced(messages[1]) == [("/nb.ipynb", "F821")]
    assert "/nb.ipynb cell area:2:7: error F821 Undefined name `aera` (ruff)" in messages[1].content


# ----- what a server may do, and its life ------------------------------------------------


def message_of(message: ToolMessage) -> str:
    (found,) = message.artifact["diagnostics"]["introduced"]
    return str(found["message"])


def test_a_server_has_no_network(tmp_path: Path, servers: list[Diagnostics]) -> None:
    message = broken_edit(tmp_path, servers, fake("net"))
    assert message_of(message) == "network refused"


def test_a_server_reaches_no_socket_and_reads_only_the_workspace(
    tmp_path: Path, servers: list[Diagnostics]
) -> None:
    """Confined as the search spawner's rg: Landlock reads, seccomp sockets."""
    if confine.landlock_abi() < 1:
        pytest.skip("the kernel has no Landlock: reads are not confined here")
    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("token\n")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as service:
        service.bind(str(outside / "service.sock"))
        service.listen()
        (workspace / "app.py").write_text("fine = 1\n")
        messages = run(
            workspace,
            [
                tool_call("read_file", file_path="/app.py"),
                edit("/app.py", "fine = 1", f"BAD {secret} {outside / 'service.sock'}"),
            ],
            servers,
            table=fake("escape"),
        )
    assert message_of(messages[1]) == "loopback EPERM; unix EPERM; outside EACCES; inside ok"
    assert secret.read_text() == "token\n"


def test_an_unconfined_process_would_reach_them(tmp_path: Path) -> None:
    """The fake server's probes, run here unconfined, succeed: the test above can fail."""
    secret = tmp_path / "secret.txt"
    secret.write_text("token\n")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as service:
        service.bind(str(tmp_path / "service.sock"))
        service.listen()
        probe = (
            "import sys; sys.argv = ['fake', 'escape']; sys.stdin = open('/dev/null');"
            f"exec(open({FAKE!r}).read().split('while (message')[0]);"
            f"print(escape('BAD {secret} {tmp_path / 'service.sock'}', {secret.as_uri()!r}))"
        )
        found = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout.strip()
    assert found == "loopback ok; unix ok; outside ok; inside ok"


def test_host_paths_in_a_server_s_messages_are_hidden(
    tmp_path: Path, servers: list[Diagnostics]
) -> None:
    message = broken_edit(tmp_path, servers, fake("paths"))
    assert message_of(message) == "see /app.py and /app.py"
    assert str(tmp_path) not in message.content


def test_one_server_serves_every_thread_and_ends_when_idle(tmp_path: Path) -> None:
    # Idle after 2 s: long enough that a loaded machine reaches the first assertion
    # before the server is reaped (it is idle from the end of its last check).
    diagnostics = Diagnostics(servers=fake("ok"), timeout=10, idle_seconds=2)
    try:
        reports = []

        def check(n: int) -> None:
            change = TextChange(f"/f{n}.py", "x = 1\n", "BAD = 1\n")
            reports.append(diagnostics.check(str(tmp_path), [change]))

        threads = [threading.Thread(target=check, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert [len(report.introduced) for report in reports] == [1, 1, 1, 1]
        assert len(diagnostics.server_pids()) == 1
        for _ in range(400):  # the reaper looks every idle_seconds / 4
            if not diagnostics.server_pids():
                break
            time.sleep(0.05)
        assert diagnostics.server_pids() == []
        report = diagnostics.check(str(tmp_path), [TextChange("/g.py", None, "BAD = 2\n")])
        assert len(report.introduced) == 1
    finally:
        diagnostics.close()


def test_the_diagnostics_are_in_the_traced_tool_result(
    tmp_path: Path, servers: list[Diagnostics]
) -> None:
    class Traced(BaseCallbackHandler):
        def __init__(self) -> None:
            self.outputs: list[Any] = []

        def on_tool_end(self, output: Any, **kwargs: Any) -> None:
            self.outputs.append(output)

    (tmp_path / "app.py").write_text(SOURCE)
    diagnostics = Diagnostics(servers=ONLY_RUFF, timeout=10)
    servers.append(diagnostics)
    middleware = FilesystemMiddleware(backend=LocalBackend(tmp_path), diagnostics=diagnostics)
    model = ScriptedChatModel(
        turns=[
            tool_call("read_file", file_path="/app.py"),
            edit("/app.py", "sum(values)", "sum(valuez)"),
            "done",
        ]
    )
    traced = Traced()
    create_agent(model, middleware=[middleware]).invoke(
        {"messages": [("user", "go")]}, {"callbacks": [traced]}
    )
    edited = traced.outputs[-1]
    assert isinstance(edited, ToolMessage)
    assert "error F821 Undefined name `valuez`" in edited.content
    assert edited.artifact["diagnostics"]["counts"] == {"introduced": 1, "fixed": 0}


async def test_the_async_path_reports_the_same(tmp_path: Path, servers: list[Diagnostics]) -> None:
    (tmp_path / "app.py").write_text(SOURCE)
    diagnostics = Diagnostics(servers=ONLY_RUFF, timeout=10)
    servers.append(diagnostics)
    middleware = FilesystemMiddleware(backend=LocalBackend(tmp_path), diagnostics=diagnostics)
    model = ScriptedChatModel(
        turns=[
            tool_call("read_file", file_path="/app.py"),
            edit("/app.py", "sum(values)", "sum(valuez)"),
            "done",
        ]
    )
    result = await create_agent(model, middleware=[middleware]).ainvoke(
        {"messages": [("user", "go")]}
    )
    edited = [m for m in result["messages"] if isinstance(m, ToolMessage)][-1]
    assert introduced(edited) == [("/app.py", "F821")]


def test_a_rename_breaks_a_caller_the_agent_only_read(
    tmp_path: Path, servers: list[Diagnostics]
) -> None:
    (tmp_path / "app.py").write_text(SOURCE)
    (tmp_path / "main.py").write_text("from app import total\n\ntotal([1])\n")
    diagnostics = Diagnostics(servers=ONLY_TY, timeout=10)
    servers.append(diagnostics)
    toolkit = FileToolkit(LocalBackend(tmp_path), diagnostics=diagnostics)
    tools = {tool.name: tool for tool in toolkit.get_tools()}
    tools["read_file"].invoke({"file_path": "/main.py"})
    toolkit.context._background.submit(lambda: None).result()  # the servers hold it now
    tools["read_file"].invoke({"file_path": "/app.py"})
    edited = tools["edit_file"].invoke(
        {
            "name": "edit_file",
            "args": {
                "file_path": "/app.py",
                "old_string": "def total(",
                "new_string": "def sum_of(",
            },
            "id": "e1",
            "type": "tool_call",
        }
    )
    assert introduced(edited) == [("/main.py", "missing-module-member")]
