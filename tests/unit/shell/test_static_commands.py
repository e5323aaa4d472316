"""Command rules that cannot be escalated (issue 24): allow only static lines, deny fails closed."""

from __future__ import annotations

import pytest

from langchain_fstools.permissions.rules import Permission, Policy
from langchain_fstools.shell.analysis import analyse
from langchain_fstools.shell.policy import CommandPolicy

README_RULES = [Permission(operations=["execute"], commands=["pytest", "git status"])]

ESCALATIONS = [
    "v='x[$(rm victim.txt)]'; git status $((v))",
    "v='$(rm victim.txt)'; git status \"${v@P}\"",
    "v='x[$(cp secrets/key leaked.txt)]'; git status $((v))",
    "test -v 'x[$(rm victim.txt)]'",
    "[ -v 'x[$(rm victim.txt)]' ]",
    "[[ -v 'x[$(rm victim.txt)]' ]]",
    "printf -v 'x[$(rm victim.txt)]' 1",
    "read 'x[$(rm victim.txt)]' < /dev/null",
    "declare 'x[$(rm victim.txt)]'=1",
    "declare -n r='x[$(rm victim.txt)]'; r=1",
    "unset 'x[$(rm victim.txt)]'",
    "let 'x[$(rm victim.txt)]'",
    "v='x[$(rm victim.txt)]'; (( v ))",
    "v='x[$(rm victim.txt)]'; [[ $v -eq 0 ]]",
    "s=abc; v='x[$(rm victim.txt)]'; echo ${s:v}",
    "v='x[$(rm victim.txt)]'; for ((i=v; i<1; i++)); do :; done",
    "a['$(rm victim.txt)']=1",
    'cat <<< "$(rm victim.txt)"',
    "PATH=. git status",
    "GIT_EXTERNAL_DIFF=./x git status",
]


@pytest.mark.parametrize("command", ESCALATIONS)
def test_an_allow_rule_never_covers_a_computed_line(command: str) -> None:
    analysis = analyse(command)
    assert not analysis.static, command
    for mode in ("default", "accept_edits"):
        verdict = Policy(README_RULES, mode=mode).decide_command(command)
        assert verdict.action == "ask", (mode, command, verdict)


@pytest.mark.parametrize("command", ESCALATIONS)
def test_an_allow_list_refuses_a_computed_line(command: str) -> None:
    refusal = CommandPolicy(allow=["git status", "pytest"]).check(command)
    assert refusal is not None, command
    assert refusal.rule == "allow"


def test_in_bypass_a_computed_line_runs_and_plan_still_denies() -> None:
    command = ESCALATIONS[0]
    assert Policy(README_RULES, mode="bypass").decide_command(command).action == "allow"
    assert Policy(README_RULES, mode="plan").decide_command(command).action == "deny"


@pytest.mark.parametrize(
    "command",
    ["git status", "pytest -q tests/", "git status -s && pytest", "pytest tests/*.py > log.txt"],
)
def test_a_static_line_is_still_allowed(command: str) -> None:
    assert analyse(command).static
    assert Policy(README_RULES).decide_command(command).action == "allow"
    assert CommandPolicy(allow=["git status", "pytest"]).check(command) is None


SINKS_AND_WRAPPERS = [
    "v='$(rm victim.txt)'; echo \"${v@P}\"",
    "v='x[$(rm victim.txt)]'; (( v ))",
    "v='x[$(rm victim.txt)]'; [[ $v -eq 0 ]]",
    "s=abc; v='x[$(rm victim.txt)]'; echo ${s:v}",
    "v='x[$(rm victim.txt)]'; echo $((v))",
    "test -v 'x[$(rm victim.txt)]'",
    "[ -v 'x[$(rm victim.txt)]' ]",
    "printf -v 'x[$(rm victim.txt)]' 1",
    "read 'x[$(rm victim.txt)]' < /dev/null",
    "trap 'rm victim.txt' EXIT",
    "trap -- 'rm victim.txt' EXIT",
    "mapfile -C 'rm victim.txt' -c 1 < /etc/hostname",
    "readarray -tC 'rm victim.txt' -c 1 < /etc/hostname",
    "coproc rm victim.txt",
    "coproc W { rm victim.txt; }",
    "hash -p /bin/rm ls; ls victim.txt",
    "BASH_ENV=<(echo rm victim.txt) bash -c true",
    "export BASH_ENV=x; bash -c true",
    "env 'BASH_FUNC_ls%%=() { rm victim.txt; }' bash -c ls",
    "BASH_CMDS[ls]=/bin/rm; ls victim.txt",
    "BASH_ALIASES[ls]=rm; ls victim.txt",
    "env -S'rm victim.txt'",
    "env -S 'rm victim.txt'",
    "env --split-string='rm victim.txt'",
    "env --split-string 'rm victim.txt'",
    "env -iS'rm victim.txt'",
    "flock /tmp/l rm victim.txt",
    "flock /tmp/l -c 'rm victim.txt'",
    "setpriv --reuid 0 rm victim.txt",
    "unshare -r rm victim.txt",
    "taskset -c 0 rm victim.txt",
    "taskset 1 rm victim.txt",
    "chrt 1 rm victim.txt",
    "prlimit --nofile=100 rm victim.txt",
    "strace -f -o /dev/null rm victim.txt",
    "script -qc 'rm victim.txt' /dev/null",
    "script -c 'rm victim.txt' /dev/null",
    "sg root -c 'rm victim.txt'",
    "sg root 'rm victim.txt'",
    "runuser -u root -- rm victim.txt",
    "runuser root -c 'rm victim.txt'",
    "nice -n 5 rm victim.txt",
    "ionice -c 3 rm victim.txt",
    "stdbuf -o0 rm victim.txt",
    "chroot / rm victim.txt",
    "setsid -f rm victim.txt",
    "watch -n 1 rm victim.txt",
    "watch -x rm victim.txt",
    "parallel rm ::: victim.txt",
    "busybox rm victim.txt",
    "nsenter -t 1 rm victim.txt",
    "somewrapper --flag rm victim.txt",
]


@pytest.mark.parametrize("command", SINKS_AND_WRAPPERS)
def test_a_deny_rule_fails_closed_on_sinks_and_wrappers(command: str) -> None:
    refusal = CommandPolicy(deny=["rm"]).check(command)
    assert refusal is not None, command
    assert refusal.rule == "deny"
    rules = [Permission(operations=["execute"], commands=["rm"], action="deny")]
    assert Policy(rules, mode="bypass").decide_command(command).action == "deny", command


@pytest.mark.parametrize(
    "command", ["echo rm", "grep -r rm .", "git log --grep rm", "command -v rm", "ls"]
)
def test_a_plain_command_naming_a_denied_one_is_not_refused(command: str) -> None:
    assert CommandPolicy(deny=["rm"]).check(command) is None


DELETIONS = [
    "rm -rf /",
    "rm -rf ~",
    "cd / && rm -rf *",
    "cd / ; rm -rf .",
    "rm -rf ../../../../../..",
    "rm -rf ../..",
    "rm -rf ../../*",
    "cd ~ && rm -rf .",
    "cd && rm -rf ./*",
    "cd ../../../.. && rm -rf *",
    'cd "$HOME" && rm -rf .',
    "find / -delete",
    "find ~ -delete",
    "find ../../.. -delete",
    "find / -exec rm -rf {} +",
    "cd / && find . -delete",
    "chmod -R 000 ../../..",
    "chmod -R 000 /",
    "cd / && chown -R nobody .",
]


@pytest.mark.parametrize("command", DELETIONS)
def test_the_default_policy_recognises_deleting_root_and_home_however_reached(
    command: str,
) -> None:
    refusal = CommandPolicy().check(command)
    assert refusal is not None, command
    assert refusal.rule in {"recursive_delete", "recursive_permissions"}


@pytest.mark.parametrize(
    "command",
    ["rm -rf build", "rm -rf ./build", "cd src && rm -rf *", "find . -name '*.pyc' -delete"],
)
def test_deleting_inside_the_workspace_stays_allowed(command: str) -> None:
    assert CommandPolicy().check(command) is None
