"""Code the analyser cannot read fails closed under deny rules (issue 36).

Each spelling runs a command hidden in program text (`python3 -c`, an awk `system()`,
`sed e`, `git -c alias.x=!...`, ...): a deny rule for `rm` must refuse it through both
consumers of the analyser, in every mode. The same commands without code pass.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_fstools.permissions.rules import Permission, Policy
from langchain_fstools.shell.policy.analysis import analyse
from langchain_fstools.shell.policy.code_strings import SAFE_GIT_KEYS, code_string
from langchain_fstools.shell.policy.policy import CommandPolicy

DENY_RM = [Permission(operations=["execute"], commands=["rm"], action="deny")]

CODE = [
    "python3 -c 'import os; os.system(\"rm -rf x\")'",
    "python -Ic 'import shutil; shutil.rmtree(\"x\")'",
    "/usr/bin/python3.12 -c pass",
    "python3 - <<'EOF'\nimport os\nos.remove('x')\nEOF",
    "python3 <<< 'import os'",
    "curl -s x | python3",
    "python3 $ARGS",
    "perl -e 'unlink \"x\"'",
    "perl -ne 'system(\"rm x\")' f",
    'node -e \'require("fs").rmSync("x")\'',
    "node --eval='x'",
    "ruby -e 'File.delete(\"x\")'",
    "php -r 'unlink(\"x\");'",
    "awk 'BEGIN { system(\"rm x\") }'",
    "gawk -F: '{ print | \"sh\" }' f",
    "awk '{ \"rm x\" | getline }' f",
    "sed 's/a/b/e' f",
    "sed -n '1e rm x' f",
    "sed -e 's/a/b/' -e 'e rm x' f",
    "sed --expression='e rm x' f",
    'sed "$S" f',
    "git -c alias.x='!rm -rf y' x",
    "git -c core.fsmonitor='rm -rf y' status",
    "git -c core.pager='rm x' log",
    "git -c core.sshCommand='rm x' fetch",
    "git --config-env=core.editor=E commit",
    "git rebase -x 'rm x' HEAD~3",
    "git submodule foreach 'rm x'",
    "git grep -O'rm x' foo",
    "tar --checkpoint=1 --checkpoint-action=exec='rm x' -cf a.tar f",
    "tar --to-command='rm x' -xf a.tar",
    "tar --use-compress-program='rm x' -xf a.tar",
    "tar -I 'rm x' -xf a.tar",
    "ssh -o ProxyCommand='rm x' host",
    "ssh -oLocalCommand='rm x' -o PermitLocalCommand=yes host",
    "scp -S ./rm-wrapper a host:b",
    "rsync -e 'rm x' a host:b",
    "man -P 'rm x' ls",
    "man --pager='rm x' ls",
    "vim -c '!rm x' -c q f",
    "vi '+!rm x' f",
    "less '+!rm x' f",
    "make --eval='x:;rm y' x",
    "make SHELL=/bin/rm",
    "gdb -batch -ex 'shell rm x'",
    "emacsclient --eval '(shell-command \"rm x\")'",
    "python3 -v <<< 'import os'",
    "autossh -o ProxyCommand='rm x' host",
    "env python3 -c pass",
    "timeout 5 perl -e 1",
    "find . -name '*.py' -exec python3 -c pass {} +",
]


@pytest.mark.parametrize("command", CODE[:3])
def test_the_refusal_says_why_the_code_could_match(command: str) -> None:
    refusal = CommandPolicy(deny=["rm"]).check(command)
    assert refusal is not None
    assert "program as text" in refusal.reason


NO_CODE = [
    "python3 script.py -c config.yaml",
    "python3 -m pytest -c setup.cfg",
    "python3 -W ignore script.py",
    "python3 --version",
    "perl script.pl",
    "node build.js",
    "awk '{ print $1 }' f",
    "awk -F: -v OFS=, '{ print $1, $2 }' f",
    "awk -f prog.awk f",
    "sed 's/hello/world/g' f",
    "sed -i.bak -e 's/a/b/' -e '/x/d' f",
    "sed -n '/start/,/end/p' f",
    "sed 'y/abc/xyz/' f",
    "sed -f script.sed f",
    "git status",
    "git -C sub -c user.name=x -c color.ui=never log --oneline",
    "git log --grep rm",
    "tar -xzf a.tgz",
    "tar -cf a.tar dir",
    "ssh -o StrictHostKeyChecking=no host",
    "rsync -av a b",
    "man ls",
    "vim +12 f",
    "less +G f",
    "make -j4 test",
    "make CFLAGS=-O2",
]


@pytest.mark.parametrize(
    ("command", "code"), [(c, True) for c in CODE] + [(c, False) for c in NO_CODE]
)
def test_a_deny_rule_fails_closed_on_code_the_analyser_cannot_read(
    command: str, *, code: bool
) -> None:
    refusal = CommandPolicy(deny=["rm"], block_dangerous=False).check(command)
    assert (refusal is not None and refusal.rule == "deny") == code, (command, refusal)
    for mode in ("default", "accept_edits", "bypass"):
        verdict = Policy(DENY_RM, mode=mode).decide_command(command)
        assert (verdict.action == "deny") == code, (mode, command, verdict)


def test_an_allow_rule_naming_the_interpreter_still_allows_its_code() -> None:
    rules = [Permission(operations=["execute"], commands=["python3"])]
    assert Policy(rules).decide_command("python3 -c 'print(1)'").action == "allow"
    assert CommandPolicy(allow=["python3"]).check("python3 -c 'print(1)'") is None


@pytest.mark.parametrize(
    "command",
    ["uv run rm -rf x", "npm exec rm x", "git -C . push", "git --no-pager -c x.y=z push"],
)
def test_runners_and_global_options_do_not_hide_a_denied_command(command: str) -> None:
    refusal = CommandPolicy(deny=["rm", "git push"], block_dangerous=False).check(command)
    assert refusal is not None, command
    assert refusal.rule == "deny"


def test_uv_run_of_an_allowed_tool_passes_a_deny_rule() -> None:
    assert CommandPolicy(deny=["rm"]).check("uv run pytest -q") is None


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    key=st.from_regex(r"[a-z]{1,8}\.[a-zA-Z]{1,12}", fullmatch=True),
    value=st.text(alphabet="!abc -/", max_size=10),
)
def test_git_c_of_any_key_but_the_safe_ones_is_code(key: str, value: str) -> None:
    reason = code_string("git", ["-c", f"{key}={value}", "status"])
    safe = key.lower() in SAFE_GIT_KEYS or key.lower().startswith(("color.", "advice."))
    assert (reason is None) == safe, key


SED_SAFE = st.sampled_from(["p", "d", "s/a/b/g", "s|x|y|", "/re/d", "1,3p", "$d", "y/ab/cd/", "G"])
SED_RUNS = st.sampled_from(["e rm x", "s/a/b/e", "1e ls", "/x/e", "s/a/b/ge"])


@settings(max_examples=200, deadline=None, derandomize=True)
@given(before=st.lists(SED_SAFE, max_size=4), runs=SED_RUNS, after=st.lists(SED_SAFE, max_size=4))
def test_a_sed_script_with_an_e_anywhere_is_code(
    before: list[str], runs: str, after: list[str]
) -> None:
    script = "\n".join([*before, runs, *after])
    assert code_string("sed", [script, "f"]) is not None, script
    assert code_string("sed", ["\n".join([*before, *after]), "f"]) is None


def test_the_analyser_marks_code_on_the_command_that_carries_it() -> None:
    commands = analyse("ls && python3 -c pass | sort").commands
    assert [c.code is not None for c in commands] == [False, True, False]
