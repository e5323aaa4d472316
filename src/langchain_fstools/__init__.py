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

from typing import TYPE_CHECKING

from langchain_fstools.core.lazy import lazy_names

if TYPE_CHECKING:
    from langchain_fstools._version import __version__ as __version__
    from langchain_fstools.backends.composite import CompositeBackend
    from langchain_fstools.backends.local import LocalBackend
    from langchain_fstools.backends.objectstore import ObjectStoreBackend
    from langchain_fstools.backends.protocol import Backend, EntryKind, FileInfo
    from langchain_fstools.backends.ssh import SSHBackend
    from langchain_fstools.backends.state import StateBackend
    from langchain_fstools.backends.store import StoreBackend
    from langchain_fstools.middleware.filesystem import FilesystemMiddleware
    from langchain_fstools.middleware.schemas import FilesystemAgentState, FilesystemState
    from langchain_fstools.permissions.rules import Permission, Policy
    from langchain_fstools.tools.settings import ToolSettings
    from langchain_fstools.tools.toolkit import FileToolkit

_PUBLIC: dict[str, str] = {
    "Backend": "langchain_fstools.backends.protocol",
    "CompositeBackend": "langchain_fstools.backends.composite",
    "EntryKind": "langchain_fstools.backends.protocol",
    "FileInfo": "langchain_fstools.backends.protocol",
    "FileToolkit": "langchain_fstools.tools.toolkit",
    "FilesystemAgentState": "langchain_fstools.middleware.schemas",
    "FilesystemMiddleware": "langchain_fstools.middleware.filesystem",
    "FilesystemState": "langchain_fstools.middleware.schemas",
    "LocalBackend": "langchain_fstools.backends.local",
    "ObjectStoreBackend": "langchain_fstools.backends.objectstore",
    "Permission": "langchain_fstools.permissions.rules",
    "Policy": "langchain_fstools.permissions.rules",
    "SSHBackend": "langchain_fstools.backends.ssh",
    "StateBackend": "langchain_fstools.backends.state",
    "StoreBackend": "langchain_fstools.backends.store",
    "ToolSettings": "langchain_fstools.tools.settings",
    "__version__": "langchain_fstools._version",
}
"""Each public name and the module defining it, imported on first use (PEP 562)."""


__getattr__, __dir__ = lazy_names(__name__, _PUBLIC)


__all__ = [
    "Backend",
    "CompositeBackend",
    "EntryKind",
    "FileInfo",
    "FileToolkit",
    "FilesystemAgentState",
    "FilesystemMiddleware",
    "FilesystemState",
    "LocalBackend",
    "ObjectStoreBackend",
    "Permission",
    "Policy",
    "SSHBackend",
    "StateBackend",
    "StoreBackend",
    "ToolSettings",
]
