"""A store that ignores conditional writes gets none: s3rver (npm, 3.7.1) accepts a
wrong `If-Match` and a create of an existing key, so racing writers and racing
`edit_file` calls are all refused with the sentence naming it and the option that
accepts the risk; with `conditional_writes="none"` it is written to, as the user chose.
(SeaweedFS, which checks them, has one winner: tests/integration/test_objectstore_seaweedfs.py.)

s3rver is installed with `npm ci` from tests/integration/s3rver/ into a cache folder on
first use (`npm_packages`) and runs on 127.0.0.1. Skipped, with the reason, only when Node.js or npm is
not installed.
"""

from __future__ import annotations

import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from obstore.store import S3Store

from langchain_fstools import FileToolkit, ObjectStoreBackend
from langchain_fstools.backends import ABSENT
from langchain_fstools.errors import ConditionalWritesIgnored
from tests.integration.npm_packages import installed

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

PACKAGE = Path(__file__).parent / "s3rver"
BUCKET = "fstools"
WRITERS = 8
REFUSED = (
    "Error: the file store does not check conditional writes, so this write could silently"
    " overwrite someone else's; writes are refused until the store is configured. Tell the"
    " user (retrying will not help)."
)


@pytest.fixture(scope="module")
def s3rver_dir() -> Path:
    """A folder with s3rver installed by `npm ci` (kept across runs)."""
    return installed(PACKAGE, "s3rver")


@pytest.fixture(scope="module")
def endpoint(s3rver_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """s3rver on a free loopback port, with the bucket made; stopped at the end."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data = tmp_path_factory.mktemp("s3rver")
    script = s3rver_dir / "node_modules" / "s3rver" / "bin" / "s3rver.js"
    server = subprocess.Popen(
        [
            "node",
            str(script),
            "-d",
            str(data),
            "-a",
            "127.0.0.1",
            "-p",
            str(port),
            "--silent",
            "--configure-bucket",
            BUCKET,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as client:
                if client.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"s3rver did not start: {server.stderr.read()!r}")  # type: ignore[union-attr]
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=10)


def backend(endpoint: str, prefix: str, **options: str) -> ObjectStoreBackend:
    """A backend of its own (as each writer process has), on the shared bucket."""
    store = S3Store(
        BUCKET,
        endpoint=endpoint,
        region="us-east-1",
        access_key_id="S3RVER",
        secret_access_key="S3RVER",  # noqa: S106 - s3rver's fixed test credentials
        client_options={"allow_http": True},
    )
    return ObjectStoreBackend(store, prefix=prefix, **options)  # type: ignore[arg-type]


def test_racing_writers_are_all_refused_with_the_sentence(endpoint: str) -> None:
    prefix = f"race-{uuid.uuid4().hex}"

    def write(n: int) -> BaseException | None:
        try:
            backend(endpoint, prefix).write_bytes(
                "/one.txt", f"{n}".encode(), expected_version=ABSENT
            )
        except BaseException as exc:  # noqa: BLE001 - the outcome is the result
            return exc
        return None

    with ThreadPoolExecutor(WRITERS) as pool:
        outcomes = list(pool.map(write, range(WRITERS)))
    assert all(isinstance(o, ConditionalWritesIgnored) for o in outcomes), outcomes
    sentence = str(outcomes[0])
    assert f'S3Store(bucket="{BUCKET}") at {endpoint} ignores conditional writes' in sentence
    assert 'conditional_writes="none"' in sentence
    assert not backend(endpoint, prefix, conditional_writes="none").exists("/one.txt")


def test_racing_edits_are_all_refused(endpoint: str) -> None:
    prefix = f"edits-{uuid.uuid4().hex}"
    seeded = backend(endpoint, prefix, conditional_writes="none")  # the risk accepted
    seeded.write_bytes("/plan.md", b"ship on friday\n")

    def edit(n: int) -> str:
        tools = {t.name: t for t in FileToolkit(backend(endpoint, prefix)).get_tools()}
        tools["read_file"].invoke({"file_path": "/plan.md"})
        args = {"file_path": "/plan.md", "old_string": "friday", "new_string": f"day {n}"}
        return str(tools["edit_file"].invoke(args))

    with ThreadPoolExecutor(WRITERS) as pool:
        answers = list(pool.map(edit, range(WRITERS)))
    assert answers == [REFUSED] * WRITERS
    assert seeded.read_bytes("/plan.md") == b"ship on friday\n"
