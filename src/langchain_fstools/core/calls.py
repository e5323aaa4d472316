"""Backend calls as data, so one tool body serves both sync and async.

Tool logic is written once as a generator that *yields* `Call`s and receives their
results; `run` drives it with the sync backend methods and `arun` with their async
twins. An exception raised by the backend is thrown back into the generator at the
`yield`, so tool code handles errors exactly as if it had called the backend directly.

    def size_of(path: str) -> Effect[int]:
        info = yield from calls.stat(path)
        return info.size

    calls.run(size_of("/a.txt"), backend)          # sync
    await calls.arun(size_of("/a.txt"), backend)   # async
"""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from langchain_fstools.core.changesets import ChangeReview, ChangeSet
    from langchain_fstools.core.results import Deletion, ExecutionResult, FileInfo, Write

T = TypeVar("T")
R = TypeVar("R")

Method = Literal[
    "stat",
    "exists",
    "read_bytes",
    "read_checked",
    "write_bytes",
    "write_many",
    "committed",
    "delete",
    "mkdir",
    "list_dir",
    "list_page",
    "move",
    "execute",
    "execute_changes",
    "commit",
    "judge_changes",
    "run_blocking",
    "resolve",
]
"""The backend methods an effect may call; each has an `a`-prefixed async twin."""

Effect = Generator["Call", Any, T]
"""A computation that performs backend calls and returns a `T`."""


@dataclass(frozen=True, slots=True)
class Call:
    """One backend method invocation: `backend.<method>(*args, **kwargs)`.

    With a `deadline` (a `time.monotonic()` value), a call still running then is
    abandoned and `DeadlinePassed` raised in its place (see `before`).
    """

    method: Method
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    deadline: float | None = None


class DeadlinePassed(Exception):
    """A call bounded by a deadline had not returned when the deadline passed."""


def drive(effect: Generator[R, Any, T], perform: Callable[[R], Any]) -> T:
    """Run `effect` to its end, answering each request it yields with `perform(request)`.

    The one driver loop (with `adrive` and `relay`): `run` and the store backend use it.
    What `perform` raises is thrown back into `effect` at its `yield`, so the effect
    handles a failed call as it would a direct one. A pitfall it cannot catch: a
    sub-effect called without `yield from` is a generator never run, not a call.
    """
    try:
        request = next(effect)
        while True:
            try:
                result = perform(request)
            except Exception as exc:  # noqa: BLE001 - handed back to the effect
                request = effect.throw(exc)
            else:
                request = effect.send(result)
    except StopIteration as stop:
        value: T = stop.value
        return value


async def adrive(effect: Generator[R, Any, T], perform: Callable[[R], Awaitable[Any]]) -> T:
    """Async `drive`: each request answered by awaiting `perform(request)`."""
    try:
        request = next(effect)
        while True:
            try:
                result = await perform(request)
            except Exception as exc:  # noqa: BLE001 - handed back to the effect
                request = effect.throw(exc)
            else:
                request = effect.send(result)
    except StopIteration as stop:
        value: T = stop.value
        return value


def relay(effect: Generator[R, Any, T], change: Callable[[R], R]) -> Generator[R, Any, T]:
    """`effect` with each request it yields replaced by `change(request)` on its way out."""
    try:
        request = next(effect)
        while True:
            try:
                result = yield change(request)
            except Exception as exc:  # noqa: BLE001 - handed back to the effect
                request = effect.throw(exc)
            else:
                request = effect.send(result)
    except StopIteration as stop:
        value: T = stop.value
        return value


def run(effect: Effect[T], backend: object) -> T:
    """Drive `effect` to completion with the sync methods of `backend` (a `Backend`).

    A call with a deadline runs on a worker thread the driver waits for until then,
    unless the backend says its calls never block (`calls_may_block = False`).
    Blocking work an effect must do itself (a dry run, a parse) goes through `blocking`,
    so the async driver runs it off the event loop.
    """
    workers: list[_Worker] = []
    may_block = getattr(backend, "calls_may_block", True)

    def perform(call: Call) -> Any:
        method = getattr(backend, call.method)
        if call.deadline is None or not may_block:
            return method(*call.args, **call.kwargs)
        if not workers or not workers[-1].idle:
            if workers:
                workers.pop().close()
            workers.append(_Worker())
        return workers[-1].call(method, call)

    try:
        return drive(effect, perform)
    finally:
        for worker in workers:
            worker.close()


async def arun(effect: Effect[T], backend: object) -> T:
    """Drive `effect` to completion with the async methods of `backend` (a `Backend`)."""

    def perform(call: Call) -> Awaitable[Any]:
        pending = getattr(backend, "a" + call.method)(*call.args, **call.kwargs)
        return pending if call.deadline is None else _awaited_before(pending, call.deadline)

    return await adrive(effect, perform)


def before(deadline: float, effect: Effect[T]) -> Effect[T]:
    """`effect` with every call it makes bounded by `deadline`.

    A call still running at `deadline` is abandoned (its thread or task left to finish
    alone) and `DeadlinePassed` is raised into `effect` instead.
    """
    return relay(effect, lambda call: Call(call.method, call.args, call.kwargs, deadline))


async def _awaited_before(pending: Any, deadline: float) -> Any:
    import asyncio  # noqa: PLC0415 - only here: the engine shipped to SSH hosts loads without it

    # Not `wait_for`: it turns the call's own TimeoutError (an RPC timeout) into the
    # deadline too; only a call still running at the deadline is `DeadlinePassed`.
    task = asyncio.ensure_future(pending)
    try:
        done, _ = await asyncio.wait({task}, timeout=max(0.0, deadline - time.monotonic()))
    finally:
        if not task.done():
            task.cancel()
    if not done:
        raise DeadlinePassed
    return task.result()


class _Worker:
    """One daemon thread running bounded calls, so a blocked call can be abandoned."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self.idle = True
        threading.Thread(target=self._serve, daemon=True, name="fstools-call").start()

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()

    def call(self, method: Callable[..., Any], call: Call) -> Any:
        """Run `method(*call.args, **call.kwargs)` here, waiting until `call.deadline`."""
        outcome: list[tuple[bool, Any]] = []
        done = threading.Event()
        context = contextvars.copy_context()

        def job() -> None:
            try:
                outcome.append((True, context.run(method, *call.args, **call.kwargs)))
            except BaseException as exc:  # noqa: BLE001 - re-raised on the caller's thread
                outcome.append((False, exc))
            finally:
                done.set()

        self._jobs.put(job)
        if not done.wait(max(0.0, (call.deadline or 0.0) - time.monotonic())):
            self.idle = False  # still busy with the abandoned call
            raise DeadlinePassed
        succeeded, value = outcome[0]
        if succeeded:
            return value
        raise value

    def close(self) -> None:
        """Let the thread end once its current call (if any) returns."""
        self._jobs.put(None)


def stat(path: str) -> Effect[FileInfo]:
    """`Backend.stat` as an effect."""
    info: FileInfo = yield Call("stat", (path,))
    return info


def exists(path: str) -> Effect[bool]:
    """`Backend.exists` as an effect."""
    found: bool = yield Call("exists", (path,))
    return found


def read_bytes(path: str, start: int = 0, size: int | None = None) -> Effect[bytes]:
    """`Backend.read_bytes` as an effect."""
    data: bytes = yield Call("read_bytes", (path, start, size))
    return data


def read_checked(
    path: str, start: int = 0, size: int | None = None, *, expected_version: str
) -> Effect[bytes]:
    """`Backend.read_checked` as an effect."""
    data: bytes = yield Call(
        "read_checked", (path, start, size), {"expected_version": expected_version}
    )
    return data


def write_bytes(path: str, data: bytes, *, expected_version: str | None = None) -> Effect[FileInfo]:
    """`Backend.write_bytes` as an effect."""
    info: FileInfo = yield Call("write_bytes", (path, data), {"expected_version": expected_version})
    return info


def write_many(
    writes: Sequence[Write], deletions: Sequence[Deletion] = (), *, receipt: str | None = None
) -> Effect[list[FileInfo]]:
    """`Backend.write_many` as an effect."""
    given: dict[str, Any] = {"deletions": tuple(deletions)} if deletions else {}
    if receipt is not None:
        given["receipt"] = receipt
    infos: list[FileInfo] = yield Call("write_many", (tuple(writes),), given)
    return infos


def committed(receipt: str) -> Effect[bool]:
    """`Backend.committed` as an effect."""
    found: bool = yield Call("committed", (receipt,))
    return found


def delete(path: str) -> Effect[None]:
    """`Backend.delete` as an effect."""
    yield Call("delete", (path,))


def mkdir(path: str) -> Effect[None]:
    """`Backend.mkdir` as an effect."""
    yield Call("mkdir", (path,))


def list_dir(path: str) -> Effect[list[FileInfo]]:
    """`Backend.list_dir` as an effect."""
    entries: list[FileInfo] = yield Call("list_dir", (path,))
    return entries


def list_page(path: str, *, after: str | None, limit: int) -> Effect[list[FileInfo]]:
    """`Backend.list_page` as an effect."""
    entries: list[FileInfo] = yield Call("list_page", (path,), {"after": after, "limit": limit})
    return entries


def move(source: str, destination: str) -> Effect[FileInfo]:
    """`Backend.move` as an effect."""
    info: FileInfo = yield Call("move", (source, destination))
    return info


def execute(command: str, *, timeout: float, output_limit: int) -> Effect[ExecutionResult]:
    """`Backend.execute` as an effect."""
    result: ExecutionResult = yield Call(
        "execute", (command,), {"timeout": timeout, "output_limit": output_limit}
    )
    return result


def execute_changes(command: str, *, timeout: float, output_limit: int) -> Effect[ExecutionResult]:
    """`Backend.execute_changes` as an effect."""
    result: ExecutionResult = yield Call(
        "execute_changes", (command,), {"timeout": timeout, "output_limit": output_limit}
    )
    return result


def judge_changes(changes: ChangeSet) -> Effect[ChangeReview]:
    """`Backend.judge_changes` as an effect."""
    review: ChangeReview = yield Call("judge_changes", (changes,))
    return review


def commit(changes: ChangeSet) -> Effect[list[FileInfo]]:
    """`Backend.commit` as an effect."""
    infos: list[FileInfo] = yield Call("commit", (changes,))
    return infos


def resolve(path: str) -> Effect[str]:
    """`Backend.resolve` as an effect: the path the backend will open (links followed)."""
    resolved: str = yield Call("resolve", (path,))
    return resolved


def blocking(function: Callable[[], T]) -> Effect[T]:
    """`Backend.run_blocking` as an effect: a thread on the async path."""
    result: T = yield Call("run_blocking", (function,))
    return result


__all__ = [
    "Call",
    "DeadlinePassed",
    "Effect",
    "arun",
    "before",
    "blocking",
    "commit",
    "committed",
    "delete",
    "execute",
    "execute_changes",
    "exists",
    "judge_changes",
    "list_dir",
    "list_page",
    "mkdir",
    "move",
    "read_bytes",
    "read_checked",
    "resolve",
    "run",
    "stat",
    "write_bytes",
    "write_many",
]
