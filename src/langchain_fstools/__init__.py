"""File tools for LangChain and LangGraph agents.

Give an agent `ls`, `read_file`, `write_file` and `edit_file` over a backend of your
choice; the tools enforce read-before-write, refuse stale edits, keep encodings and line
endings byte for byte, and never show a host path.

Minimal use, on local disk:

    from langchain.agents import create_agent
    from langchain_fstools import FilesystemMiddleware, LocalBackend

    agent = create_agent(model, middleware=[FilesystemMiddleware(backend=LocalBackend("./repo"))])

The tools alone, for your own graph or tool list:

    from langchain_fstools import FileToolkit

    tools = FileToolkit(LocalBackend("./repo")).get_tools()

Files in graph state instead (nothing touches disk; checkpointed per thread, each
message and each change stored once):

    from langchain_fstools import FilesystemAgentState, StateBackend

    agent = create_agent(
        model,
        tools=FileToolkit(StateBackend()).get_tools(),
        state_schema=FilesystemAgentState,
        checkpointer=InMemorySaver(),
    )

Permissions, approvals and file history (opt-in; asking needs a checkpointer):

    from langchain_fstools import Permission

    middleware = FilesystemMiddleware(
        backend=LocalBackend("./repo"),
        mode="accept_edits",
        permissions=[Permission(operations=["read", "write"], paths=["/secrets"], action="deny")],
        history=True,
    )
    # an `ask` pauses the run with interrupt(); resume with
    # Command(resume={"decisions": [{"type": "approve"}]}); undo with
    # middleware.rewind(agent, config, to=tool_call_id)
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from langchain_fstools.core.lazy import lazy_names

# A library's records go where the application's logging sends them; with none
# configured, nothing is printed (Python would print warnings on stderr), since every
# failure a record tells of also reaches the caller as an error or a tool result.
logging.getLogger(__name__).addHandler(logging.NullHandler())

if TYPE_CHECKING:
    from langchain_fstools._version import __version__ as __version__
    from langchain_fstools.backends.composite import CompositeBackend
    from langchain_fstools.backends.local.backend import LocalBackend
    from langchain_fstools.backends.objectstore import ObjectStoreBackend
    from langchain_fstools.backends.protocol import Backend, EntryKind, FileInfo
    from langchain_fstools.backends.ssh import SSHBackend
    from langchain_fstools.backends.state import FilesState, StateBackend, file_bytes
    from langchain_fstools.backends.store import StoreBackend
    from langchain_fstools.errors import (
        ChangesNotCommitted,
        ConditionalWritesIgnored,
        FsToolsError,
        InvalidPath,
        NotInMount,
        OutsideRoot,
        PartialWrite,
        StoreUnavailable,
        VersionConflict,
        WriteLockTimeout,
    )
    from langchain_fstools.middleware.filesystem import FilesystemMiddleware
    from langchain_fstools.middleware.schemas import (
        FilesystemAgentState,
        FilesystemHistoryState,
        FilesystemState,
    )
    from langchain_fstools.permissions.rules import Permission, Policy
    from langchain_fstools.shell.policy.policy import CommandPolicy
    from langchain_fstools.shell.sandbox.limits import Limits
    from langchain_fstools.shell.sandbox.sandbox import Sandbox
    from langchain_fstools.tools.eviction import LargeResultEviction
    from langchain_fstools.tools.settings import ToolSettings
    from langchain_fstools.tools.toolkit import FileToolkit

_PUBLIC: dict[str, str] = {
    "Backend": "langchain_fstools.backends.protocol",
    "ChangesNotCommitted": "langchain_fstools.errors",
    "CommandPolicy": "langchain_fstools.shell.policy.policy",
    "CompositeBackend": "langchain_fstools.backends.composite",
    "ConditionalWritesIgnored": "langchain_fstools.errors",
    "EntryKind": "langchain_fstools.backends.protocol",
    "FileInfo": "langchain_fstools.backends.protocol",
    "FileToolkit": "langchain_fstools.tools.toolkit",
    "FilesState": "langchain_fstools.backends.state",
    "FilesystemAgentState": "langchain_fstools.middleware.schemas",
    "FilesystemHistoryState": "langchain_fstools.middleware.schemas",
    "FilesystemMiddleware": "langchain_fstools.middleware.filesystem",
    "FilesystemState": "langchain_fstools.middleware.schemas",
    "FsToolsError": "langchain_fstools.errors",
    "InvalidPath": "langchain_fstools.errors",
    "LargeResultEviction": "langchain_fstools.tools.eviction",
    "Limits": "langchain_fstools.shell.sandbox.limits",
    "LocalBackend": "langchain_fstools.backends.local.backend",
    "NotInMount": "langchain_fstools.errors",
    "ObjectStoreBackend": "langchain_fstools.backends.objectstore",
    "OutsideRoot": "langchain_fstools.errors",
    "PartialWrite": "langchain_fstools.errors",
    "Permission": "langchain_fstools.permissions.rules",
    "Policy": "langchain_fstools.permissions.rules",
    "SSHBackend": "langchain_fstools.backends.ssh",
    "Sandbox": "langchain_fstools.shell.sandbox.sandbox",
    "StateBackend": "langchain_fstools.backends.state",
    "StoreBackend": "langchain_fstools.backends.store",
    "StoreUnavailable": "langchain_fstools.errors",
    "ToolSettings": "langchain_fstools.tools.settings",
    "VersionConflict": "langchain_fstools.errors",
    "WriteLockTimeout": "langchain_fstools.errors",
    "__version__": "langchain_fstools._version",
    "file_bytes": "langchain_fstools.backends.state",
}
"""Each public name and the module defining it, imported on first use (PEP 562)."""


__getattr__, __dir__ = lazy_names(__name__, _PUBLIC)


__all__ = [
    "Backend",
    "ChangesNotCommitted",
    "CommandPolicy",
    "CompositeBackend",
    "ConditionalWritesIgnored",
    "EntryKind",
    "FileInfo",
    "FileToolkit",
    "FilesState",
    "FilesystemAgentState",
    "FilesystemHistoryState",
    "FilesystemMiddleware",
    "FilesystemState",
    "FsToolsError",
    "InvalidPath",
    "LargeResultEviction",
    "Limits",
    "LocalBackend",
    "NotInMount",
    "ObjectStoreBackend",
    "OutsideRoot",
    "PartialWrite",
    "Permission",
    "Policy",
    "SSHBackend",
    "Sandbox",
    "StateBackend",
    "StoreBackend",
    "StoreUnavailable",
    "ToolSettings",
    "VersionConflict",
    "WriteLockTimeout",
    "file_bytes",
]
