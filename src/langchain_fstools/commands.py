"""The command line: `python -m langchain_fstools demo` and `python -m langchain_fstools mcp`.

Each command loads what it runs only when it runs: `mcp` (see `mcp.cli`) starts without
the demo's agent stack, and `demo` (see `demo`) without the MCP SDK.
"""

from __future__ import annotations

import argparse

from langchain_fstools._version import __version__
from langchain_fstools.mcp.cli import add_arguments as add_mcp_arguments
from langchain_fstools.mcp.cli import run_command as run_mcp


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m langchain_fstools`."""
    parser = argparse.ArgumentParser(
        prog="python -m langchain_fstools",
        description="File tools for LangChain and LangGraph agents: an offline demo, and an "
        "MCP server for any MCP client.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="run the offline demo agent",
        description="Run a scripted agent (no model, no network) over a scratch folder.",
    )
    demo.add_argument(
        "--backend",
        choices=["local", "state"],
        default="local",
        help="where the demo's files live: a temporary folder or graph state (default: local)",
    )
    mcp = commands.add_parser("mcp", help="serve the file tools to MCP clients")
    add_mcp_arguments(mcp)
    options = parser.parse_args(argv)
    if options.command == "mcp":
        return run_mcp(mcp, options)
    from langchain_fstools.demo import run_demo  # noqa: PLC0415 - the agent stack, for the demo only

    return run_demo(options.backend)


__all__ = ["main"]
