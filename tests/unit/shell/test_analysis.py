"""shell.analysis: the simple commands a line runs, as they will run."""

from __future__ import annotations

import pytest

from langchain_fstools.permissions.rules import Permission, Policy
from langchain_fstools.shell.policy.analysis import Match, analyse, command_pattern
from langchain_fstools.shell.policy.policy import CommandPolicy


def runs(command: str) -> list[list[str | None]]:
    return [[w.value for w in found.words] for found in analyse(command).commands]


def test_words_lose_quotes_and_escapes_and_names_their_directory() -> None:
    found = analyse("/bin/'r'\\m -rf \"a b\" $'\\t'").commands[0]
    assert found.name == "rm"
    assert found.arguments == ("-rf", "a b", "\t")


def test_a_wrapper_is_listed_then_what_it_runs() -> None:
    assert runs("env -i A=1 timeout 5 nice -n 3 ls -l") == [
        ["env", "-i", "A=1", "timeout", "5", "nice", "-n", "3", "ls", "-l"],
        ["timeout", "5", "nice", "-n", "3", "ls", "-l"],
        ["nice", "-n", "3", "ls", "-l"],
        ["ls", "-l"],
    ]
    assert [c.wrapper for c in analyse("env ls").commands] == [True, False]
    assert [c.wrapper for c in analyse("sudo ls").commands] == [False, False]


def test_scripts_are_parsed_in_turn_and_substitutions_looked_into() -> None:
    assert runs("bash -c 'a; sh -c \"b $(c)\"'") == [
        ["bash", "-c", 'a; sh -c "b $(c)"'],
        ["a"],
        ["sh", "-c", None],
        [None],  # the inner script is computed from $(c)
        ["c"],
    ]


def test_xargs_commands_are_open_ended_and_find_placeholders_unknown() -> None:
    xargs = analyse("xargs git").commands[1]
    assert xargs.open_ended
    assert xargs.match(command_pattern("git push")) is Match.MAYBE
    found = analyse("find . -exec grep -l x {} +").commands[1]
    assert found.arguments == ("-l", "x", None)


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("$CMD x", "the command name `$CMD` is computed at run time"),
        ("r* x", "the command name `r*` is a file-name pattern"),
        ("source ./env.sh", "`source ./env.sh` runs a file"),
        ('eval "$X"', 'the script `"$X"` is computed'),
        ("cat x | sh", "`sh` runs a script file or its standard input"),
        ("echo (", "the command could not be parsed"),
    ],
)
def test_what_cannot_be_known_is_an_unknown_that_any_pattern_may_match(
    command: str, reason: str
) -> None:
    unknown = [c for c in analyse(command).commands if c.unknown is not None]
    assert [c.unknown for c in unknown] == [reason]
    assert unknown[0].match(command_pattern("anything at all")) is Match.MAYBE


def test_a_glob_argument_may_match_only_words_it_can_expand_to() -> None:
    found = analyse("git pu?h").commands[0]
    assert found.match(command_pattern("git push")) is Match.MAYBE
    assert found.match(command_pattern("git pull")) is Match.NO


def test_the_allow_list_refuses_the_unknowable_and_needs_sudo_named() -> None:
    policy = CommandPolicy(allow=["ls", "pytest", "source"], block_dangerous=False)
    assert policy.check("env -i timeout 9 pytest -q && bash -c ls") is None
    assert policy.check("env A=1 timeout 9 pytest -q") is not None  # A may be read
    refused = policy.check("source .venv/bin/activate")
    assert refused is not None
    assert "`source .venv/bin/activate` runs a file" in refused.reason
    assert policy.check("sudo ls") is not None


def test_a_rule_that_could_match_an_unknown_says_so() -> None:
    policy = Policy([Permission(operations=["execute"], commands=["rm"], action="deny")])
    verdict = policy.decide_command("ls; $CMD x")
    assert (verdict.action, verdict.reason) == (
        "deny",
        "permission rule 1 (it could match: the command name `$CMD` is computed at run time)",
    )


def test_a_wrapper_alone_needs_no_rule_but_a_rule_naming_it_applies() -> None:
    rules = [Permission(operations=["execute"], commands=["pytest"])]
    assert Policy(rules).decide_command("timeout 60 env -i pytest").action == "allow"
    deny_xargs = [Permission(operations=["execute"], commands=["xargs"], action="deny")]
    assert Policy(deny_xargs, mode="bypass").decide_command("xargs ls").action == "deny"


def test_a_malformed_command_pattern_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="not valid shell words"):
        Permission(operations=["execute"], commands=["'rm"])
