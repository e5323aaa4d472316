"""A language server's start as the event loop feels it: one converter per client vs shared.

    python bench/lsp_start.py [--starts 8]

Every `Diagnostics` runs its servers on one event loop; a server's start sends
`initialize`, whose parameters pygls turns into JSON with a cattrs converter. A new
converter per client generates that code at each start, on the loop thread, so every
check of every server on that loop waits meanwhile. Measured: `Server.start()` of the
test suite's fake server (`tests/unit/lsp/fake_server.py ok`) `--starts` times in one
process, with a fresh converter per client and with the shared one `lsp.client` uses;
reported are the median start time and the median longest stall of the loop (a 1 ms
ticker's longest gap) after the first start, and their ratios. The two modes alternate
start by start, so machine load affects them alike. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pygls.protocol import default_converter

from langchain_fstools.lsp import ServerSpec
from langchain_fstools.lsp import client as lsp_client

FAKE = Path(__file__).resolve().parent.parent / "tests" / "unit" / "lsp" / "fake_server.py"
SPEC = ServerSpec((sys.executable, str(FAKE), "ok"), frozenset({".py"}), "python")


async def one_start(root: str) -> tuple[float, float]:
    """One server's start: its seconds, and the loop's longest stall meanwhile."""
    stall = 0.0

    async def ticker() -> None:
        nonlocal stall
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            stall, last = max(stall, now - last), now

    ticking = asyncio.create_task(ticker())
    server = lsp_client.Server(SPEC, sys.executable, root)
    began = time.perf_counter()
    await server.start()
    took = time.perf_counter() - began
    ticking.cancel()
    await server.stop()
    return took, stall


async def main(starts: int) -> None:
    shared = lsp_client._converter  # noqa: SLF001 - the factory measured
    results: dict[str, list[tuple[float, float]]] = {"per client": [], "shared": []}
    with tempfile.TemporaryDirectory() as root:
        for _ in range(starts):
            for mode, factory in (("per client", default_converter), ("shared", shared)):
                lsp_client._converter = factory  # type: ignore[assignment]  # noqa: SLF001
                results[mode].append(await one_start(root))
    lsp_client._converter = shared  # noqa: SLF001
    medians = {
        mode: (
            statistics.median(took for took, _ in found[1:]),
            statistics.median(stall for _, stall in found[1:]),
        )
        for mode, found in results.items()
    }
    for mode, (took, stall) in medians.items():
        print(f"{mode:>10}: start {took * 1000:6.0f} ms, longest loop stall {stall * 1000:5.0f} ms")
    (took_a, stall_a), (took_b, stall_b) = medians["per client"], medians["shared"]
    print(
        f"ratio per client / shared: start {took_a / took_b:.1f}x, stall {stall_a / stall_b:.1f}x"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=8)
    asyncio.run(main(parser.parse_args().starts))
