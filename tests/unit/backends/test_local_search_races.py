"""A folder swapped for a link out of the root while ripgrep walks never lets a byte out.

`grep` and `glob` on `LocalBackend` run `rg` on the host, and rg opens what it walks by
name: while a swapper exchanges `/sub` with a link to a folder outside the root that
holds a secret (`renameat2` with `RENAME_EXCHANGE`, from a thread of the test or from a
command run by `execute`), hundreds of searches run. rg runs confined to reads beneath
the root (`shell.spawner`), so not one name or byte of the outside folder comes back.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from langchain_fstools import FileToolkit, LocalBackend
from langchain_fstools.shell.sandbox.confine import landlock_abi
from langchain_fstools.shell.sandbox.sandbox import Sandbox, find_bwrap
from tests.unit.backends.test_local_races import SWAPPER, exchange, stop_file

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

SECONDS = 3.0
"""How long the searches run against the swapper."""

SECRET = "AKIAOUTSIDE0SECRET"  # noqa: S105 - planted outside the root
"""In every file of the outside folder, and in the name of one of them."""

CALLS = (
    ("grep", {"pattern": "key", "head_limit": 0}),
    ("grep", {"pattern": "key", "output_mode": "content", "head_limit": 0}),
    ("grep", {"pattern": "key", "output_mode": "count", "head_limit": 0}),
    ("grep", {"pattern": "key", "path": "/sub", "head_limit": 0}),
    ("glob", {"pattern": "**/*"}),
    ("glob", {"pattern": "*", "path": "/sub"}),
)

pytestmark = pytest.mark.skipif(landlock_abi() < 1, reason="needs Landlock")


@pytest.fixture
def arena(tmp_path: Path) -> Iterator[Path]:
    """`root/sub` (ten files saying `key = inside`) and `root/decoy`, a link to the secret."""
    root, outside = tmp_path / "root", tmp_path / "aws"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    for n in range(10):
        (root / "sub" / f"f{n}.txt").write_text("key = inside\n")
        (outside / f"f{n}.txt").write_text(f"aws_secret_access_key = {SECRET}\n")
    (outside / f"{SECRET}.txt").write_text(f"aws_secret_access_key = {SECRET}\n")
    (root / "decoy").symlink_to(outside)
    yield root
    if (root / "sub").is_symlink():
        exchange(root / "sub", root / "decoy")


def search_while(backend: LocalBackend, swapping: Callable[[], bool]) -> list[str]:
    """Every search result of SECONDS of calls (four threads) while `swapping()` holds."""
    tools = {tool.name: tool for tool in FileToolkit(backend, tools=["grep", "glob"]).get_tools()}
    deadline = time.monotonic() + SECONDS

    def worker(offset: int) -> list[str]:
        results = []
        n = offset
        while time.monotonic() < deadline and swapping():
            name, arguments = CALLS[n % len(CALLS)]
            results.append(str(tools[name].invoke(arguments)))
            n += 1
        return results

    with ThreadPoolExecutor(4) as pool:
        return [text for texts in pool.map(worker, range(4)) for text in texts]


def assert_nothing_leaked(results: list[str]) -> None:
    assert len(results) > 40
    leaked = [text for text in results if SECRET in text or "aws" in text]
    assert not leaked, leaked[:3]
    assert any("key = inside" in text for text in results)  # some searches got in


def test_a_thread_swapping_a_folder_never_lets_a_search_out(arena: Path) -> None:
    swaps = [0]
    done = threading.Event()

    def swap() -> None:
        while not done.is_set():
            exchange(arena / "sub", arena / "decoy")
            swaps[0] += 1

    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        results = search_while(LocalBackend(arena), lambda: True)
    finally:
        done.set()
        swapper.join()
    assert_nothing_leaked(results)
    assert swaps[0] > 100


_BWRAP = pytest.mark.skipif(find_bwrap() is None, reason="needs bubblewrap")


@pytest.mark.parametrize(
    "sandbox",
    [None, pytest.param(Sandbox(), marks=_BWRAP)],
    ids=["unconfined", "default"],
)
def test_a_command_swapping_a_folder_never_lets_a_search_out(arena: Path, sandbox: Any) -> None:
    """The swapper is the agent's own `execute`, unconfined or in the default sandbox."""
    backend = LocalBackend(arena, execute=True, sandbox=sandbox)
    stop = stop_file(arena)
    output: list[str] = []
    command = threading.Thread(
        target=lambda: output.append(
            backend.execute(
                f"python3 -c '{SWAPPER.format(seconds=SECONDS + 5)}'",
                timeout=SECONDS + 30,
                output_limit=1000,
            ).output
        )
    )
    command.start()
    time.sleep(0.5)  # the interpreter starts swapping
    try:
        results = search_while(backend, command.is_alive)
    finally:
        stop.write_bytes(b"stop")
        command.join()
    assert_nothing_leaked(results)
    assert "swaps" in output[0], output
