"""SeaweedFS killed in the middle of an `apply_patch`: the answer says what each file holds.

A patch updates 30 files; the PUT of /p/f19.txt reaches the server and is stored, the
server is SIGKILLed before the client reads the reply, and the client sees the
connection error of a dead server (the hook below sends the PUT, kills the cluster,
and sends it again, so the error is the real one of obstore against the dead
gateway). The patch's undo meets the dead server too. Started again on its data, the
server shows each file's real state, and the answer must name every file that is not
as it was, with what it holds or that it is not known.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import obstore
import pytest
from obstore.store import S3Store

from langchain_fstools import FileToolkit, ObjectStoreBackend
from langchain_fstools.backends.objectstore import requests
from tests.integration.seaweedfs import SeaweedServer

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

FILES = 30
CUT = "p/f19.txt"


@pytest.fixture
def server() -> Iterator[SeaweedServer]:
    """A SeaweedFS cluster of this test's own (the test kills it)."""
    seaweed = SeaweedServer()
    try:
        seaweed.start()
        yield seaweed
    finally:
        seaweed.stop()
        seaweed.remove()


def backend_on(seaweed: SeaweedServer, prefix: str) -> ObjectStoreBackend:
    """The cluster's bucket, failing fast once it is gone (no retries, 2 s)."""
    quick = {"init_backoff": timedelta(milliseconds=10), "max_backoff": timedelta(milliseconds=10)}
    options: dict[str, Any] = {**seaweed.store_options()}
    options["client_options"] = {**options["client_options"], "timeout": "2s"}
    s3 = S3Store(
        seaweed.bucket("fstools"),
        retry_config={
            "max_retries": 0,
            "backoff": {**quick, "base": 2},
            "retry_timeout": timedelta(seconds=2),
        },
        **options,
    )
    return ObjectStoreBackend(s3, prefix=prefix)


def test_every_file_a_killed_store_may_hold_changed_is_named(
    server: SeaweedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = backend_on(server, "killed")
    for n in range(FILES):
        backend.write_bytes(f"/p/f{n}.txt", b"old\n")
    patch = "*** Begin Patch\n"
    patch += "".join(f"*** Update File: /p/f{n}.txt\n@@\n-old\n+new\n" for n in range(FILES))
    patch += "*** End Patch"
    put = obstore.put

    def put_then_die(store: Any, key: str, *args: Any, **kwargs: Any) -> Any:
        if not key.endswith(CUT):
            return put(store, key, *args, **kwargs)
        put(store, key, *args, **kwargs)  # stored; its reply is never read
        server.kill()
        return put(store, key, *args, **kwargs)  # the dead server's connection error

    monkeypatch.setattr(requests.obstore, "put", put_then_die)
    tool = next(t for t in FileToolkit(backend).get_tools() if t.name == "apply_patch")
    answer = tool.invoke({"patch": patch})
    monkeypatch.undo()
    server.start()
    real = {n: backend.read_bytes(f"/p/f{n}.txt") for n in range(FILES)}

    assert answer.startswith("Error: the patch failed and was only partly undone."), answer
    assert real[19] == b"new\n"  # the PUT in flight was stored
    said = dict(re.findall(r"^Not restored: (\S+) holds (.*)\.$", answer, re.MULTILINE))
    restored = re.search(r"^Restored as before the patch: (.*)\.$", answer, re.MULTILINE)
    back = set(restored[1].split(", ")) if restored else set()
    for n, data in real.items():
        path = f"/p/f{n}.txt"
        if path in back:
            assert data == b"old\n", (path, answer)
        elif path in said:
            if said[path].startswith("the patch's content"):
                assert data == b"new\n", (path, answer)
            else:
                assert said[path].startswith("what the store did not say"), (path, answer)
        else:  # not named: as it was
            assert data == b"old\n", (path, answer)
    assert "/p/f19.txt" in said, answer
