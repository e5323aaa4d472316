"""apply_patch: the Codex patch format, applied atomically across files over any backend.

The stages (one module each): `parser` turns text into hunks, `seek` locates a chunk's
lines in a file, `apply` plans every change then commits all or nothing, `invocation`
recognises `apply_patch <<'EOF' ...` shell commands.

Example:
    ```python
    from langchain_fstools import LocalBackend
    from langchain_fstools.patch import apply_patch

    result = apply_patch(
        "*** Begin Patch\\n*** Add File: hello.txt\\n+hi\\n*** End Patch\\n",
        LocalBackend("./repo"),
    )
    print(result.summary())  # Success. Updated the following files:\\nA /hello.txt
    ```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_fstools.core import calls, paths
from langchain_fstools.patch.apply import MAX_FILE_BYTES, FileChange, PatchResult, apply
from langchain_fstools.patch.invocation import (
    InvalidInvocation,
    Invocation,
    NotApplyPatch,
    PatchInvocation,
    parse_invocation,
)
from langchain_fstools.patch.parser import (
    AddFile,
    Chunk,
    DeleteFile,
    Hunk,
    Patch,
    UpdateFile,
    parse_patch,
)

if TYPE_CHECKING:
    from langchain_fstools.backends.protocol import Backend


def apply_patch(
    patch_text: str,
    backend: Backend,
    *,
    workdir: str = paths.ROOT,
    max_bytes: int = MAX_FILE_BYTES,
) -> PatchResult:
    """Apply a patch to `backend`, all or nothing.

    Args:
        patch_text: The patch (`*** Begin Patch` ... `*** End Patch`), possibly
            heredoc-wrapped.
        backend: Where the files live (bound to a graph run for `StateBackend`).
        workdir: The directory relative paths start from. Default: `/`.
        max_bytes: Largest file read or written. Default: `MAX_FILE_BYTES` (64 MiB).

    Returns:
        What changed; `summary()` gives the `Success. Updated the following files:` text.

    Raises:
        PatchParseError: the text is not a valid patch.
        ContextNotFound: a chunk matches no place in its file.
        PatchConflict: the patch contradicts the workspace (an added file exists, ...).
        OSError: a file is missing or cannot be written; nothing was changed.
    """
    effect = apply(parse_patch(patch_text), workdir=workdir, max_bytes=max_bytes)
    return calls.run(effect, backend)


async def aapply_patch(
    patch_text: str,
    backend: Backend,
    *,
    workdir: str = paths.ROOT,
    max_bytes: int = MAX_FILE_BYTES,
) -> PatchResult:
    """Async `apply_patch`."""
    effect = apply(parse_patch(patch_text), workdir=workdir, max_bytes=max_bytes)
    return await calls.arun(effect, backend)


__all__ = [
    "AddFile",
    "Chunk",
    "DeleteFile",
    "FileChange",
    "Hunk",
    "InvalidInvocation",
    "Invocation",
    "NotApplyPatch",
    "Patch",
    "PatchInvocation",
    "PatchResult",
    "UpdateFile",
    "aapply_patch",
    "apply_patch",
    "parse_invocation",
    "parse_patch",
]
