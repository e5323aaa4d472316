"""An offline demo: a scripted model drives `create_agent` with the file tools.

`python -m langchain_fstools demo` copies a small embedded workspace to a temporary
directory, runs an agent over it with a fake chat model that plays back a fixed list of
tool calls, and prints every call and result: reads, edits, searches, an image read
(a PNG drawn with Pillow at run time), a test log large enough to be evicted to
`/large_tool_results/`, and the refusals that keep a repository safe (editing a file the
agent has not read).
"""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from PIL import Image, ImageDraw

from langchain_fstools.backends.local.backend import LocalBackend
from langchain_fstools.backends.state import StateBackend
from langchain_fstools.middleware import FilesystemMiddleware
from langchain_fstools.testing import ScriptedChatModel

if TYPE_CHECKING:
    from collections.abc import Mapping

    from langchain_fstools.backends.protocol import Backend

WORKSPACE: dict[str, str] = {
    "/README.md": "# greeter\n\nA tiny package that greets people.\n",
    "/src/greeter/__init__.py": '"""Greeter."""\n',
    "/src/greeter/greet.py": (
        'def greet(name: str) -> str:\n    """Return a greeting."""\n    return f"Helo, {name}!"\n'
    ),
    "/tests/test_greet.py": (
        "from greeter.greet import greet\n\n\n"
        "def test_greet() -> None:\n"
        '    assert greet("Ada") == "Hello, Ada!"\n'
    ),
    "/windows.txt": "line one\r\nline two\r\n",
}
"""The sample workspace, virtual path → content."""

SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("glob", {"pattern": "*.py"}),
    ("grep", {"pattern": "Hello", "output_mode": "content"}),
    ("grep", {"pattern": r"return f\"\w+", "regex": True, "output_mode": "content"}),
    ("ls", {"path": "/src/greeter"}),
    ("read_file", {"file_path": "/src/greeter/greet.py"}),
    (
        "edit_file",
        {"file_path": "/src/greeter/greet.py", "old_string": "Helo", "new_string": "Hello"},
    ),
    ("edit_file", {"file_path": "/README.md", "old_string": "tiny", "new_string": "small"}),
    ("read_file", {"file_path": "/README.md"}),
    ("edit_file", {"file_path": "/README.md", "old_string": "tiny", "new_string": "small"}),
    ("read_file", {"file_path": "/windows.txt"}),
    (
        "edit_file",
        {"file_path": "/windows.txt", "old_string": "line two", "new_string": "line 2\nline 3"},
    ),
    ("write_file", {"file_path": "/CHANGELOG.md", "content": "- Fix the greeting typo.\n"}),
    ("read_file", {"file_path": "/src/greeter/greet.py", "offset": 3, "limit": 1}),
    ("read_file", {"file_path": "/src/greeter/greet.py", "offset": 3, "limit": 1}),
    ("read_file", {"file_path": "/docs/logo.png"}),
    ("run_tests", {}),
    ("grep", {"pattern": "FAILED", "path": "/large_tool_results", "output_mode": "content"}),
    ("read_file", {"file_path": "/../etc/passwd"}),
    (
        "apply_patch",
        {
            "patch": "*** Begin Patch\n"
            "*** Update File: /CHANGELOG.md\n"
            "@@\n"
            " - Fix the greeting typo.\n"
            "+- Test the greeting's punctuation.\n"
            "*** Add File: /tests/test_punctuation.py\n"
            "+from greeter.greet import greet\n"
            "+\n"
            "+\n"
            "+def test_ends_with_an_exclamation_mark() -> None:\n"
            '+    assert greet("Bo").endswith("!")\n'
            "*** End Patch\n"
        },
    ),
]
"""The tool calls the scripted model makes, one per turn."""


LOGO = "/docs/logo.png"
"""Where the demo's image lives in the workspace."""


def logo_png() -> bytes:
    """A small PNG (a greeting bubble), drawn with Pillow."""
    image = Image.new("RGB", (96, 64), "white")
    draw = ImageDraw.Draw(image)
    draw.rounded_rectangle((6, 6, 90, 46), radius=10, outline="navy", width=3)
    draw.polygon([(20, 46), (34, 46), (18, 58)], fill="navy")
    draw.text((22, 18), "Hello", fill="navy")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@tool
def run_tests() -> str:
    """Run the test suite and return its full log."""
    lines = [f"tests/test_{n:04d}.py::test_case PASSED" for n in range(1, 4001)]
    lines[2716] = 'tests/test_greet.py::test_greet FAILED - assert "Helo, Ada!" == "Hello, Ada!"'
    return "\n".join(lines)


def scripted_messages() -> list[AIMessage]:
    """The model's turns: one tool call each, then a closing answer."""
    turns = [
        AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{n}"}])
        for n, (name, args) in enumerate(SCRIPT, start=1)
    ]
    return [*turns, AIMessage(content="Fixed the greeting typo and noted it in CHANGELOG.md.")]


def build_agent(backend: Backend) -> Any:
    """An agent with FilesystemMiddleware over `backend`, a scripted model, a checkpointer."""
    return create_agent(
        ScriptedChatModel(turns=scripted_messages()),
        tools=[run_tests],
        middleware=[FilesystemMiddleware(backend=backend)],
        checkpointer=InMemorySaver(),
    )


def run(kind: str, root: Path) -> None:
    """Run the scripted agent on the sample workspace and print the transcript."""
    files: dict[str, str | bytes] = {**WORKSPACE, LOGO: logo_png()}
    if kind == "local":
        for path, content in files.items():
            target = root / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content.encode() if isinstance(content, str) else content)
        backend: Backend = LocalBackend(root)
        initial: dict[str, Any] = {}
    else:
        backend = StateBackend()
        initial = {"files": seed_state(files)}
    agent = build_agent(backend)
    config = {"configurable": {"thread_id": "demo"}}
    request = {"role": "user", "content": "Fix the failing greeting test."}
    print(f"== langchain-fstools demo ({kind} backend) ==\n")
    for update in agent.stream({"messages": [request], **initial}, config, stream_mode="updates"):
        for node in update.values():
            for message in (node or {}).get("messages", []):
                print_message(message)
    if kind == "local":
        print("== /src/greeter/greet.py on disk after the run ==")
        print((root / "src/greeter/greet.py").read_text())
        print(f"== /windows.txt bytes: {(root / 'windows.txt').read_bytes()!r}")


def seed_state(files: Mapping[str, str | bytes]) -> dict[str, Any]:
    """Turn the sample workspace (text or bytes per path) into `files` channel records."""
    view = StateBackend().bind(_SeedRuntime())
    for path, content in files.items():
        view.write_bytes(path, content.encode() if isinstance(content, str) else content)
    update: dict[str, Any] = view.state_update()["files"]
    return update


class _SeedRuntime:
    state: dict[str, Any] = {"files": {}}  # noqa: RUF012 - a read-only stand-in


def print_message(message: Any) -> None:
    """Print one AI tool call or tool result."""
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            args = ", ".join(f"{k}={v!r}" for k, v in call["args"].items())
            print(f">>> {call['name']}({args})")
        if message.content:
            print(f"<<< assistant: {message.content}\n")
    elif isinstance(message, ToolMessage):
        marker = "!!" if message.status == "error" else "<<"
        print("\n".join(f"{marker} {line}" for line in _shown(message.content).splitlines()))
        print()


def _shown(content: str | list[Any]) -> str:
    """A tool result's text, with non-text blocks (images, files) summarised."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif isinstance(block, dict):
            size = len(str(block.get("base64") or block.get("data") or ""))
            parts.append(
                f"[{block.get('type')} block: {block.get('mime_type')}, {size:,} base64 chars]"
            )
        else:
            parts.append(str(block))
    return "\n".join(parts)


def run_demo(kind: str = "local") -> int:
    """Run the demo (`kind`: `local` or `state`) in a scratch folder; 0 when done."""
    with tempfile.TemporaryDirectory(prefix="fstools-demo-") as root:
        try:
            run(kind, Path(root))
        except BrokenPipeError:  # output piped into `head`: stop quietly
            sys.stderr.close()
    return 0
