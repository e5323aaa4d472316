"""Every spelling of a command gets one answer from both consumers of the analyser.

Each entry is a command line and the decision of its strictest reading under the rules
deny `rm` and `git push`, ask `curl`, allow the rest. The permission rules
(`permissions.rules.Permission`) and the command policy (`shell.policy.CommandPolicy`)
must both give it: the policy refuses with the deny patterns exactly the `deny`
entries, and with the ask patterns exactly the `ask` ones (and, since an unknown
command could be anything, the unknowable `deny` entries too).
"""

from __future__ import annotations

import pytest

from langchain_fstools.permissions.rules import Permission, Policy
from langchain_fstools.shell.policy.policy import CommandPolicy

DENY = ("rm", "git push")
ASK = ("curl",)

CORPUS: dict[str, str] = {
    # the spellings the issue reports as allowed
    "rm -rf build": "deny",
    "\\rm -rf build": "deny",
    "/bin/rm -rf build": "deny",
    "env rm -rf build": "deny",
    "bash -c 'rm -rf build'": "deny",
    "'rm' -rf build": "deny",
    "command rm x": "deny",
    "sudo rm x": "deny",
    "xargs rm < list": "deny",
    # quoting and escapes
    '"r"m x': "deny",
    "r\\m x": "deny",
    "$'\\x72m' x": "deny",
    "$'\\162m' x": "deny",
    '"/usr/bin/rm" -f x': "deny",
    "git 'push' origin main": "deny",
    "git push": "deny",
    # wrappers
    "env -i A=1 B=2 rm x": "deny",
    "env -u HOME -- rm x": "deny",
    "env - rm x": "deny",
    "nice -n 10 rm x": "deny",
    "nohup rm x &": "deny",
    "timeout -s KILL 5 rm x": "deny",
    "time rm x": "deny",
    "exec rm x": "deny",
    "builtin rm x": "deny",
    "doas -u root rm x": "deny",
    "sudo -u bob env X=1 nice rm x": "deny",
    "stdbuf -oL rm x": "deny",
    "env -S 'rm x'": "deny",
    # nested shells
    "bash -c \"sh -c 'rm x'\"": "deny",
    "zsh -c 'ls && rm x'": "deny",
    "sh -lc 'cd /tmp; rm x'": "deny",
    "bash -c 'bash -c \"env rm x\"'": "deny",
    "su -c 'rm x'": "deny",
    "eval 'rm x'": "deny",
    # substitutions
    "echo $(rm x)": "deny",
    "echo `rm x`": "deny",
    'ls "$(rm x)"': "deny",
    "cat <(rm x)": "deny",
    "x=$(rm -f y) true": "deny",
    "cat <<EOF\n$(rm x)\nEOF": "deny",
    # here-strings, here-documents, redirections
    "bash <<< 'rm x'": "deny",
    "sh <<'EOF'\nrm x\nEOF": "deny",
    "ls > out; rm x 2>/dev/null": "deny",
    "rm x > /dev/null 2>&1": "deny",
    # lists, pipelines, subshells, compound commands
    "(cd build && rm x)": "deny",
    "{ rm x; }": "deny",
    "true || rm x": "deny",
    "if true; then rm x; fi": "deny",
    'for f in *.o; do rm "$f"; done': "deny",
    "f() { rm x; }; f": "deny",
    "alias r='rm -rf'": "deny",
    # find -exec, xargs
    "find . -name '*.o' -exec rm {} \\;": "deny",
    "find . -execdir /bin/rm -f {} +": "deny",
    "ls | xargs -I{} rm {}": "deny",
    "printf 'x' | xargs -0 rm -f": "deny",
    "echo origin | xargs git": "deny",  # git gets its arguments at run time: could push
    # what cannot be known before it runs: the strictest rule
    "$CMD x": "deny",
    "$(echo rm) x": "deny",
    "`echo rm` x": "deny",
    'eval "$X"': "deny",
    "source script.sh": "deny",
    ". ./script.sh": "deny",
    "git $SUB origin": "deny",
    "echo 'rm x' | bash": "deny",
    "sh script.sh": "deny",
    "r? x": "deny",
    'sh -c "$SCRIPT"': "deny",
    "{rm,-rf,x}": "deny",
    # code the analyser cannot read, runners and git's global options (issue 36)
    "python3 -c 'import os'": "deny",
    "awk 'BEGIN { system(\"ls\") }'": "deny",
    "sed '1e ls' f": "deny",
    "git -c alias.p='!git push' p": "deny",
    "git -C . push": "deny",
    "uv run rm x": "deny",
    # ask
    "curl example.com": "ask",
    "/usr/bin/curl -s x | wc -c": "ask",
    "env HTTPS_PROXY=x curl -O x": "ask",
    "ls $(curl x)": "ask",
    'bash -c "curl x"': "ask",
    'timeout 5 "curl" x': "ask",
    "c\\url x": "ask",
    # allowed: the name is elsewhere, quoted as data, or not run
    "ls -la": "allow",
    "echo rm -rf build": "allow",
    "grep -rn rm .": "allow",
    "git status": "allow",
    "git pushd": "allow",
    "rmdir x": "allow",
    "echo 'bash -c rm'": "allow",
    "cat <<'EOF'\nrm -rf /\n$(rm x)\nEOF": "allow",
    "command -v rm": "allow",
    "printf '%s\\n' '$(rm x)'": "allow",
    'echo "\\$(rm x)"': "allow",
    "env -u rm ls": "allow",
    "bash --version": "allow",
    "bash -c 'ls; echo rm'": "allow",
    "find . -name rm -print": "allow",
}


def permission_decision(command: str) -> str:
    rules = [
        Permission(operations=["execute"], commands=list(DENY), action="deny"),
        Permission(operations=["execute"], commands=list(ASK), action="ask"),
        Permission(operations=["execute"], action="allow"),
    ]
    return Policy(rules, mode="default").decide_command(command).action


def command_policy_decision(command: str) -> str:
    if CommandPolicy(deny=DENY, block_dangerous=False).check(command) is not None:
        return "deny"
    if CommandPolicy(deny=ASK, block_dangerous=False).check(command) is not None:
        return "ask"
    return "allow"


def test_the_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 40  # the issue asks for at least 40
    assert {"deny", "ask", "allow"} == set(CORPUS.values())


@pytest.mark.parametrize(("command", "expected"), CORPUS.items())
def test_rules_and_policy_agree_on_the_strictest_reading(command: str, expected: str) -> None:
    assert (permission_decision(command), command_policy_decision(command)) == (
        expected,
        expected,
    )


@pytest.mark.parametrize("command", [c for c, d in CORPUS.items() if d == "deny"])
def test_deny_holds_in_bypass_mode(command: str) -> None:
    rules = [Permission(operations=["execute"], commands=["rm", "git push"], action="deny")]
    assert Policy(rules, mode="bypass").decide_command(command).action == "deny"
