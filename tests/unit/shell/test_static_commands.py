"""Command rules that cannot be escalated (issues 24, 36): allow only static lines, deny fails closed.

A line that computes a word or sets a variable is not static, so an allow rule does not
cover it; the default policy recognises deleting root and home directories however they
are reached, and fails closed on targets and folders it cannot know.
"""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_fstools.permissions.rules import Permission, Policy
from langchain_fstools.shell.policy.analysis import analyse
from langchain_fstools.shell.policy.policy import CommandPolicy

README_RULES = [Permission(operations=["execute"], commands=["pytest", "git status"])]


# ----- assignments (issue 36): any variable set in the line may change what a command runs

ASSIGNMENTS = [
    "XDG_CONFIG_HOME=cfg git status",
    "HOME=. git status",
    "PYTEST_ADDOPTS='-p evil' pytest",
    "PYTEST_PLUGINS=evil pytest",
    "MAKEFILES=evil.mk git status",
    "PERLLIB=. git status",
    "LESSOPEN='|rm victim.txt' git status",
    "GCONV_PATH=. git status",
    "PYTHONWARNINGS=ignore::evil.Warning pytest",
    "A=1 B=2 git status",
    "env XDG_CONFIG_HOME=cfg git status",
    "timeout 5 env HOME=. git status",
    "XDG_CONFIG_HOME=cfg; git status",
    "export XDG_CONFIG_HOME=cfg; git status",
    "declare -x HOME=.; git status",
    "for HOME in .; do git status; done",
    "read HOME <<< .; git status",
    "printf -v HOME .; git status",
    "mapfile HOME < /dev/null; git status",
]

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
    *ASSIGNMENTS,
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
    # issue 36: directory changes, patterns and targets computed at run time
    "pushd /; rm -rf *",
    "pushd / && rm -rf .",
    "rm -rf /home/*",
    "rm -rf /h*/*",
    "rm -rf /home/alice",
    "rm -rf ${HOME:?}/",
    'rm -rf "$HOME"',
    "rm -rf $(pwd)/../..",
    "rm -rf `pwd`/..",
    "rm -rf /{etc,usr}",
    "CDPATH=/ cd etc && rm -rf .",
    "CDPATH=/; cd etc && rm -rf .",
    "cd /home && rm -rf alice",
    'cd "$D" && rm -rf build',
    "cd - && rm -rf build",
    "popd; rm -rf build",
    "for d in a b; do rm -rf build; cd /; done",
    "find $(pwd)/.. -delete",
    "chmod -R 777 ${HOME:?}",
    "cd .. && rm -rf x",
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
    [
        "rm -rf build",
        "rm -rf ./build",
        "cd src && rm -rf *",
        "find . -name '*.pyc' -delete",
        "cd /tmp && rm -rf build",
        "rm -r /tmp/*",
        "cd src && cd lib && rm -rf *",
        "cd ./src && rm -rf .",
        "rm -rf /home/alice/project/build",
        "rm -f $X",
        "cd /; ls",
    ],
)
def test_deleting_inside_the_workspace_stays_allowed(command: str) -> None:
    assert CommandPolicy().check(command) is None


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    name=st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True),
    value=st.text(alphabet="abc./:-_=", max_size=8),
    form=st.sampled_from(["{a} git status", "{a}; git status", "export {a}; git status"]),
)
def test_whatever_variable_is_set_an_allowed_command_asks(name: str, value: str, form: str) -> None:
    command = form.format(a=f"{name}={shlex.quote(value)}")
    verdict = Policy(README_RULES, mode="accept_edits").decide_command(command)
    assert verdict.action == "ask", (command, verdict)


def test_a_line_without_assignments_stays_static() -> None:
    for command in ("git status", "env -i git status", "git status -- a=b", "echo a=b"):
        assert analyse(command).static, command


# ----- the default policy: directory changes and computed targets (issue 36)


def test_a_refusal_names_the_folder_a_relative_target_reaches() -> None:
    refusal = CommandPolicy().check("pushd /; rm -rf *")
    assert refusal is not None
    assert "* reaches /*" in refusal.reason


# ----- echo and printf write files only when allowed (issue 36)

DOCS_ALLOW = ["pytest", "python", "git status", "git diff"]


@pytest.mark.parametrize(
    "command",
    [
        "printf '[alias]\\n\\tst = !rm -rf x\\n' >> .git/config",
        "echo x > .bashrc",
        "{ echo x; } > notes.txt",
        "pytest -q > log.txt; echo done",
        "exec 3> f; echo x >&3",
    ],
)
def test_echo_and_printf_need_an_allow_pattern_in_a_line_that_writes_a_file(command: str) -> None:
    refusal = CommandPolicy(allow=DOCS_ALLOW).check(command)
    assert refusal is not None, command
    assert refusal.rule == "allow"


@pytest.mark.parametrize(
    "command",
    ["echo done", "echo x >&2", "printf 'x\\n' > /dev/null", "pytest 2>&1; echo ok"],
)
def test_echo_without_a_redirection_to_a_file_needs_no_allow_pattern(command: str) -> None:
    assert CommandPolicy(allow=DOCS_ALLOW).check(command) is None
