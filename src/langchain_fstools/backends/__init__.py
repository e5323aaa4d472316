"""Storage backends: the contract and its implementations."""

from typing import NoReturn

from langchain_fstools.backends.protocol import ABSENT, Backend, EntryKind, FileInfo
from langchain_fstools.core import renamed


def __getattr__(name: str) -> NoReturn:
    """No such name; a deepagents one (`FilesystemBackend`) gets a pointer to ours."""
    raise renamed.missing(__name__, name)


__all__ = ["ABSENT", "Backend", "EntryKind", "FileInfo"]
