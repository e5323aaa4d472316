"""Names a deepagents user reaches for, and the sentence that points to ours.

A package's `__getattr__` raises this sentence instead of "no attribute", so moving over
needs no dictionary (docs/migrating-from-deepagents.md). It is an `ImportError`: `from
package import name` turns an `AttributeError` into its own "cannot import name" and
drops the sentence, while an `ImportError` reaches the user as raised.
"""

from __future__ import annotations

DEEPAGENTS_NAMES: dict[str, str] = {
    "FilesystemBackend": (
        "it is deepagents' name; use LocalBackend(root_dir), which always"
        " keeps paths inside root_dir (symlinks and '..' included), so it needs no"
        " virtual_mode"
    ),
    "LocalShellBackend": (
        "it is deepagents' name; use LocalBackend(root_dir, execute=True),"
        " whose commands run in an OS sandbox by default (sandbox=None runs them unconfined)"
    ),
    "BackendProtocol": ("it is deepagents' name; subclass Backend (langchain_fstools.Backend)"),
    "SandboxBackendProtocol": (
        "it is deepagents' name; subclass Backend and set"
        " supports_execute = True (see 'Writing your own' in docs/backends.md)"
    ),
}
"""deepagents' name -> the sentence naming ours (why, where the meaning differs)."""


def missing(package: str, name: str) -> AttributeError | ImportError:
    """The error for `package.name`: an `ImportError` pointing to ours for a deepagents name."""
    pointer = DEEPAGENTS_NAMES.get(name)
    if pointer is None:
        return AttributeError(f"module {package!r} has no attribute {name!r}")
    return ImportError(f"langchain_fstools has no {name}: {pointer}", name=package)


__all__ = ["DEEPAGENTS_NAMES", "missing"]
