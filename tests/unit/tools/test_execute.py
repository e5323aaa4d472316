"""execute: output format, status, timeouts, the command policy, and where it is offered."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from langchain_fstools import (
    CompositeBackend,
    FilesystemMiddleware,
    FileToolkit,
    Limits,
    LocalBackend,
    Sandbox,
    StateBackend,
)
from langchain_fstools.core.results import LimitHit
from langchain_fstools.errors import CommandRefused, ExecutionUnsupported
from langchain_fstools.shell.policy.policy import CommandPolicy
from langchain_fstools.tools import ExecuteTool
from langchain_fstools.tools.execute import limit_note
from langchain_fstools.tools.targets import BOUNDED_OUTPUT
from tests.unit.tools.harness import Harness


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return workspace


@pytest.fixture(params=["sync", "async"])
def call(request: pytest.FixtureRequest, root: Path) -> Any:
    def invoke(command: str, *, timeout: float | None = None, **settings: Any) -> ToolMessage:
        (tool,) = FileToolkit(
            LocalBackend(root, execute=True), tools=["execute"], **settings
        ).get_tools()
        args: dict[str, Any] = {"command": command}
        if timeout is not None:
            args["timeout"] = timeout
        tool_call = {"type": "tool_call", "name": "execute", "id": "c1", "args": args}
        if request.param == "sync":
            return tool.invoke(tool_call)
        return asyncio.run(tool.ainvoke(tool_call))

    return invoke


def test_output_then_one_exit_code_line(call: Any) -> None:
    message = call("echo hello; echo oops >&2")
    assert message.status == "success"
    assert message.content == "hello\n[stderr] oops\nExit code: 0"
    assert message.artifact["exit_code"] == 0


def test_a_non_zero_exit_is_a_normal_result(call: Any) -> None:
    message = call("echo failing; exit 3")
    assert message.status == "success"
    assert message.content == "failing\nExit code: 3"
    assert message.content.count("Exit code") == 1


def test_no_output_says_so(call: Any) -> None:
    assert call("true").content == "(no output)\nExit code: 0"


def test_runs_in_the_workspace_root(call: Any, root: Path) -> None:
    message = call("echo data > made.txt && pwd")
    assert message.content == f"{root.resolve()}\nExit code: 0\nChanged:\nA /made.txt"
    assert (root / "made.txt").read_text() == "data\n"


def test_timeout_is_an_error_with_the_output_so_far(call: Any, root: Path) -> None:
    started = time.monotonic()
    message = call("echo started; sleep 1000 & sleep 1000", timeout=1)
    assert time.monotonic() - started < 3
    assert message.status == "error"
    assert message.content.startswith(
        "started\nError: the command did not finish within 1 second and"
    )
    assert str(root) not in message.content


@pytest.mark.parametrize("timeout", [0, -5])
def test_a_timeout_that_is_not_positive_is_refused(call: Any, timeout: float) -> None:
    message = call("echo never", timeout=timeout)
    assert message.status == "error"
    assert "not a positive number of seconds" in message.content
    assert "never" not in message.content


def test_a_timeout_above_the_maximum_is_refused(call: Any) -> None:
    message = call("echo never", timeout=3601)
    assert message.status == "error"
    assert "above the maximum of 3600 seconds" in message.content
    capped = call("echo never", timeout=50, execute_timeout=5, execute_max_timeout=10)
    assert "never" not in capped.content


def test_the_output_cap_comes_from_the_settings(call: Any) -> None:
    message = call("head -c 5000 /dev/zero | tr '\\0' x", execute_output_limit=100)
    assert "bytes of output omitted" in message.content
    assert message.artifact["dropped_bytes"] == 4900


def test_an_empty_command_is_refused(call: Any) -> None:
    message = call("   ")
    assert message.status == "error"
    assert "command" in message.content


DANGEROUS = {
    "rm -rf /": "recursive_delete",
    "rm  -rf   /*": "recursive_delete",
    "\\rm -fr ~": "recursive_delete",
    "/bin/rm -r -f /usr": "recursive_delete",
    "rm --no-preserve-root -rf /x": "recursive_delete",
    "chmod -R 777 /": "recursive_permissions",
    "sudo apt-get install x": "privilege",
    "ls; sudo ls": "privilege",
    "ls && /usr/bin/sudo ls": "privilege",
    "ls | 's'udo tee x": "privilege",
    "echo $(sudo id)": "privilege",
    "bash -c 'sudo ls'": "privilege",
    "env A=1 timeout 5 sudo ls": "privilege",
    "find . -exec sudo rm {} \\;": "privilege",
    "su -c id": "privilege",
    "shutdown -h now": "power",
    "reboot": "power",
    "systemctl poweroff": "power",
    "mkfs.ext4 /dev/sdb1": "disk",
    "echo x > /dev/sda": "device_write",
    "dd if=/dev/zero of=/dev/sda bs=1M": "device_write",
    ":(){ :|:& };:": "fork_bomb",
    "bomb() { bomb | bomb & }; bomb": "fork_bomb",
}


@pytest.mark.parametrize(("command", "rule"), DANGEROUS.items())
def test_dangerous_commands_are_refused_by_default(command: str, rule: str) -> None:
    refusal = CommandPolicy().check(command)
    assert refusal is not None
    assert refusal.rule == rule


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf build/ dist",
        "rm -rf /tmp/scratch",
        "echo 'sudo is just a word'",
        "grep -rn sudo .",
        "echo x > /dev/null 2>/dev/stderr",
        "dd if=in of=out",
        "f() { echo hi; }; f",
        "pytest -q tests/",
    ],
)
def test_ordinary_commands_pass(command: str) -> None:
    assert CommandPolicy().check(command) is None


def test_a_refusal_is_an_error_that_says_why_and_runs_nothing(call: Any, root: Path) -> None:
    message = call("touch ran.txt; sudo ls")
    assert message.status == "error"
    assert message.content.startswith("Error: command refused: `sudo`")
    assert not (root / "ran.txt").exists()


def test_the_deny_list_refuses_matching_commands_anywhere() -> None:
    policy = CommandPolicy(deny=["git push", "curl"])
    assert policy.check("git push --force") == CommandRefused(
        "deny", "`git push --force` matches the deny pattern 'git push'"
    )
    assert policy.check("ls | /usr/bin/curl x") is not None
    assert policy.check("git status") is None


def test_the_allow_list_admits_only_matching_commands() -> None:
    policy = CommandPolicy(allow=["pytest", "git status", "python*"])
    assert policy.check("cd src && pytest -q | tee log") is not None  # tee is not allowed
    assert policy.check("cd src && timeout 60 pytest -q") is None
    assert policy.check("python3 -m build") is None
    assert policy.check("git status -s") is None
    refusal = policy.check("git commit -m x")
    assert refusal is not None
    assert refusal.rule == "allow"
    computed = policy.check("$CMD x")
    assert computed is not None
    assert "computed at run time" in computed.reason


def test_deny_wins_over_allow_and_dangerous_can_be_switched_off() -> None:
    assert CommandPolicy(allow=["git*"], deny=["git push"]).check("git push") is not None
    assert CommandPolicy(block_dangerous=False).check("sudo ls") is None


def test_an_invalid_pattern_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="empty"):
        CommandPolicy(deny=[" "])


def test_the_policy_comes_from_the_settings(call: Any) -> None:
    message = call("echo hi", command_policy=CommandPolicy(deny=["echo"]))
    assert message.status == "error"
    assert "deny pattern 'echo'" in message.content


# ----- where execute is offered ------------------------------------------------------


def test_offered_by_default_only_when_the_backend_can_run_commands(root: Path) -> None:
    assert "execute" in [t.name for t in FileToolkit(LocalBackend(root, execute=True)).get_tools()]
    assert "execute" not in [t.name for t in FileToolkit(StateBackend()).get_tools()]
    composite = CompositeBackend(LocalBackend(root, execute=True), {"/mem/": StateBackend()})
    assert "execute" in [t.name for t in FileToolkit(composite).get_tools()]


def test_asking_for_execute_on_a_state_backend_fails_at_construction() -> None:
    with pytest.raises(
        ValueError, match=r"does not run commands.*LocalBackend\(root, execute=True\)"
    ):
        FileToolkit(StateBackend(), tools=["execute"])


def test_asking_for_execute_on_local_disk_without_execute_names_the_option(root: Path) -> None:
    with pytest.raises(ValueError, match=r"build it with LocalBackend\(\.\.\., execute=True\)"):
        FileToolkit(LocalBackend(root), tools=["read_file", "execute"])


def test_an_execute_tool_on_a_state_backend_reports_an_error(tmp_path: Path) -> None:
    harness = Harness("state", tmp_path)
    tool = ExecuteTool(context=harness.toolkit.context)
    runtime = harness.runtime()
    message = tool.invoke(
        {
            "type": "tool_call",
            "name": "execute",
            "id": runtime.tool_call_id,
            "args": {"command": "ls", "runtime": runtime},
        }
    )
    assert message.status == "error"
    assert "cannot run commands" in message.content


def test_metadata_marks_execute_as_mutating_and_not_concurrency_safe(root: Path) -> None:
    (tool,) = FileToolkit(LocalBackend(root, execute=True), tools=["execute"]).get_tools()
    assert tool.metadata is not None
    assert tool.metadata["read_only"] is False
    assert tool.metadata["concurrency_safe"] is False


def test_the_description_steers_away_from_shell_file_commands(root: Path) -> None:
    tools = FileToolkit(LocalBackend(root, execute=True)).get_tools()
    (tool,) = [tool for tool in tools if tool.name == "execute"]
    for phrase in ("cat", "head", "tail", "grep", "find", "sed", "echo >", "100,000"):
        assert phrase in tool.description
    timeout = tool.tool_call_schema.model_json_schema()["properties"]["timeout"]  # type: ignore[union-attr]
    assert timeout["description"].endswith("Default: 120; at most 3,600.")


def test_execute_results_are_not_excluded_from_eviction(root: Path) -> None:
    tools = FileToolkit(LocalBackend(root, execute=True)).get_tools()
    bounded = {tool.name for tool in tools if (tool.metadata or {}).get(BOUNDED_OUTPUT)}
    assert bounded == {tool.name for tool in tools} - {"execute"}


def test_timeout_via_asyncio_also_kills(root: Path) -> None:
    (tool,) = FileToolkit(LocalBackend(root, execute=True), tools=["execute"]).get_tools()
    started = time.monotonic()
    message = asyncio.run(
        tool.ainvoke(
            {
                "type": "tool_call",
                "name": "execute",
                "id": "1",
                "args": {"command": "sleep 1000", "timeout": 1},
            }
        )
    )
    assert message.status == "error"
    assert time.monotonic() - started < 3


def test_the_middleware_offers_execute_on_local_disk_only(root: Path) -> None:
    local = FilesystemMiddleware(backend=LocalBackend(root, execute=True))
    assert "execute" in [t.name for t in local.tools]
    state = FilesystemMiddleware(backend=StateBackend())
    assert "execute" not in [t.name for t in state.tools]


PATCH_COMMAND = """cd sub && apply_patch <<'EOF'
*** Begin Patch
*** Update File: a.txt
-old
+new
*** End Patch
EOF"""


def test_an_apply_patch_invocation_is_applied_in_process(call: Any, root: Path) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "a.txt").write_text("old\n")
    message = call(PATCH_COMMAND)
    assert message.status == "success", message.content
    assert message.content.startswith("Success. Updated the following files:\nM /sub/a.txt")
    assert (root / "sub" / "a.txt").read_text() == "new\n"


def test_an_apply_patch_invocation_with_more_commands_is_refused(call: Any, root: Path) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "a.txt").write_text("old\n")
    message = call(PATCH_COMMAND + "\ntouch ran")
    assert message.status == "error"
    assert "apply_patch" in message.content
    assert (root / "sub" / "a.txt").read_text() == "old\n"
    assert not (root / "ran").exists()


def test_local_disk_runs_commands_only_when_asked(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path)
    assert backend.supports_execute is False
    assert "execute" not in [t.name for t in FileToolkit(backend).get_tools()]
    assert "execute" not in [t.name for t in FilesystemMiddleware(backend=backend).tools]
    with pytest.raises(ExecutionUnsupported):
        backend.execute("touch ran", timeout=5, output_limit=100)
    assert not (tmp_path / "ran").exists()


def test_a_sandbox_without_execute_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="execute=True"):
        LocalBackend(tmp_path, sandbox="bwrap")


@pytest.mark.parametrize("sandbox", [{}, {"sandbox": None}], ids=["sandboxed", "unconfined"])
def test_a_long_line_naming_the_workspace_comes_back_whole(
    root: Path, sandbox: dict[str, Any]
) -> None:
    """No host path is split and then rewritten: a 20 KiB line comes back byte for byte.

    Commands see the workspace at its real path, which the description tells the
    model; output is never rewritten, so the only host path in it is that one, whole.
    """
    backend = LocalBackend(root, execute=True, **sandbox)
    (tool,) = FileToolkit(backend, tools=["execute"], execute_output_limit=100_000).get_tools()
    told = backend.command_root()
    assert told is not None
    assert told in tool.description
    command = 'for i in $(seq 400); do printf "%s/f " "$PWD"; done; echo'
    message = tool.invoke(
        {"type": "tool_call", "name": "execute", "id": "c1", "args": {"command": command}}
    )
    line = message.content.splitlines()[0]
    assert len(line) > 20_000
    assert line == f"{told}/f " * 400


def test_a_command_killed_at_a_limit_is_told_which_and_how_to_raise_it(root: Path) -> None:
    sandbox = Sandbox(limits=Limits(cpu_seconds=1))
    (tool,) = FileToolkit(
        LocalBackend(root, execute=True, sandbox=sandbox), tools=["execute"]
    ).get_tools()
    args = {"command": "python3 -c 'while True: pass'", "timeout": 60}
    message = tool.invoke({"type": "tool_call", "name": "execute", "id": "c1", "args": args})
    assert message.status == "success"
    assert "Exit code: 152" in message.content  # 128 + SIGXCPU
    assert "the sandbox's CPU time limit (1 second)" in message.content
    assert "Sandbox(limits=Limits(cpu_seconds=...))" in message.content
    assert message.artifact["limit"] == {"name": "cpu_seconds", "value": 1}


@pytest.mark.parametrize(
    ("limit", "words"),
    [
        (LimitHit("memory", 2 << 30), "ran out of memory at the sandbox's memory limit (2 GiB)"),
        (LimitHit("memory", 100_000_000), "memory limit (100,000,000 bytes)"),
        (LimitHit("processes", 64), "refused at the sandbox's process limit (64 processes)"),
        (LimitHit("file_size", 1 << 20), "stopped at the sandbox's file size limit (1 MiB)"),
    ],
)
def test_the_limit_note_names_the_limit_its_value_and_the_setting(
    limit: LimitHit, words: str
) -> None:
    note = limit_note(limit)
    assert words in note
    assert f"Sandbox(limits=Limits({limit.name}=...))" in note


@pytest.mark.parametrize(
    ("sandbox", "said", "unsaid"),
    [
        (Sandbox(), "- No network (ask the user).", "Network"),
        (
            Sandbox(network=["pypi.org", "files.pythonhosted.org"]),
            "- Network only to pypi.org, files.pythonhosted.org (HTTP(S)).",
            "No network",
        ),
        (Sandbox(network=True), "- Network on.", "No network"),
        (None, "- Network on.", "No network"),  # unconfined: the host's network
    ],
)
def test_the_description_says_which_network_commands_have(
    tmp_path: Path, sandbox: Sandbox | None, said: str, unsaid: str
) -> None:
    tools = FileToolkit(LocalBackend(tmp_path, execute=True, sandbox=sandbox)).get_tools()
    (execute,) = [tool for tool in tools if tool.name == "execute"]
    assert said in execute.description
    assert unsaid not in execute.description.replace(said, "")


def test_parallel_subagents_without_a_thread_id_get_sessions_of_their_own() -> None:
    """A graph run with no checkpointer: each subagent's task names a session of its own.

    A subagent's session ends with its call; shared, the first to end killed the other's
    running command ("the sandbox session ended").
    """
    from types import SimpleNamespace  # noqa: PLC0415

    from langchain_fstools.shell.session.session import in_session  # noqa: PLC0415
    from langchain_fstools.tools.execute import session_of  # noqa: PLC0415

    def runtime(namespace: str) -> Any:
        return SimpleNamespace(config={"configurable": {"checkpoint_ns": namespace}})

    first = session_of(runtime("tools:1|task:a|tools:9"))
    second = session_of(runtime("tools:1|task:b|tools:9"))
    assert first != second
    assert first == session_of(runtime("tools:1|task:a|tools:10"))  # kept step to step
    with in_session("mcp-client"):  # no graph: the caller's session
        assert session_of(SimpleNamespace(config={})) == "mcp-client"
