"""The host's work for a command, bounded, as an unprivileged agent (issue 49).

CI runs as root; here the whole agent (`create_agent`, the middleware, the sandbox)
runs as `nobody` through `setpriv`, on the system's `python3` with the project's
packages on its path, in a workspace `nobody` owns. As root a command's `chmod 000`
stops nothing the host does; as `nobody` it closes folders to the agent itself, and
without a cgroup nothing but the host's own bounds keeps a command's output small.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.unprivileged import folder_of_nobody, run_child

pytestmark = pytest.mark.integration

CHILD = """
import json, os, resource, sys
from pathlib import Path
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langchain_fstools import FilesystemMiddleware, LocalBackend
from langchain_fstools.core.changesets import removals_settled
from langchain_fstools.testing import ScriptedChatModel

root, mode, commands = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
root.mkdir()
(root / "a.txt").write_text("a\\n")
calls = [
    AIMessage(content="", tool_calls=[{"name": "execute", "args": {"command": c}, "id": f"c{n}"}])
    for n, c in enumerate(commands)
]
backend = LocalBackend(root, execute=True)
agent = create_agent(
    ScriptedChatModel(turns=[*calls, AIMessage(content="done")]),
    middleware=[FilesystemMiddleware(backend=backend, mode=mode)],
    checkpointer=InMemorySaver(),
)
config = {"configurable": {"thread_id": "t"}}
backend.execute("echo warm", timeout=30, output_limit=100)  # the session, started
baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = agent.invoke({"messages": [("user", "go")]}, config, version="v2")
removals_settled()
sessions = Path(os.environ["TMPDIR"]).glob("fstools-session-*")
left = [str(entry) for folder in sessions for entry in folder.iterdir()]
messages = [m for m in result.value["messages"] if isinstance(m, ToolMessage)]
print(json.dumps({
    "results": [{"status": m.status, "text": str(m.content)} for m in messages],
    "left": left,
    "growth_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - baseline,
}))
"""


@pytest.fixture
def place() -> Iterator[Path]:
    """A folder `nobody` owns, outside every home."""
    with folder_of_nobody(CHILD, "fstools-bounds-") as base:
        yield base


def as_nobody(place: Path, mode: str, *commands: str) -> dict[str, Any]:
    """Run `commands` as `execute` calls of one thread through `create_agent`, as `nobody`."""
    return run_child(place, str(place / "ws"), mode, json.dumps(list(commands)))


def test_as_nobody_folders_a_command_closed_to_its_owner_are_committed_whole(place: Path) -> None:
    command = "mkdir -p locked/in && echo kept > locked/in/f && chmod 000 locked/in locked"

    found = as_nobody(place, "accept_edits", command)

    assert [r["status"] for r in found["results"]] == ["success"], found
    assert "A /locked/in/f" in found["results"][0]["text"]
    locked = place / "ws" / "locked"
    assert stat.S_IMODE(locked.stat().st_mode) == 0
    assert stat.S_IMODE((locked / "in").stat().st_mode) == 0
    assert (locked / "in" / "f").read_text() == "kept\n"  # read as root
    assert found["left"] == []


def test_as_nobody_a_change_below_a_folder_the_agent_cannot_read_is_refused_whole(
    place: Path,
) -> None:
    closed = "mkdir -p locked/in && echo kept > locked/in/f && chmod 000 locked"

    found = as_nobody(place, "accept_edits", closed, "chmod 755 locked && echo new > locked/in/g")

    first, second = found["results"]
    assert first["status"] == "success", found
    assert second["status"] == "error", found
    assert "may not look into the workspace's folders above /locked" in second["text"]
    assert "Permission denied" not in second["text"]
    locked = place / "ws" / "locked"
    assert stat.S_IMODE(locked.stat().st_mode) == 0
    assert not (locked / "in" / "g").exists()
    assert found["left"] == []


def test_as_nobody_a_large_exported_variable_leaves_the_thread_working(place: Path) -> None:
    big = "export BIG=$(head -c 2000000 /dev/zero | tr '\\0' x); echo set"

    found = as_nobody(place, "bypass", big, "echo ${BIG-none}", "unset BIG; echo unset")

    assert [r["status"] for r in found["results"]] == ["success"] * 3, found
    assert "was not kept" in found["results"][0]["text"]
    assert found["results"][1]["text"].startswith("none\n")
    assert found["results"][2]["text"].startswith("unset\n")


def test_as_nobody_a_flood_of_the_state_descriptor_costs_the_agent_little(place: Path) -> None:
    flood = "head -c 1000000000 /dev/zero | tr '\\0' x >&1023; echo wrote"

    found = as_nobody(place, "bypass", flood, "echo still here")

    assert [r["status"] for r in found["results"]] == ["success"] * 2, found
    assert found["results"][1]["text"].startswith("still here\n")
    assert found["growth_kib"] < 64 * 1024, found  # a gigabyte written, little of it read
