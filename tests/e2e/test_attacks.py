"""Attacks on `execute`, end to end through `create_agent` with a scripted model (issue 24).

Each attack is one `execute` call a model could make, with the README's configuration.
What must hold: an allow rule never runs a computed line without a person; deny rules
fail closed on code-string sinks and unlisted wrappers; the default sandbox holds as
root (no capabilities, no unmount, no entering the agent's namespaces, no network, no
host Unix socket, no credential file in a home directory, none of the agent's secret
variables); no process outlives the call; the default policy refuses deleting `/` and
home however spelled. Controls show that ordinary work keeps working in the sandbox.
The streaming control is tests/e2e/test_progress.py, which runs in the default sandbox.
The same sandbox escapes as an unprivileged user: tests/integration/test_sandbox_unprivileged.py.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langchain_fstools import FilesystemMiddleware, LocalBackend
from langchain_fstools.permissions.rules import Permission
from langchain_fstools.shell.policy.policy import CommandPolicy
from langchain_fstools.shell.sandbox.sandbox import Sandbox
from langchain_fstools.testing import ScriptedChatModel, tool_call
from tests.e2e.agent_runs import Outcome, run_command, surviving_sleepers

README_RULES = [Permission(operations=["execute"], commands=["pytest", "git status"])]
CANARY = "sk-canary-fstools-24"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "secrets").mkdir(parents=True)
    (root / "victim.txt").write_text("keep me\n")
    (root / "secrets" / "key").write_text("SECRET-KEY\n")
    return root


def _intact(root: Path) -> bool:
    return (root / "victim.txt").read_text() == "keep me\n" and not (root / "leaked.txt").exists()


# ----- allow-rule escalations -------------------------------------------------------------

ESCALATIONS = [
    "v='x[$(rm victim.txt)]'; git status $((v))",
    "v='$(rm victim.txt)'; git status \"${v@P}\"",
    "v='x[$(cp secrets/key leaked.txt)]'; git status $((v))",
    "test -v 'x[$(rm victim.txt)]'",
    "[ -v 'x[$(rm victim.txt)]' ]",
    "printf -v 'x[$(rm victim.txt)]' 1",
    "v='x[$(rm victim.txt)]'; (( v )); git status",
    "s=abc; v='x[$(rm victim.txt)]'; git status ${s:v}",
]


@pytest.mark.parametrize("command", ESCALATIONS)
def test_an_allow_rule_asks_for_a_computed_line(workspace: Path, command: str) -> None:
    """Where a command writes in place, the rules decide before it runs."""
    direct = Sandbox(workspace="direct")
    backend = LocalBackend(workspace, execute=True, sandbox=direct)
    outcome = run_command(backend, command, mode="accept_edits", permissions=README_RULES)
    assert outcome.asked, outcome.text
    assert _intact(workspace)


@pytest.mark.parametrize("command", ESCALATIONS)
def test_a_contained_computed_line_runs_and_its_effect_is_asked_about(
    workspace: Path, command: str
) -> None:
    """On a copy-on-write view the line runs; in default mode its effect waits for a person."""
    backend = LocalBackend(workspace, execute=True)
    outcome = run_command(backend, command, mode="default", permissions=README_RULES)
    assert outcome.asked or "Changed:" not in outcome.text, outcome.text
    assert _intact(workspace)


@pytest.mark.parametrize("command", ESCALATIONS)
def test_an_allow_list_refuses_a_computed_line(workspace: Path, command: str) -> None:
    policy = CommandPolicy(allow=["git status", "pytest"])
    outcome = run_command(
        LocalBackend(workspace, execute=True), command, mode="bypass", command_policy=policy
    )
    assert not outcome.ran
    assert "allow list" in outcome.text
    assert _intact(workspace)


# ----- deny rules: code-string sinks and wrappers --------------------------------------------

DODGES = [
    "trap 'rm victim.txt' EXIT",
    "mapfile -C 'rm victim.txt' -c 1 < secrets/key",
    "coproc rm victim.txt",
    "v='$(rm victim.txt)'; echo \"${v@P}\"",
    "v='x[$(rm victim.txt)]'; (( v ))",
    "v='x[$(rm victim.txt)]'; [[ $v -eq 0 ]]",
    "s=abc; v='x[$(rm victim.txt)]'; echo ${s:v}",
    "test -v 'x[$(rm victim.txt)]'",
    "[ -v 'x[$(rm victim.txt)]' ]",
    "printf -v 'x[$(rm victim.txt)]' 1",
    "hash -p /bin/rm ls; ls victim.txt",
    "BASH_ENV=<(echo rm victim.txt) bash -c true",
    "env 'BASH_FUNC_ls%%=() { rm victim.txt; }' bash -c ls",
    "BASH_CMDS[ls]=/bin/rm; ls victim.txt",
    "shopt -s expand_aliases; BASH_ALIASES[ls]=rm; ls victim.txt",
    "env -S'rm victim.txt'",
    "env --split-string='rm victim.txt'",
    "flock victim.lock rm victim.txt",
    "setpriv rm victim.txt",
    "unshare rm victim.txt",
    "taskset 1 rm victim.txt",
    "chrt 0 rm victim.txt",
    "prlimit rm victim.txt",
    "strace -o /dev/null rm victim.txt",
    "script -qc 'rm victim.txt' /dev/null",
    "sg root -c 'rm victim.txt'",
    "runuser -u root -- rm victim.txt",
    "nice ionice stdbuf -o0 setsid rm victim.txt",
    "watch -n 1 rm victim.txt",
]


@pytest.mark.parametrize("command", DODGES)
@pytest.mark.parametrize("where", ["rule", "policy"])
def test_a_deny_on_rm_is_not_dodged(workspace: Path, command: str, where: str) -> None:
    backend = LocalBackend(workspace, execute=True)
    if where == "rule":
        rules = [Permission(operations=["execute"], commands=["rm"], action="deny")]
        outcome = run_command(backend, command, mode="bypass", permissions=rules)
    else:
        policy = CommandPolicy(deny=["rm"])
        outcome = run_command(backend, command, mode="bypass", command_policy=policy)
    assert not outcome.ran, outcome.text
    assert not outcome.asked
    assert _intact(workspace)


# ----- sandbox escapes as root ---------------------------------------------------------------


def _run(backend: LocalBackend, command: str) -> Outcome:
    outcome = run_command(backend, command, mode="bypass")
    assert outcome.ran, outcome.text
    return outcome


def test_running_as_root_a_command_has_no_capability(workspace: Path) -> None:
    assert os.geteuid() == 0, "CI runs as root; the unprivileged run is a separate test"
    outcome = _run(LocalBackend(workspace, execute=True), "grep Cap /proc/self/status")
    for line in ("CapEff:\t0000000000000000", "CapPrm:\t0000000000000000"):
        assert line in outcome.text


@pytest.mark.parametrize(
    "command",
    [
        "umount -l /proc && ls /proc/1/root",
        "nsenter -t 1 -a true",
        "nsenter -t 1 -n ip link",
        "mount -t tmpfs none /mnt",
        "chroot / true",
        "echo escaped > /var/tmp/fstools-escaped",
        "kill -9 1",
    ],
)
def test_root_inside_the_sandbox_cannot_leave_it(workspace: Path, command: str) -> None:
    outcome = _run(LocalBackend(workspace, execute=True), command + "; echo status=$?")
    assert "status=0" not in outcome.text
    assert not Path("/var/tmp/fstools-escaped").exists()


def test_there_is_no_network(workspace: Path) -> None:
    outcome = _run(
        LocalBackend(workspace, execute=True),
        "python3 -c 'import socket; print([n for _, n in socket.if_nameindex()])'",
    )
    assert "['lo']" in outcome.text


def test_no_host_unix_socket_can_be_connected(tmp_path: Path, workspace: Path) -> None:
    folder = Path(f"/var/tmp/fstools-socket-{os.getpid()}")
    folder.mkdir(exist_ok=True)
    path = folder / "s"
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]);"
                " s.listen(); print('ready', flush=True); s.accept()[0].sendall(b'host-secret')"
            ),
            str(path),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert server.stdout is not None
        assert server.stdout.readline() == b"ready\n"
        connect = (
            "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX);"
            f' s.connect("{path}"); print(s.recv(99))\''
        )
        boxed = run_command(LocalBackend(workspace, execute=True), connect, mode="bypass")
        assert "host-secret" not in boxed.text
        assert "Operation not permitted" in boxed.text
        unconfined = run_command(
            LocalBackend(workspace, execute=True, sandbox=None), connect, mode="bypass"
        )
        assert "host-secret" in unconfined.text  # the control: the socket does answer
    finally:
        server.kill()
        server.wait()
        path.unlink(missing_ok=True)
        folder.rmdir()


CREDENTIALS = [
    ".ssh/id_rsa",
    ".aws/credentials",
    ".azure/accessTokens.json",
    ".config/gcloud/credentials.db",
    ".kube/config",
    ".docker/config.json",
    ".gnupg/private.key",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    ".claude/settings.json",
    ".codex/auth.json",
]


@pytest.mark.parametrize("method", ["bwrap", "landlock"])
def test_credential_files_in_home_cannot_be_read(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    # bwrap masks them even in a workspace that is (or holds) a home directory;
    # Landlock alone cannot hide a path under the writable workspace, so there the
    # home lies beside it
    home = workspace / "home" if method == "bwrap" else tmp_path / "home"
    for name in CREDENTIALS:
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(f"CREDENTIAL {name}\n")
    (home / ".bashrc").write_text("ordinary\n")
    (home / "notes.txt").write_text("NOTES\n")
    monkeypatch.setenv("HOME", str(home))
    backend = LocalBackend(workspace, execute=True, sandbox=Sandbox(method=method))
    reads = "; ".join(f"cat {home}/{name}" for name in CREDENTIALS)
    outcome = _run(backend, f"{reads}; cat {home}/.bashrc; cat {home}/notes.txt")
    assert "CREDENTIAL" not in outcome.text
    assert "ordinary" in outcome.text  # what tools need stays readable (start-up files)
    # bwrap shows a home's allow-list only; Landlock alone masks the credentials only
    assert ("NOTES" in outcome.text) == (method == "landlock")


def test_the_agents_secret_variables_never_reach_a_command(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("GITHUB_TOKEN", CANARY)
    for inherit in (None, True):
        backend = LocalBackend(workspace, execute=True, inherit_env=inherit)
        outcome = _run(
            backend,
            "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; cat /proc/1/environ",
        )
        assert CANARY not in outcome.text


# ----- processes left behind ---------------------------------------------------------------


LEFT_BEHIND = [
    "setsid sleep {d} &",
    "nohup setsid sleep {d} > /dev/null 2>&1 &",
    (
        "python3 -c 'import os\nif os.fork() == 0:\n os.setsid()\n"
        ' if os.fork() == 0: os.execvp("sleep", ["sleep", "{d}"])\''
    ),
]


@pytest.mark.parametrize("spelling", LEFT_BEHIND)
@pytest.mark.parametrize("sandbox", [Sandbox(), Sandbox(method="landlock"), None])
def test_no_process_outlives_the_call(
    workspace: Path, spelling: str, sandbox: Sandbox | None
) -> None:
    duration = f"{2000 + time.monotonic_ns() % 1_000_000}.{os.getpid()}"
    backend = LocalBackend(workspace, execute=True, sandbox=sandbox)
    _run(backend, spelling.format(d=duration) + "\nsleep 0.3")
    assert not surviving_sleepers(duration), f"{spelling!r} left a process behind"


DISARM = (
    "echo benign > note.txt; supervisor=$(cut -d' ' -f4 /proc/$PPID/stat);"
    " prlimit --pid $supervisor --nofile=0:0; prlimit --pid $PPID --nofile=0:0;"
    " setsid bash -c 'exec 3<>note.txt; sleep 1; echo EVIL >&3' </dev/null >/dev/null 2>&1 &"
    " sleep 0.2"
)
"""Take from its keeper and the supervisor every descriptor they may open, leave a process
holding the file it made open, and change it once it is committed (the inode is linked)."""


@pytest.mark.parametrize("mode", ["accept_edits", "default"])
def test_a_command_cannot_disarm_its_keeper_to_change_a_file_after_its_commit(
    workspace: Path, mode: str
) -> None:
    backend = LocalBackend(workspace, execute=True)
    try:
        files = FilesystemMiddleware(backend=backend, mode=mode)
        call = AIMessage(
            "", tool_calls=[{"name": "execute", "args": {"command": DISARM}, "id": "c"}]
        )
        graph = create_agent(
            ScriptedChatModel(turns=[call, AIMessage("done")]),
            middleware=[files],
            checkpointer=InMemorySaver(),
        )
        config: Any = {"configurable": {"thread_id": "t"}}
        first = graph.invoke({"messages": [("user", "go")]}, config, version="v2")
        if mode == "default":
            (asked,) = first.interrupts
            assert "+benign\n" in asked.value["action_requests"][0]["diff"]
            graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
        assert (workspace / "note.txt").read_text() == "benign\n"
        time.sleep(2)  # the left process's second has passed, had it lived
        assert (workspace / "note.txt").read_text() == "benign\n"
        after = backend.execute(
            "ulimit -n; prlimit --nofile=64 sh -c 'ulimit -n'; nice -n 5 ionice -c 3 echo alive",
            timeout=30,
            output_limit=1000,
        )  # the session still starts commands, and a command still limits its own processes
        assert after.output.split() == ["4096", "64", "alive"], after.output
    finally:
        backend.close()


# ----- read-deny rules hold for commands ---------------------------------------------------

README_DENY = [Permission(operations=["read", "write"], paths=["/secrets"], action="deny")]
READS = [
    "cat secrets/key",
    "python3 -c 'print(open(\"secrets/key\").read())'",
    "cat secre*/*",
    "tar -cO secrets",
    "grep -r SECRET . ; find . -type f -exec cat {} +",
]


def _tool_texts(outcome: Outcome) -> str:
    return outcome.text if outcome.message is not None else ""


@pytest.mark.parametrize("command", READS)
def test_a_path_a_rule_denies_reading_is_hidden_from_commands(
    workspace: Path, command: str
) -> None:
    """The README's rule in `default` mode: the contained command runs, and sees no secret."""
    backend = LocalBackend(workspace, execute=True)
    outcome = run_command(backend, command, mode="default", permissions=README_DENY)
    assert outcome.message is not None, "the command ran without a person"
    assert "SECRET-KEY" not in _tool_texts(outcome)
    assert (workspace / "secrets" / "key").read_text() == "SECRET-KEY\n"  # left as it was


def test_what_appears_under_a_denied_path_after_the_session_started_is_hidden(
    workspace: Path,
) -> None:
    """Found at each command's start: a denied folder made, and a denied glob matched, later."""
    rules = [
        Permission(operations=["read"], paths=["/later"], action="deny"),
        Permission(operations=["read"], paths=["**/*.pem"], action="deny"),
    ]
    backend = LocalBackend(workspace, execute=True)
    first = run_command(backend, "cat victim.txt", mode="default", permissions=rules)
    assert "keep me" in first.text  # the session runs, and what is allowed is seen
    (workspace / "later").mkdir()
    (workspace / "later" / "token").write_text("LATER-TOKEN\n")
    (workspace / "certs").mkdir()
    (workspace / "certs" / "site.pem").write_text("PEM-KEY\n")
    (workspace / "certs" / "site.crt").write_text("PUBLIC-CERT\n")

    outcome = run_command(
        backend, "cat later/token certs/site.pem certs/site.crt", mode="default", permissions=rules
    )

    assert "LATER-TOKEN" not in outcome.text
    assert "PEM-KEY" not in outcome.text
    assert "PUBLIC-CERT" in outcome.text  # beside a denied file, an allowed one is seen


def test_a_background_command_and_an_async_agent_do_not_see_a_denied_path_either(
    workspace: Path,
) -> None:
    """The process table's commands, and the async path, run with the same masks."""
    backend = LocalBackend(workspace, execute=True)
    turns = [
        tool_call("execute", command="cat secrets/key; echo started; sleep 5", background=True),
        tool_call("execute", command="cat secrets/key; echo moved; sleep 5", yield_after=1),
        tool_call("process", action="read", process_id="p1"),
        tool_call("execute", command="cat secrets/key; echo direct"),
    ]
    agent = create_agent(
        ScriptedChatModel(turns=[*turns, "done"]),
        middleware=[FilesystemMiddleware(backend=backend, mode="bypass", permissions=README_DENY)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "background"}}
    try:
        result = asyncio.run(agent.ainvoke({"messages": [("user", "go")]}, config))
    finally:
        backend.close()
    texts = [str(m.content) for m in result["messages"] if isinstance(m, ToolMessage)]
    assert len(texts) == len(turns)
    assert all("SECRET-KEY" not in text for text in texts), texts
    assert "moved" in texts[1]
    assert "started" in texts[2]
    assert "direct" in texts[3]


@pytest.mark.parametrize("sandbox", [Sandbox(method="landlock"), None])
def test_without_a_mount_namespace_a_command_that_could_see_a_denied_path_is_refused(
    workspace: Path, sandbox: Sandbox | None
) -> None:
    """Nothing can hide a workspace path there: in bypass the command fails closed, naming
    the rule (in `default` it asks first: tests/e2e/test_hidden_from_commands.py)."""
    backend = LocalBackend(workspace, execute=True, sandbox=sandbox)
    outcome = run_command(backend, "cat secrets/key", mode="bypass", permissions=README_DENY)
    assert outcome.message is not None
    assert outcome.message.status == "error"
    assert "SECRET-KEY" not in outcome.text
    assert "permission rule 1 (it denies reading /secrets" in outcome.text


# ----- deleting / and home -----------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "cd / && rm -rf *",
        "rm -rf ../../../../../..",
        "cd ~ && rm -rf .",
        "find / -delete",
        "chmod -R 000 ../../../..",
    ],
)
def test_the_default_policy_refuses_deleting_root_or_home(workspace: Path, command: str) -> None:
    outcome = run_command(LocalBackend(workspace, execute=True), command, mode="bypass")
    assert not outcome.ran
    assert "root, top-level or home directory" in outcome.text
    assert _intact(workspace)


# ----- controls: ordinary work in the default sandbox -----------------------------------------


def test_reading_and_writing_the_workspace_works(workspace: Path) -> None:
    outcome = _run(
        LocalBackend(workspace, execute=True),
        "cat victim.txt && mkdir -p out && echo made > out/new.txt && mv out/new.txt moved.txt",
    )
    assert "keep me" in outcome.text
    assert (workspace / "moved.txt").read_text() == "made\n"


def test_git_status_in_a_repository_works(workspace: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    outcome = run_command(
        LocalBackend(workspace, execute=True),
        "git status --short",
        mode="accept_edits",
        permissions=README_RULES,
    )
    assert outcome.ran, outcome.text
    assert "?? victim.txt" in outcome.text


def test_python_and_pytest_work(workspace: Path) -> None:
    (workspace / "test_sample.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    outcome = _run(
        LocalBackend(workspace, execute=True),
        f"{sys.executable} -c 'print(6 * 7)' && {sys.executable} -m pytest -q -p no:randomly"
        " test_sample.py",
    )
    assert "42" in outcome.text
    assert "1 passed" in outcome.text


def test_exit_codes_reach_the_model(workspace: Path) -> None:
    outcome = _run(LocalBackend(workspace, execute=True), "echo before; exit 3")
    assert "before" in outcome.text
    assert "3" in outcome.text.splitlines()[-1] or "exit code 3" in outcome.text


def test_the_timeout_kills_and_says_so(workspace: Path) -> None:
    backend = LocalBackend(workspace, execute=True)
    started = time.monotonic()
    call = run_command(backend, "echo started; sleep 60", mode="bypass", timeout=1)
    assert time.monotonic() - started < 10
    assert call.message is not None
    assert call.message.status == "error"
    assert "did not finish within 1 second" in call.text
    assert "started" in call.text
