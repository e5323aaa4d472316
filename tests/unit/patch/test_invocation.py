"""parse_invocation: apply_patch shell forms accepted, everything else refused or passed on."""

from __future__ import annotations

import pytest

from langchain_fstools.patch.invocation import (
    InvalidInvocation,
    NotApplyPatch,
    PatchInvocation,
    parse_invocation,
)

PATCH = '*** Begin Patch\n*** Add File: a.txt\n+$HOME is "quoted"\n*** End Patch\n'


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (f"apply_patch <<'EOF'\n{PATCH}EOF\n", PatchInvocation(PATCH, None)),
        (f'apply_patch <<"EOF"\n{PATCH}EOF', PatchInvocation(PATCH, None)),
        (f"apply_patch <<EOF\n{PATCH}EOF\n", PatchInvocation(PATCH, None)),
        (f"applypatch <<'PATCH'\n{PATCH}PATCH\n", PatchInvocation(PATCH, None)),
        (f"cd src/pkg && apply_patch <<'EOF'\n{PATCH}EOF\n", PatchInvocation(PATCH, "src/pkg")),
        (f"cd '/my dir' && apply_patch <<'EOF'\n{PATCH}EOF\n", PatchInvocation(PATCH, "/my dir")),
        (f"bash -lc 'apply_patch <<\"EOF\"\n{PATCH}EOF\n'", PatchInvocation(PATCH, None)),
        (
            f"bash -c 'cd lib && apply_patch <<\"EOF\"\n{PATCH}EOF\n'",
            PatchInvocation(PATCH, "lib"),
        ),
        (
            'sh -c "apply_patch <<\'EOF\'\n*** Begin Patch\n\\"x\\"\nEOF\n"',
            PatchInvocation('*** Begin Patch\n"x"\n', None),
        ),
        ("apply_patch '*** Begin Patch'", PatchInvocation("*** Begin Patch", None)),
    ],
)
def test_accepted_forms(command: str, expected: PatchInvocation) -> None:
    assert parse_invocation(command) == expected


@pytest.mark.parametrize(
    "command",
    ["ls -la", "grep -rn apply_patch src", "cat <<'EOF' > x\nhi\nEOF\n", "bash -lc 'make test'"],
)
def test_other_commands_are_not_ours(command: str) -> None:
    assert parse_invocation(command) == NotApplyPatch()


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        (f"echo hi; apply_patch <<'EOF'\n{PATCH}EOF\n", "must be the only command"),
        (f"apply_patch <<'EOF'\n{PATCH}EOF\necho done\n", "must be the only command"),
        (f"cd x || apply_patch <<'EOF'\n{PATCH}EOF\n", "must be the only command"),
        (f"apply_patch <<'EOF' | cat\n{PATCH}EOF\n", "must be the only command"),
        (f"apply_patch <<'EOF' > log\n{PATCH}EOF\n", "nothing may follow the heredoc start"),
        (f"apply_patch -v <<'EOF'\n{PATCH}EOF\n", "takes no arguments"),
        ("apply_patch a b", "as its only argument"),
        (f"cd a b && apply_patch <<'EOF'\n{PATCH}EOF\n", "exactly one directory"),
        (f"cd $HOME && apply_patch <<'EOF'\n{PATCH}EOF\n", "the cd directory"),
        (f"ls && apply_patch <<'EOF'\n{PATCH}EOF\n", "must be the only command"),
        (f"bash -lc 'ls; apply_patch <<\"EOF\"\n{PATCH}EOF\n'", "must be the only command"),
        ('bash -lc "apply_patch \\"$(cat p)\\""', "may not use variables"),
        ("apply_patch <<'EOF'\n*** Begin Patch\n( unbalanced", "not valid shell syntax"),
    ],
)
def test_refused_forms_say_why(command: str, reason: str) -> None:
    outcome = parse_invocation(command)
    assert isinstance(outcome, InvalidInvocation), outcome
    assert reason in outcome.reason
