"""Agent overhead: a scripted 50-call trajectory, our middleware vs deepagents'.

    python bench/agent_overhead.py [--repeat 5]

Both agents run the same 50 tool calls (ls, read_file, write_file, edit_file, grep)
through `langchain.agents.create_agent` with a scripted chat model, files in graph
state, and an `InMemorySaver`. Reported: wall time per tool call (median of
`--repeat` runs), and checkpoint bytes written per mutation with 100 and with 1,000
other files in state (the bytes the saver holds after the run minus before, over the
number of mutations). The bytes are measured again over a 200-call thread, which
crosses the snapshot cadences (each delta channel stores its whole value now and then).
A benchmark, not a test: it checks only that both agents ran every call successfully.
Runs of all configurations alternate, so a change in machine load affects them alike.

Each agent runs with two state schemas: `create_agent`'s default (`messages` stored
whole in every checkpoint) and the one each project recommends, which stores
`messages` as deltas: ours `FilesystemAgentState` (the README's recommendation with a
checkpointer), deepagents' `DeepAgentState` (what `create_deep_agent` uses). The
targets are judged on the recommended pair; the default pair is printed too.

Both agents are asked for the same output: the first read of each file passes
`limit=200`, so both show the whole 200-line file (without it deepagents stops at its
default of 100 lines and ours at 2,000, and the conversations would differ in size).
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import time
from typing import Any

from deepagents import DeepAgentState
from deepagents.backends.utils import create_file_data
from deepagents.middleware.filesystem import FilesystemMiddleware as DeepFilesystemMiddleware
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_fstools import FilesystemAgentState, FilesystemMiddleware, StateBackend
from langchain_fstools.backends.state import file_record
from langchain_fstools.testing import ScriptedChatModel

CALLS = 50
LONG_CALLS = 200
"""A thread past the snapshot cadences: 80 mutations, about 400 message updates."""
KINDS = ("ours", "deepagents")
STATES = ("recommended", "default")
SCHEMAS: dict[tuple[str, str], Any] = {
    ("ours", "recommended"): FilesystemAgentState,
    ("deepagents", "recommended"): DeepAgentState,
    ("ours", "default"): None,
    ("deepagents", "default"): None,
}
"""The `state_schema` of each (middleware, state) configuration; None: `AgentState`."""


def schema_name(kind: str, state: str) -> str:
    return getattr(SCHEMAS[kind, state], "__name__", "default")


BODY = "".join(f"line {n}: value = {n * 7}\n" for n in range(1, 201))


def trajectory(calls: int = CALLS) -> tuple[list[AIMessage], int]:
    """Rounds of write, read, edit, read, and a listing or a search (five calls each)."""
    turns: list[AIMessage] = []
    mutations = 0
    for n in range(calls // 5):
        path = f"/work/file_{n}.txt"
        steps = [
            ("write_file", {"file_path": path, "content": BODY}),
            ("read_file", {"file_path": path, "limit": 200}),
            (
                "edit_file",
                {"file_path": path, "old_string": "line 100:", "new_string": "line one hundred:"},
            ),
            ("read_file", {"file_path": path, "offset": 95, "limit": 10}),
            ("ls", {"path": "/work"})
            if n % 2
            else ("grep", {"pattern": "one hundred", "path": "/work"}),
        ]
        mutations += 2
        turns += [
            AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c{n}-{k}"}])
            for k, (name, args) in enumerate(steps)
        ]
    return [*turns, AIMessage("done")], mutations


def saver_bytes(saver: InMemorySaver) -> int:
    return len(pickle.dumps((dict(saver.storage), dict(saver.writes), dict(saver.blobs))))


def run(kind: str, state: str, others: int, calls: int = CALLS) -> dict[str, float]:
    script, mutations = trajectory(calls)
    model = ScriptedChatModel(turns=script)
    if kind == "ours":
        middleware: Any = FilesystemMiddleware(backend=StateBackend())
        seed = {f"/seed/{n}.txt": file_record(BODY.encode()) for n in range(others)}
    else:
        middleware = DeepFilesystemMiddleware()
        seed = {f"/seed/{n}.txt": create_file_data(BODY) for n in range(others)}
    saver = InMemorySaver()
    agent = create_agent(
        model, middleware=[middleware], checkpointer=saver, state_schema=SCHEMAS[kind, state]
    )
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 500}
    agent.invoke(
        {"messages": [{"role": "user", "content": "seed"}], "files": seed},
        config,
        interrupt_before=["model"],
    )
    before = saver_bytes(saver)
    start = time.perf_counter()
    state = agent.invoke(None, config)
    wall = time.perf_counter() - start
    after = saver_bytes(saver)
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    failed = [m.content for m in results if m.status == "error"]
    assert len(results) == calls, (kind, len(results))
    assert not failed, (kind, failed[:2])
    return {"per_call_ms": wall / calls * 1000, "bytes_per_mutation": (after - before) / mutations}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    sizes = (100, 1000)
    configs = [(kind, state) for state in STATES for kind in KINDS]
    for kind, state in configs:  # warm up imports and caches outside the measured runs
        run(kind, state, sizes[0])
    runs: dict[tuple[str, str, int], list[dict[str, float]]] = {
        (kind, state, n): [] for kind, state in configs for n in sizes
    }
    for repeat in range(options.repeat):  # interleaved, so load changes hit all alike
        for others in sizes:
            for kind, state in configs if repeat % 2 == 0 else configs[::-1]:
                runs[kind, state, others].append(run(kind, state, others))
    medians = {
        key: (
            statistics.median(r["per_call_ms"] for r in measured),
            statistics.median(r["bytes_per_mutation"] for r in measured),
        )
        for key, measured in runs.items()
    }
    print(
        f"{CALLS} tool calls through create_agent, files in graph state, InMemorySaver; median of {options.repeat}\n"
    )
    print(
        "| middleware | state schema | other files in state | ms per tool call |"
        " checkpoint bytes per mutation |"
    )
    print("|---|---|---:|---:|---:|")
    for (kind, state, others), (per_call, per_mutation) in medians.items():
        name = schema_name(kind, state)
        print(f"| {kind} | {name} | {others:,} | {per_call:,.2f} | {per_mutation:,.0f} |")
    print()
    for state in STATES:
        verdicts(state, medians)
    long_thread(sizes)
    return 0


def long_thread(sizes: tuple[int, ...]) -> None:
    """Bytes per mutation over a thread long enough to cross the snapshot cadences."""
    stored = {
        (kind, others): run(kind, "recommended", others, LONG_CALLS)["bytes_per_mutation"]
        for kind in KINDS
        for others in sizes
    }
    print(f"\n{LONG_CALLS} tool calls, recommended schemas (checkpoint bytes are deterministic)\n")
    print("| middleware | other files in state | checkpoint bytes per mutation |")
    print("|---|---:|---:|")
    for (kind, others), per_mutation in stored.items():
        print(f"| {kind} | {others:,} | {per_mutation:,.0f} |")
    ours, deep = stored["ours", sizes[-1]], stored["deepagents", sizes[-1]]
    print(
        f"- {'PASS' if ours <= deep else 'FAIL'}: checkpoint bytes per mutation {ours:,.0f}"
        f" vs {deep:,.0f} ({sizes[-1]:,} files): {ours / deep:.2f}x (target 1.0x)"
    )
    growth = {kind: stored[kind, sizes[-1]] / stored[kind, sizes[0]] for kind in KINDS}
    print(
        f"- {'PASS' if growth['ours'] < 1.2 else 'FAIL'}: our bytes per mutation with"
        f" {sizes[-1]:,} vs {sizes[0]:,} other files: {growth['ours']:.2f}x (independent of"
        f" state size; deepagents' {growth['deepagents']:.2f}x)"
    )


def verdicts(state: str, medians: dict[tuple[str, str, int], tuple[float, float]]) -> None:
    """Print the targets of issue 19 for one pair of configurations."""
    ours, deep = medians["ours", state, 1000], medians["deepagents", state, 1000]
    pair = f"ours {schema_name('ours', state)} vs deepagents {schema_name('deepagents', state)}"
    judged = "the targets" if state == "recommended" else "for reference"
    print(f"{state.capitalize()} state schemas ({pair}), {judged}:")
    call_ratio = ours[0] / deep[0]
    print(
        f"- {'PASS' if call_ratio <= 0.9 else 'FAIL'}: per-call overhead {ours[0]:.2f} ms"
        f" vs {deep[0]:.2f} ms (1,000 files): {call_ratio:.2f}x (target 0.9x)"
    )
    bytes_ratio = ours[1] / deep[1]
    print(
        f"- {'PASS' if bytes_ratio <= 1.0 else 'FAIL'}: checkpoint bytes per mutation"
        f" {ours[1]:,.0f} vs {deep[1]:,.0f} (1,000 files): {bytes_ratio:.2f}x (target 1.0x)"
    )
    growth = ours[1] / medians["ours", state, 100][1]
    print(
        f"- {'PASS' if growth < 1.2 else 'FAIL'}: our bytes per mutation with 1,000 vs 100"
        f" other files: {growth:.2f}x (independent of state size)"
    )


if __name__ == "__main__":
    sys.exit(main())
