"""What a `patch` argument names: the patch text, its directory, the files it touches.

The apply_patch tool reads its argument with `patch_text`; guards that must know a
call's files before it runs (the parallel-change guard, permissions) use `patch_paths`.
"""

from __future__ import annotations

from langchain_fstools import errors
from langchain_fstools.core import paths
from langchain_fstools.patch.apply import resolve_path
from langchain_fstools.patch.invocation import InvalidInvocation, PatchInvocation, parse_invocation
from langchain_fstools.patch.parser import BEGIN, parse_patch


def patch_text(argument: str) -> tuple[str, str]:
    """Return the patch and its working directory from the tool's `patch` argument.

    The argument is a patch (possibly heredoc-wrapped) or, as models trained on shell
    tools often send, an `apply_patch <<'EOF' ...` command line.

    Raises:
        UnsupportedInvocation: a command line calling apply_patch in a refused form.
    """
    stripped = argument.lstrip()
    if stripped.startswith((BEGIN, "<<")):
        return argument, paths.ROOT
    invocation = parse_invocation(argument)
    if isinstance(invocation, InvalidInvocation):
        raise errors.UnsupportedInvocation(invocation.reason)
    if isinstance(invocation, PatchInvocation):
        return invocation.patch, invocation.workdir or paths.ROOT
    return argument, paths.ROOT


def patch_paths(argument: str) -> list[str]:
    """The canonical paths a `patch` argument names (move targets too).

    For guards that must know a call's targets before it runs; an argument that does
    not parse names no paths, and paths that are not valid are left out.
    """
    try:
        text, workdir = patch_text(argument)
        named = parse_patch(text).paths()
    except errors.FsToolsError:
        return []
    found: list[str] = []
    for path in named:
        try:
            found.append(resolve_path(workdir, path))
        except errors.FsToolsError:
            continue
    return found


__all__ = ["patch_paths", "patch_text"]
