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

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from langchain_fstools.core.results import ExecutionResult, FileInfo, Write

T = TypeVar("T")

Method = Literal[
    "stat",
    "exists",
    "read_bytes",
    "write_bytes",
    "write_many",
    "delete",
    "mkdir",
    "list_dir",
    "move",
    "execute",
    "run_blocking",
]
"""The backend methods an effect may call; each has an `a`-prefixed async twin."""

Effect = Generator["Call", Any, T]
"""A computation that performs backend calls and returns a `T`."""


@dataclass(frozen=True, slots=True)
class Call:
    """One backend method invocation: `backend.<method>(*args, **kwargs)`."""

    method: Method
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


def run(effect: Effect[T], backend: object) -> T:
    """Drive `effect` to completion with the sync methods of `backend` (a `Backend`)."""
    try:
        call = next(effect)
        while True:
            try:
                result = getattr(backend, call.method)(*call.args, **call.kwargs)
            except Exception as exc:  # noqa: BLE001 - handed back to the effect
                call = effect.throw(exc)
            else:
                call = effect.send(result)
    except StopIteration as stop:
        value: T = stop.value
        return value


async def arun(effect: Effect[T], backend: object) -> T:
    """Drive `effect` to completion with the async methods of `backend` (a `Backend`)."""
    try:
        call = next(effect)
        while True:
            try:
                result = await getattr(backend, "a" + call.method)(*call.args, **call.kwargs)
            except Exception as exc:  # noqa: BLE001 - handed back to the effect
                call = effect.throw(exc)
            else:
                call = effect.send(result)
    except StopIteration as stop:
        value: T = stop.value
        return value


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


def write_bytes(path: str, data: bytes, *, expected_version: str | None = None) -> Effect[FileInfo]:
    """`Backend.write_bytes` as an effect."""
    info: FileInfo = yield Call("write_bytes", (path, data), {"expected_version": expected_version})
    return info


def write_many(writes: Sequence[Write]) -> Effect[list[FileInfo]]:
    """`Backend.write_many` as an effect."""
    infos: list[FileInfo] = yield Call("write_many", (tuple(writes),))
    return infos


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


def blocking(function: Callable[[], T]) -> Effect[T]:
    """`Backend.run_blocking` as an effect: a thread on the async path."""
    result: T = yield Call("run_blocking", (function,))
    return result


__all__ = [
    "Call",
    "Effect",
    "arun",
    "blocking",
    "delete",
    "execute",
    "exists",
    "list_dir",
    "mkdir",
    "move",
    "read_bytes",
    "run",
    "stat",
    "write_bytes",
    "write_many",
]
