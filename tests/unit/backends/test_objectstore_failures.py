"""Object store failures name their cause: obstore's error texts (as obstore 0.x words
them, captured from real failures) read as a refused connection, a name that does not
resolve, a timeout, an HTTP status with the store's message, or missing credentials;
a listing that fails in a search says so too. The same over real sockets:
tests/integration/test_objectstore_failures.py."""

from __future__ import annotations

from typing import Any

import obstore
import pytest
from obstore.exceptions import GenericError, PermissionDeniedError
from obstore.store import MemoryStore

from langchain_fstools import FileToolkit, ObjectStoreBackend, StoreUnavailable
from langchain_fstools.backends.objectstore import requests, search
from langchain_fstools.backends.objectstore.failures import cause_of
from langchain_fstools.tools.render import render_error

REFUSED = """Generic S3 error: Error performing HEAD http://127.0.0.1:1/bucket/k in 325µs - HTTP error: error sending request

Debug source:
Generic {
    store: "S3",
    source: RetryError(
        RetryErrorImpl {
            method: HEAD,
            retry_timeout: 1s,
            inner: Http(
                HttpError {
                    kind: Connect,
                    source: ConnectError(
                        "tcp connect error",
                        127.0.0.1:1,
                        Os {
                            code: 111,
                            kind: ConnectionRefused,
                            message: "Connection refused",
                        },
                    ),
                },
            ),
        },
    ),
}"""
DNS = """Generic S3 error: Error performing HEAD http://store.invalid:9000/bucket/k in 2ms - HTTP error: error sending request

Debug source:
    ConnectError(
        "dns error",
        Custom {
            kind: Uncategorized,
            error: "failed to lookup address information: Name or service not known",
        },
    ),"""
TIMEOUT = """Generic S3 error: Error performing HEAD http://127.0.0.1:5/bucket/k in 1.0s - HTTP error: error sending request

Debug source:
            retry_timeout: 1s,
            inner: Http(
                HttpError {
                    kind: Timeout,
                    source: reqwest::Error {
                        kind: Request,
                        source: TimedOut,
                    },
                },
            ),"""
DENIED = (
    "The operation lacked the necessary privileges to complete for path k: Error performing"
    " GET http://127.0.0.1:5/bucket/k in 7ms - Server returned non-2xx status code: 403"
    ' Forbidden: <?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code>'
    "<Message>Access Denied by policy xyz</Message></Error>"
)
NO_CREDENTIALS = (
    "Generic S3 error: Error performing PUT http://169.254.169.254/latest/api/token in 2ms"
    " - Server returned non-2xx status code: 403 Forbidden: resolve_deny: denied destination"
)
UNAVAILABLE = (
    "Generic S3 error: Error performing GET http://127.0.0.1:5/bucket/k in 3ms - Server"
    " returned non-2xx status code: 503 Service Unavailable: SlowDown"
)
RANGE = (
    "Generic S3 error: Error performing GET http://127.0.0.1:5/bucket/k in 3ms - Server"
    " returned non-2xx status code: 416 Range Not Satisfiable: "
)


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (
            GenericError(REFUSED),
            ("connection refused (is the store running at its endpoint?)", False),
        ),
        (GenericError(DNS), ("its host name does not resolve (DNS)", True)),
        (GenericError(TIMEOUT), ("it did not answer in time", False)),
        (
            PermissionDeniedError(DENIED),
            ("access denied, HTTP 403: Access Denied by policy xyz", True),
        ),
        (GenericError(UNAVAILABLE), ("HTTP 503: SlowDown", False)),
        (GenericError(RANGE), None),
        (GenericError("Generic S3 error: something new"), None),
    ],
    ids=["refused", "dns", "timeout", "denied", "503", "416", "unknown"],
)
def test_the_cause_is_read_from_obstore_s_error(
    error: Exception, cause: tuple[str, bool] | None
) -> None:
    assert cause_of(error) == cause


def test_missing_credentials_say_what_to_configure() -> None:
    found = cause_of(GenericError(NO_CREDENTIALS))
    assert found is not None
    assert found[0].startswith("no credentials are configured")
    assert found[1] is True


def test_the_tool_result_words_a_lasting_cause_as_a_setup_problem() -> None:
    lasting = StoreUnavailable("GenericError", "its host name does not resolve (DNS)", lasting=True)
    assert render_error(lasting, tool="ls") == (
        "Error: the file store failed: its host name does not resolve (DNS) (GenericError)."
        " This is a setup problem, not your arguments: tell the user."
    )
    assert render_error(StoreUnavailable("GenericError"), tool="ls") == (
        "Error: the file store failed (GenericError). Try the call again; if it keeps"
        " failing, tell the user."
    )


class _FailingListing:
    def __aiter__(self) -> _FailingListing:
        return self

    async def __anext__(self) -> Any:
        raise GenericError(REFUSED)


@pytest.mark.parametrize(
    ("tool", "args"), [("glob", {"pattern": "*.py"}), ("grep", {"pattern": "x"})]
)
def test_a_search_whose_listing_fails_names_the_cause(
    monkeypatch: pytest.MonkeyPatch, tool: str, args: dict[str, Any]
) -> None:
    monkeypatch.setattr(search.obstore, "list", lambda *_, **__: _FailingListing())
    tools = {t.name: t for t in FileToolkit(ObjectStoreBackend(MemoryStore())).get_tools()}
    assert tools[tool].invoke(args) == (
        "Error: the file store failed: connection refused (is the store running at its"
        " endpoint?) (GenericError). Try the call again; if it keeps failing, tell the user."
    )


# ----- lost replies: a write the store did (or did not) do, then fell silent ------------


class _Dying:
    """obstore's calls over a `MemoryStore`: a `verb` (PUT, or DELETE) of `last` is done,
    then every call (its reply included) fails as a refused connection, unless
    `recovers`."""

    def __init__(
        self, monkeypatch: pytest.MonkeyPatch, last: str, *, stores: bool = True, verb: str = "put"
    ) -> None:
        self.last, self.stores, self.verb = last, stores, verb
        self.dead = self.recovers = False
        for name in ("put", "head", "get", "get_range", "delete", "list"):
            monkeypatch.setattr(requests.obstore, name, self._wrapped(name, getattr(obstore, name)))

    def _wrapped(self, name: str, call: Any) -> Any:
        def wrapped(store: Any, key: Any = None, *args: Any, **kwargs: Any) -> Any:
            if self.dead and not self.recovers:
                raise GenericError(REFUSED)
            if name == self.verb and key is not None and key.endswith(self.last):
                self.dead = True
                if self.stores:
                    call(store, key, *args, **kwargs)
                raise GenericError(REFUSED)
            return call(store, key, *args, **kwargs)

        return wrapped


def test_a_write_whose_reply_was_lost_is_read_back_and_found_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backend = ObjectStoreBackend(MemoryStore())
    dying = _Dying(monkeypatch, "a.txt")
    dying.recovers = True  # the store answers again: the re-read finds the object
    info = backend.write_bytes("/a.txt", b"new")
    assert dying.dead
    assert backend.read_bytes("/a.txt") == b"new"
    assert info.version == backend.stat("/a.txt").version


def test_a_write_whose_reply_was_lost_and_that_did_not_land_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backend = ObjectStoreBackend(MemoryStore())
    backend.write_bytes("/a.txt", b"old")
    dying = _Dying(monkeypatch, "a.txt", stores=False)
    dying.recovers = True
    with pytest.raises(StoreUnavailable):
        backend.write_bytes("/a.txt", b"new")
    assert backend.read_bytes("/a.txt") == b"old"


def test_a_patch_cut_by_a_dying_store_lists_every_file_it_may_have_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backend = ObjectStoreBackend(MemoryStore())
    for n in range(5):
        backend.write_bytes(f"/p/f{n}.txt", b"old\n")
    patch = (
        "*** Begin Patch\n"
        + "".join(f"*** Update File: /p/f{n}.txt\n@@\n-old\n+new\n" for n in range(5))
        + "*** End Patch"
    )
    tool = next(t for t in FileToolkit(backend).get_tools() if t.name == "apply_patch")
    _Dying(monkeypatch, "f2.txt")  # f0, f1 written; f2 stored, its reply lost; then silence
    answer = tool.invoke({"patch": patch})
    assert answer.startswith("Error: the patch failed and was only partly undone."), answer
    for n in range(5):
        assert f"/p/f{n}.txt" in answer, (n, answer)
    assert "Not restored: /p/f2.txt holds what the store did not say" in answer
    assert "Not restored: /p/f0.txt holds the patch's content" in answer
    monkeypatch.undo()  # the store answers again: f2 was stored, as the answer allowed
    assert backend.read_bytes("/p/f2.txt") == b"new\n"


def test_a_deletion_cut_by_a_dying_store_is_named_too(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = ObjectStoreBackend(MemoryStore())
    for n in range(2):
        backend.write_bytes(f"/p/f{n}.txt", b"old\n")
    patch = (
        "*** Begin Patch\n*** Update File: /p/f0.txt\n@@\n-old\n+new\n"
        "*** Delete File: /p/f1.txt\n*** End Patch"
    )
    tool = next(t for t in FileToolkit(backend).get_tools() if t.name == "apply_patch")
    _Dying(monkeypatch, "f1.txt", verb="delete")  # the deletion is done, its reply lost
    answer = tool.invoke({"patch": patch})
    assert "Not restored: /p/f1.txt holds what the store did not say" in answer, answer
    assert "Not restored: /p/f0.txt holds the patch's content" in answer, answer
