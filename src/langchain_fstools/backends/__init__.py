"""Storage backends: the contract and its implementations."""

from langchain_fstools.backends.protocol import ABSENT, Backend, EntryKind, FileInfo

__all__ = ["ABSENT", "Backend", "EntryKind", "FileInfo"]
