"""Middleware that composes the file tools into `langchain.agents.create_agent`."""

from langchain_fstools.middleware.approval import FileActionRequest
from langchain_fstools.middleware.eviction import LargeResultEviction
from langchain_fstools.middleware.filesystem import SYSTEM_PROMPT, FilesystemMiddleware

__all__ = ["SYSTEM_PROMPT", "FileActionRequest", "FilesystemMiddleware", "LargeResultEviction"]
