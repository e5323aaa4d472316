"""The effects machinery itself: drivers, errors thrown back, deadlines, context."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from typing import Any

import pytest

from langchain_fstools.core import calls
from langchain_fstools.core.calls import Call, DeadlinePassed, Effect

REQUEST = contextvars.ContextVar("REQUEST", default="none")


class _Backend:
    """Sync and async twins of `stat` and `read_bytes`, recording what they saw."""

    def __init__(self, *, block: float = 0.0, fail: Exception | None = None) -> None:
        self.block = block
        self.fail = fail
        self.seen: list[tuple[str, str, str]] = []

    def stat(self, path: str) -> str:
        self.seen.append(("stat", path, REQUEST.get()))
        if self.fail is not None:
            raise self.fail
        time.sleep(self.block)
        return f"info:{path}"

    def read_bytes(self, path: str) -> bytes:
        self.seen.append(("read_bytes", path, threading.current_thread().name))
        return path.encode()

    async def astat(self, path: str) -> str:
        self.seen.append(("astat", path, REQUEST.get()))
        if self.fail is not None:
            raise self.fail
        await asyncio.sleep(self.block)
        return f"info:{path}"

    async def aread_bytes(self, path: str) -> bytes:
        self.seen.append(("aread_bytes", path, "loop"))
        return path.encode()


def _two_calls() -> Effect[tuple[Any, Any]]:
    info = yield Call("stat", ("/a",))
    data = yield Call("read_bytes", ("/b",))
    return info, data


def _recovering() -> Effect[str]:
    try:
        yield Call("stat", ("/missing",))
    except FileNotFoundError as exc:
        return f"handled {exc.filename}"
    return "not raised"


def test_run_and_arun_answer_each_call_in_order() -> None:
    backend = _Backend()
    assert calls.run(_two_calls(), backend) == ("info:/a", b"/b")
    assert asyncio.run(calls.arun(_two_calls(), backend)) == ("info:/a", b"/b")
    assert [name for name, *_ in backend.seen] == ["stat", "read_bytes", "astat", "aread_bytes"]


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_a_backend_error_is_thrown_into_the_effect_at_its_yield(driver: str) -> None:
    backend = _Backend(fail=FileNotFoundError(2, "gone", "/missing"))
    effect = _recovering()
    result = (
        calls.run(effect, backend) if driver == "sync" else asyncio.run(calls.arun(effect, backend))
    )
    assert result == "handled /missing"


def test_an_error_the_effect_does_not_handle_propagates() -> None:
    backend = _Backend(fail=PermissionError("no"))
    with pytest.raises(PermissionError):
        calls.run(_two_calls(), backend)


def test_drive_is_the_loop_for_any_request_type() -> None:
    def asking() -> Any:
        first = yield 2
        second = yield first * 10
        return first + second

    assert calls.drive(asking(), lambda n: n + 1) == 3 + 31


def test_relay_changes_requests_and_passes_results_and_errors_through() -> None:
    def asking() -> Any:
        try:
            yield "boom"
        except ValueError as exc:
            caught = str(exc)
        got = yield "x"
        return caught, got

    def perform(request: str) -> str:
        if request == "boom!":
            raise ValueError(request)
        return request.upper()

    assert calls.drive(calls.relay(asking(), lambda r: r + "!"), perform) == ("boom!", "X!")


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_a_call_past_its_deadline_is_abandoned_as_deadline_passed(driver: str) -> None:
    backend = _Backend(block=2.0)

    def bounded() -> Effect[str]:
        try:
            yield from calls.before(time.monotonic() + 0.05, _two_calls())
        except DeadlinePassed:
            return "stopped"
        return "finished"

    started = time.monotonic()
    result = (
        calls.run(bounded(), backend)
        if driver == "sync"
        else asyncio.run(calls.arun(bounded(), backend))
    )
    assert result == "stopped"
    assert time.monotonic() - started < 1.5


def test_a_bounded_call_runs_on_a_worker_with_the_callers_context() -> None:
    backend = _Backend()
    token = REQUEST.set("call-7")
    try:
        calls.run(calls.before(time.monotonic() + 5, _two_calls()), backend)
    finally:
        REQUEST.reset(token)
    assert backend.seen[0] == ("stat", "/a", "call-7")
    assert backend.seen[1][2] == "fstools-call"  # the worker thread, not the caller's


def test_a_backend_whose_calls_never_block_runs_bounded_calls_inline() -> None:
    backend = _Backend()
    backend.calls_may_block = False  # type: ignore[attr-defined]
    calls.run(calls.before(time.monotonic() + 5, _two_calls()), backend)
    assert backend.seen[1][2] == threading.current_thread().name


def test_a_sub_effect_without_yield_from_makes_no_call() -> None:
    """The pitfall `drive` documents: the generator object is returned, never run."""
    backend = _Backend()

    def dropped() -> Effect[Any]:
        inner = calls.stat("/a")  # missing `yield from`
        yield from ()
        return inner

    result = calls.run(dropped(), backend)
    assert backend.seen == []
    assert hasattr(result, "send")  # a generator, not a FileInfo
