"""Time to the MCP server's first answer, against a minimal server of the same SDK.

    python bench/mcp_start.py [--runs N] [--root DIR]

Each run spawns a server over stdio and times, from the spawn, the client's
negotiation (mcp 2.x `Client` in its default mode: `server/discover` on 2026-07-28;
mcp 1.x: `initialize`) and `tools/list`: what every client session pays before its
first call. Ours is `python -m langchain_fstools mcp --root DIR`, started as a client
starts it again (its listing kept from an earlier start, `mcp.listing_cache`) and as on
its very first start (an empty cache folder); the floor is a minimal server of the same
SDK (`FastMCP` on 1.x, `MCPServer` on 2.x) listing one tool. Runs alternate between the
three so load changes hit all alike; the medians are compared. Target: at most 1.5x the
minimal server.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
GENERATION = int(importlib.metadata.version("mcp").split(".", 1)[0])
TARGET = 1.5

MINIMAL_1 = """
from mcp.server.fastmcp import FastMCP

server = FastMCP("minimal")


@server.tool()
def echo(text: str) -> str:
    return text


server.run()
"""

MINIMAL_2 = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("minimal")


@server.tool()
def echo(text: str) -> str:
    return text


server.run()
"""


async def first_answer(args: list[str], cache: str) -> float:
    """Seconds from spawning `python ARGS` (its cache folder `cache`) to its `tools/list`."""
    from mcp import StdioServerParameters

    env = {
        **os.environ,
        "PYTHONPATH": SRC,
        "LANGCHAIN_FSTOOLS_MCP_HANDLE_KEY": "bench-read-handle-key-of-32-bytes",
        "XDG_CACHE_HOME": cache,
    }
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    start = time.perf_counter()
    if GENERATION >= 2:
        from mcp import Client

        async with Client(params) as client:
            tools = await client.list_tools()
            elapsed = time.perf_counter() - start
    else:
        from mcp import ClientSession
        from mcp.client.stdio import stdio_client

        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            elapsed = time.perf_counter() - start
    assert tools.tools, "no tools listed"
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--root", type=Path, default=None)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = options.root or Path(scratch)
        minimal = Path(scratch) / "minimal_server.py"
        minimal.write_text(MINIMAL_2 if GENERATION >= 2 else MINIMAL_1)
        ours = ["-m", "langchain_fstools", "mcp", "--root", str(root)]
        kept = str(Path(scratch) / "kept")
        times: dict[str, list[float]] = {"fstools": [], "first": [], "minimal": []}
        asyncio.run(first_answer(ours, kept))  # keeps the listing, warms the file cache
        asyncio.run(first_answer([str(minimal)], kept))
        for run in range(options.runs):
            times["fstools"].append(asyncio.run(first_answer(ours, kept)))
            fresh = str(Path(scratch) / f"fresh-{run}")
            times["first"].append(asyncio.run(first_answer(ours, fresh)))
            times["minimal"].append(asyncio.run(first_answer([str(minimal)], kept)))
    medians = {name: statistics.median(values) for name, values in times.items()}
    ratio = medians["fstools"] / medians["minimal"]
    first = medians["first"] / medians["minimal"]
    version = importlib.metadata.version("mcp")
    print(f"mcp {version}, {options.runs} runs each, alternating; load {os.getloadavg()[0]:.1f}")
    for name, values in times.items():
        print(
            f"  {name:8} median {medians[name] * 1000:6.0f} ms"
            f"  (min {min(values) * 1000:.0f}, max {max(values) * 1000:.0f})"
        )
    verdict = "PASS" if ratio <= TARGET else "FAIL"
    print(f"first answer: {ratio:.2f}x the minimal server (target <= {TARGET}x): {verdict}")
    print(f"first answer of a first start (no listing kept): {first:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
