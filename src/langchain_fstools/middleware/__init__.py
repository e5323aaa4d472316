"""Middleware that composes the file tools into `langchain.agents.create_agent`."""

from langchain_fstools.middleware.filesystem import SYSTEM_PROMPT, FilesystemMiddleware
from langchain_fstools.permissions.approval import FileActionRequest
from langchain_fstools.tools.eviction import LargeResultEviction

__all__ = ["SYSTEM_PROMPT", "FileActionRequest", "FilesystemMiddleware", "LargeResultEviction"]
