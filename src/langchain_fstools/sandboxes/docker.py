"""`DockerSandbox`: a deepagents sandbox that is one Docker container per workspace.

The container is made by `DockerSandbox.create` (or found again by `attach`, from any
process, by its id) and removed by `close`. Everything goes through the Docker Engine
API, never through the host's view of the container's files, so the engine may be
remote. deepagents' `BaseSandbox` builds its file operations on the three calls here:

- **`execute`** runs `sh -c COMMAND` by `docker exec`, in the workspace, through a small
  wrapper: the command gets a session (and process group) of its own, whose leader's
  pid is kept in `/tmp/.fstools/run/<token>`, and every process it starts carries
  `FSTOOLS_EXEC=<token>` in its environment. When the command's shell ends, the wrapper
  kills what is left of its group (`cmd &` does not outlive the call, nor hold its
  output open). At the deadline a second exec kills the group and every process with
  that token (one that left the group with `setsid` too), and the result says the
  command timed out (exit code 124, as deepagents' providers do). stderr goes to
  stdout's pipe, so the output keeps the order it was written in; past
  `max_output_bytes`, its first and last halves are kept and the result is `truncated`.
- **`open_stream`** starts a command as `execute` does, with its standard input kept
  open to this side (`docker exec -i`): `SandboxBackend` keeps its relay on one
  (`backends.sandbox.relay`). It has no deadline and counts as a running command for
  `idle_timeout` while it lives.
- **`upload_files`** sends one tar archive for the batch's files in the workspace
  (`PUT .../archive`, extracted there, so a workspace volume of a read-only container
  takes them) and one for the others (extracted at `/`); parents are made, a directory
  is never replaced by a file. If the engine refuses an archive, its files go one by
  one, so each gets its own error. The engine writes below a tmpfs mount, not into it
  (its archive calls do not see such mounts), so `/tmp` is the container's own disk.
- **`download_files`** fetches each path as a tar archive (`GET .../archive`) and
  reads the engine's stat of it first: a directory or a device is refused without
  reading it, a symbolic link is followed (the engine resolves it inside the container).

Relative paths are taken from the workspace, as commands run there. Errors per file are
deepagents' literals (`file_not_found`, `is_directory`, `permission_denied`,
`invalid_path`); a sandbox that is gone (its container stopped, paused or removed, say
by another client) is not an exception: `execute` returns an `ExecuteResponse` whose
`exit_code` is None and whose output ends with one sentence saying so, and each file
of an upload or download gets that sentence as its error. A host path never appears in
either.

What `Limits` maps to (each for the whole container, since all of a workspace's
commands share it): `memory` the container's memory (swap not added), `processes` its
pids limit, `cpu_seconds`, `open_files` and `file_size` the rlimits `cpu`, `nofile` and
`fsize` of every process, `tmp_size` the size of `/dev/shm`. `/tmp` is no tmpfs (see
`upload_files`), and `changed_bytes` does not map (the engine sizes a container's
writable layer only on some storage drivers); `cpus` (a share of CPUs) is an argument
of `create`, since `Limits` has none.

With `idle_timeout`, the container's first process ends it (and the engine removes
it) once no command ran for that many seconds and none is running: a worker that died
leaves nothing behind for long.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import io
import json
import posixpath
import secrets
import socket
import tarfile
import threading
import time
from typing import TYPE_CHECKING, Any, Final, Self

from langchain_fstools.core.extras import require
from langchain_fstools.core.wording import plural

require("docker", extra="docker", feature="DockerSandbox")
require("deepagents", extra="docker", feature="DockerSandbox")

import docker  # noqa: E402
import docker.errors  # noqa: E402
import requests  # noqa: E402
from deepagents.backends.protocol import (  # noqa: E402
    FILE_NOT_FOUND,
    INVALID_PATH,
    IS_DIRECTORY,
    PERMISSION_DENIED,
    ExecuteResponse,
    FileDownloadResponse,
    FileUploadResponse,
)
from deepagents.backends.sandbox import BaseSandbox  # noqa: E402
from docker.types import Ulimit  # noqa: E402

from langchain_fstools.shell.sandbox.limits import DEFAULT_LIMITS, Limits  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import TracebackType

    from docker import DockerClient

LABEL: Final = "langchain-fstools.sandbox"
"""The label every container `create` makes carries; its value is the workspace."""

DEFAULT_TIMEOUT: Final = 120
"""Seconds a command may run when `execute` is given no timeout."""

DEFAULT_MAX_OUTPUT: Final = 100_000
"""Bytes of a command's output `execute` returns (deepagents' local shell keeps as many)."""

KILL_GRACE: Final = 2.0
"""Seconds `execute` waits, after killing a command at its deadline, for its output to end
(a process that escaped both the group and the token could hold it open forever)."""

ALIVE_EVERY: Final = 5.0
"""Seconds between two checks, while a command runs, that its container still runs."""

EXIT_GRACE: Final = 2.0
"""Seconds `execute` waits, after the output ended, for the engine to record the exit code."""

STOP_GRACE: Final = 0.5
"""Seconds a command's SIGKILL exit waits for the engine to say its container stopped."""

_KILLED: Final = 128 + 9
"""The exit status of a process SIGKILLed: the command's own, or its container's end."""

_STATE: Final = "/tmp/.fstools"  # noqa: S108 - inside the container
"""The container's bookkeeping folder: `active` (touched after each command) and `run/`
(one file per running command, holding its process group)."""

_WRAPPER: Final = f"""\
cd "$3" 2>/dev/null || {{ mkdir -p "$3" && cd "$3"; }} || exit 126
setsid -w sh -c 'echo $$ > "$0" 2>/dev/null; exec sh -c "$1" 2>&1' {_STATE}/run/"$1" "$2"
status=$?
read -r group 2>/dev/null < {_STATE}/run/"$1" && kill -KILL "-$group" 2>/dev/null
rm -f {_STATE}/run/"$1"; : 2>/dev/null > {_STATE}/active
exit $status
"""
"""`sh -c _WRAPPER fstools TOKEN COMMAND WORKSPACE`: run COMMAND in WORKSPACE (made again
if a command removed it) in a session of its own, then kill what is left of it (`_INIT`
made the folder; builtins and redirections instead of `cat`,
`touch` and `mkdir` spare three processes)."""

_KILLER: Final = f"""\
group=$(cat {_STATE}/run/"$1" 2>/dev/null) && kill -KILL "-$group" 2>/dev/null
for process in /proc/[0-9]*; do
    tr '\\0' '\\n' < "$process/environ" 2>/dev/null | grep -qx "FSTOOLS_EXEC=$1" \\
        && kill -KILL "${{process#/proc/}}" 2>/dev/null
done
rm -f {_STATE}/run/"$1"; : 2>/dev/null > {_STATE}/active
exit 0
"""
"""`sh -c _KILLER fstools TOKEN`: kill the command with TOKEN, its group and its heirs."""

_INIT: Final = f"""\
trap 'exit 0' TERM INT
mkdir -p {_STATE}/run; touch {_STATE}/active
[ "$1" -gt 0 ] || exec sleep infinity
while :; do
    sleep 1 & wait $!
    [ -z "$(ls {_STATE}/run)" ] || continue
    idle=$(( $(date +%s) - $(stat -c %Y {_STATE}/active) ))
    [ "$idle" -lt "$1" ] || exit 0
done
"""
"""`sh -c _INIT fstools IDLE`: the container's process; ends it after IDLE idle seconds."""

_DIRECTORY: Final = 1 << 31
_SYMLINK: Final = 1 << 27
_NOT_REGULAR: Final = _DIRECTORY | _SYMLINK | 1 << 26 | 1 << 25 | 1 << 24 | 1 << 19
"""Go's `fs.FileMode` bits in the engine's stat: directory, link, device, pipe, socket,
irregular."""

_NO_FOLDER: Final = "no_folder"
"""`_put`'s answer when the folder to extract in is missing (never a caller's error)."""

_FOLLOW_LINKS: Final = 40
"""Symbolic links a download follows before it gives up (Linux's own limit)."""


class DockerSandbox(BaseSandbox):
    """A deepagents sandbox in one Docker container: commands and files of one workspace.

    Make one with `create` (a new container) or `attach` (one made before, by id, from
    any process). The container has no network unless asked, the limits of `Limits`,
    and the workspace folder as every command's working directory. `close` (or leaving
    a `with` block) removes the container. See the module docstring for how commands
    are timed out and files moved.

    Args:
        client: The Docker client that reaches the container's engine.
        container_id: The container's id.
        workspace: The workspace folder inside the container (absolute).
        timeout: Seconds a command may run when `execute` is given none (0: no limit).
            Default: 120.
        max_output_bytes: Bytes of output `execute` returns. Default: 100,000.

    Raises:
        ValueError: the workspace is not absolute, or a number is out of range.

    Example:
        ```python
        with DockerSandbox.create(image="fstools-sandbox:latest") as sandbox:
            sandbox.upload_files([("/workspace/app.py", b"print(42)\\n")])
            print(sandbox.execute("python3 app.py").output)  # 42
        ```
    """

    def __init__(
        self,
        client: DockerClient,
        container_id: str,
        *,
        workspace: str = "/workspace",
        timeout: int = DEFAULT_TIMEOUT,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT,
    ) -> None:
        """Use the container `container_id` (see `create` and `attach`)."""
        _check_settings(workspace, timeout, max_output_bytes)
        self._client = client
        self._id = container_id
        self.workspace = workspace
        self.timeout = timeout
        self.max_output_bytes = max_output_bytes

    @classmethod
    def create(
        cls,
        *,
        image: str,
        workspace: str = "/workspace",
        limits: Limits = DEFAULT_LIMITS,
        network: bool = False,
        cpus: float | None = None,
        idle_timeout: int | None = None,
        timeout: int = DEFAULT_TIMEOUT,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT,
        client: DockerClient | None = None,
    ) -> DockerSandbox:
        """Start a new container for one workspace and return its sandbox.

        Args:
            image: The image to run, already on the engine (it is never pulled):
                Linux with `sh`, coreutils and util-linux's `setsid`; deepagents' file
                operations also need `python3` (docs/remote-sandboxes.md builds one).
            workspace: The workspace folder inside the container, made if missing.
                Default: `/workspace`.
            limits: What the container may use (see the module docstring for what
                maps). Default: `Limits()`.
            network: Whether the container has the engine's default network. Default:
                False (`network_mode="none"`: no network at all).
            cpus: How many CPUs' time the container may use (`1.5`). Default: None
                (no limit).
            idle_timeout: Seconds without a command after which the container ends
                itself and is removed. Default: None (it runs until `close`).
            timeout: As in the constructor. Default: 120.
            max_output_bytes: As in the constructor. Default: 100,000.
            client: The Docker client. Default: `docker.from_env()` (`DOCKER_HOST`).

        Returns:
            The sandbox, its container running.

        Raises:
            ValueError: an argument is out of range, or the engine has no such image.
            docker.errors.DockerException: the engine cannot be reached.
        """
        _check_settings(workspace, timeout, max_output_bytes)
        if cpus is not None and cpus <= 0:
            raise ValueError(f"cpus must be more than 0; got {cpus}")
        if idle_timeout is not None and idle_timeout < 1:
            raise ValueError(f"idle_timeout must be at least 1 second; got {idle_timeout}")
        client = client or docker.from_env()
        try:
            container = client.containers.create(
                image,
                ["sh", "-c", _INIT, "fstools", str(idle_timeout or 0)],
                init=True,
                auto_remove=True,
                working_dir=workspace,
                labels={LABEL: workspace},
                network_mode=None if network else "none",
                security_opt=["no-new-privileges"],
                **_resources(limits, cpus),
            )
        except docker.errors.ImageNotFound:
            raise ValueError(
                f"The Docker Engine has no image {image!r}: pull or build it first"
                " (docs/remote-sandboxes.md shows how)"
            ) from None
        try:
            container.start()
        except BaseException:
            container.remove(force=True)
            raise
        return cls(
            client,
            str(container.id),
            workspace=workspace,
            timeout=timeout,
            max_output_bytes=max_output_bytes,
        )

    @classmethod
    def attach(
        cls,
        container_id: str,
        *,
        timeout: int = DEFAULT_TIMEOUT,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT,
        client: DockerClient | None = None,
    ) -> DockerSandbox:
        """The sandbox of a running container `create` made (in this process or another).

        Args:
            container_id: The container's id (`sandbox.id`), or a unique prefix of it.
            timeout: As in the constructor. Default: 120.
            max_output_bytes: As in the constructor. Default: 100,000.
            client: The Docker client. Default: `docker.from_env()` (`DOCKER_HOST`).

        Returns:
            The sandbox, with the workspace `create` was given.

        Raises:
            ValueError: no running container has that id, or it is not a sandbox's.
            docker.errors.DockerException: the engine cannot be reached.
        """
        client = client or docker.from_env()
        try:
            container = client.containers.get(container_id)
        except docker.errors.NotFound:
            raise ValueError(f"No sandbox container {container_id!r}: create one") from None
        workspace = container.labels.get(LABEL)
        if workspace is None:
            raise ValueError(f"The container {container_id!r} is not a DockerSandbox's")
        if container.status != "running":
            raise ValueError(f"The sandbox container {container_id!r} is not running")
        return cls(
            client,
            str(container.id),
            workspace=workspace,
            timeout=timeout,
            max_output_bytes=max_output_bytes,
        )

    @classmethod
    async def acreate(cls, **settings: Any) -> DockerSandbox:
        """`create`, off the event loop (the same arguments)."""
        return await asyncio.to_thread(lambda: cls.create(**settings))

    @classmethod
    async def aattach(cls, container_id: str, **settings: Any) -> DockerSandbox:
        """`attach`, off the event loop (the same arguments)."""
        return await asyncio.to_thread(lambda: cls.attach(container_id, **settings))

    @property
    def id(self) -> str:
        """The container's id: what `attach` takes to find this sandbox again."""
        return self._id

    def execute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:
        """Run `command` with `sh -c` in the workspace; kill its processes at the deadline.

        Args:
            command: The shell command.
            timeout: Seconds it may run; 0 for no limit. Default: the sandbox's
                `timeout`.

        Returns:
            Its output (stdout and stderr as they came, bounded), exit code and
            whether output was left out. A timed-out command has exit code 124; a
            sandbox that is gone, exit code None (the output says which).

        Raises:
            ValueError: `timeout` is negative.
        """
        limit = self.timeout if timeout is None else timeout
        if limit < 0:
            raise ValueError(f"timeout must be 0 (no limit) or more; got {limit}")
        try:
            token, exec_id, stream = self._start(command)
        except (docker.errors.APIError, requests.RequestException) as error:
            return ExecuteResponse(output=self._unavailable(error), exit_code=None)
        output = _Output(self.max_output_bytes)
        watch = _Watch(stream, limit or None, kill=lambda: self._kill(token), alive=self.is_running)
        try:
            watch.start()
            with contextlib.suppress(OSError):
                for chunk in output_frames(stream):
                    output.add(chunk)
        finally:
            watch.finished()
            stream.close()
        truncated = output.cut > 0
        if watch.expired:
            note = (
                f"Error: Command timed out after {plural(limit, 'second')} and was killed. Run it"
                " with a longer timeout, or in the background, if it needs more time."
            )
            return ExecuteResponse(output.text(note), exit_code=124, truncated=truncated)
        code = None if watch.gone else self._exit_code(exec_id)
        if code is None or (code == _KILLED and not self._survives()):
            return ExecuteResponse(output.text(self._gone()), None, truncated=truncated)
        return ExecuteResponse(output.text(), exit_code=code, truncated=truncated)

    def open_stream(self, command: str) -> DockerStream:
        """Start `command` as `execute` would, with its standard input open to this side.

        What `SandboxBackend` keeps its relay on (`backends.sandbox.relay`): one
        `docker exec -i`, written to and read from for as long as the command runs. It
        counts as a running command for `idle_timeout`; it has no deadline.

        Args:
            command: The shell command.

        Returns:
            The stream: its standard input to write, its output (stderr in it) to read.

        Raises:
            ConnectionError: the engine refused or did not answer (the sentence says
                which).
        """
        try:
            _, _, stream = self._start(command, stdin=True)
        except (docker.errors.APIError, requests.RequestException) as error:
            raise ConnectionError(self._unavailable(error).removeprefix("Error: ")) from None
        return DockerStream(stream)

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        """Write each `(path, bytes)`, making missing parents; one error per file.

        Args:
            files: Paths (absolute, or relative to the workspace) and their contents.

        Returns:
            One response per file, in order; `error` is None, `is_directory` (a folder
            is there), `invalid_path` (a parent is a file, or the path is malformed),
            `permission_denied` (a read-only place), or a sentence.
        """
        answers: list[FileUploadResponse | None] = [None] * len(files)
        batch: list[tuple[int, str, bytes]] = []
        for index, (path, content) in enumerate(files):
            resolved = self._resolve(path)
            if resolved is None:
                answers[index] = FileUploadResponse(path, INVALID_PATH)
            else:
                batch.append((index, resolved, content))
        within = self.workspace + "/"
        groups = [
            (self.workspace, [item for item in batch if item[1].startswith(within)]),
            ("/", [item for item in batch if not item[1].startswith(within)]),
        ]
        for root, group in groups:  # a group may be added while this loop runs
            error = self._put(root, group) if group else None
            if error == _NO_FOLDER:  # the workspace was removed: extracted at /, it is made
                groups.append(("/", group))
            elif error is not None:
                for item in group:
                    alone = error if len(group) == 1 else self._put(root, [item])
                    answers[item[0]] = FileUploadResponse(files[item[0]][0], alone)
        return [
            answer or FileUploadResponse(path)
            for answer, (path, _) in zip(answers, files, strict=True)
        ]

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        """Read each path's bytes (following links); one error per path.

        Args:
            paths: Paths (absolute, or relative to the workspace).

        Returns:
            One response per path, in order: its `content`, or `error`:
            `file_not_found`, `is_directory`, `invalid_path` (malformed, a link
            loop, or not a regular file: a device, a pipe), or a sentence.
        """
        responses = []
        for path in paths:
            resolved = self._resolve(path)
            if resolved is None:
                responses.append(FileDownloadResponse(path, error=INVALID_PATH))
                continue
            content, error = self._get(resolved)
            responses.append(FileDownloadResponse(path, content=content, error=error))
        return responses

    def close(self) -> None:
        """Remove the container and whatever runs in it (nothing to do if it is gone)."""
        try:
            self._client.api.remove_container(self._id, force=True)
        except docker.errors.APIError as error:
            if error.status_code not in {404, 409}:  # gone, or being removed already
                raise

    async def aclose(self) -> None:
        """`close`, off the event loop."""
        await asyncio.to_thread(self.close)

    def __enter__(self) -> Self:
        """The sandbox itself; leaving the block removes its container."""
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        """Remove the container."""
        self.close()

    async def __aenter__(self) -> Self:
        """The sandbox itself; leaving the block removes its container."""
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        """Remove the container, off the event loop."""
        await self.aclose()

    # ----- the engine's side ------------------------------------------------------------

    def _start(self, command: str, *, stdin: bool = False) -> tuple[str, str, Any]:
        """`command` started by `docker exec` through `_WRAPPER`: its token, exec and connection.

        Raises:
            docker.errors.APIError, requests.RequestException: the engine refused or
                did not answer.
        """
        token = secrets.token_hex(8)
        api = self._client.api
        exec_id = api.exec_create(
            self._id,
            ["sh", "-c", _WRAPPER, "fstools", token, command, self.workspace],
            environment={"FSTOOLS_EXEC": token},
            workdir="/",  # the wrapper enters the workspace, or makes it again
            stdin=stdin,
        )["Id"]
        return token, exec_id, api.exec_start(exec_id, socket=True)

    def _kill(self, token: str) -> None:
        """Kill the command started with `token`: its process group and its heirs."""
        api = self._client.api
        with contextlib.suppress(docker.errors.APIError, requests.RequestException):
            exec_id = api.exec_create(self._id, ["sh", "-c", _KILLER, "fstools", token])["Id"]
            api.exec_start(exec_id)

    def _exit_code(self, exec_id: str) -> int | None:
        """The exec's exit code, once the engine has it (None if it never does)."""
        until = time.monotonic() + EXIT_GRACE
        while True:
            try:
                state = self._client.api.exec_inspect(exec_id)
            except (docker.errors.APIError, requests.RequestException):
                return None
            if not state.get("Running") and state.get("ExitCode") is not None:
                return int(state["ExitCode"])
            if time.monotonic() >= until:
                return None
            time.sleep(0.01)

    def _survives(self) -> bool:
        """Whether the container still runs after one of its commands was SIGKILLed.

        The engine learns that a killed container stopped a little after its commands'
        exits, so a container still running is asked again for `STOP_GRACE` seconds.
        """
        until = time.monotonic() + STOP_GRACE
        while self.is_running():
            if time.monotonic() >= until:
                return True
            time.sleep(0.05)
        return False

    def is_running(self) -> bool:
        """Whether the container runs (False when it is gone or the engine does not answer)."""
        try:
            state = self._client.api.inspect_container(self._id)["State"]
        except (docker.errors.APIError, requests.RequestException):
            return False
        return bool(state.get("Running")) and not state.get("Paused")

    def _gone(self) -> str:
        return (
            f"Error: the sandbox is gone (its container {self._id[:12]} was stopped,"
            " paused or removed); start a new sandbox."
        )

    def _unavailable(self, error: Exception) -> str:
        """The sentence for a call the engine refused (its API errors) or never answered."""
        if not isinstance(error, docker.errors.APIError):
            return (
                "Error: the Docker Engine did not answer; check that it runs and is"
                " reachable, then try again."
            )
        return self._gone()

    def _resolve(self, path: str) -> str | None:
        """`path` as an absolute, normalised container path; None if it is malformed."""
        if not path or "\0" in path:
            return None
        resolved = posixpath.normpath(posixpath.join(self.workspace, path))
        return "/" + resolved.lstrip("/")

    def _archive_url(self) -> str:
        api = self._client.api
        return f"{api.base_url}/v{api.api_version}/containers/{self._id}/archive"

    def _put(self, root: str, batch: list[tuple[int, str, bytes]]) -> str | None:
        """Extract `batch` in one archive at `root`; None, or the error for all of it."""
        try:
            answer = self._client.api.put(
                self._archive_url(),
                params={"path": root, "noOverwriteDirNonDir": "true"},
                data=_tar([(posixpath.relpath(path, root), data) for _, path, data in batch]),
            )
        except requests.RequestException as error:
            return self._unavailable(error)
        return None if answer.ok else self._put_error(root, answer)

    def _put_error(self, root: str, answer: requests.Response) -> str:
        """The error of an upload the engine refused."""
        message = _message(answer)
        if answer.status_code == 404 and root != "/" and "No such container" not in message:  # noqa: PLR2004
            return _NO_FOLDER
        if "cannot overwrite directory" in message:
            return IS_DIRECTORY
        if "not a directory" in message:
            return INVALID_PATH
        if "read-only" in message or "permission denied" in message:
            return PERMISSION_DENIED
        return self._refused(answer, "write")

    def _get(self, path: str) -> tuple[bytes | None, str | None]:
        """`path`'s bytes, or the error, following links inside the container."""
        for _ in range(_FOLLOW_LINKS):
            try:
                answer = self._client.api.get(
                    self._archive_url(), params={"path": path}, stream=True
                )
            except requests.RequestException as error:
                return None, self._unavailable(error)
            with answer:
                if not answer.ok:
                    return None, self._get_error(answer)
                mode, target = _stat(answer)
                if not (mode & _SYMLINK and target):
                    return _content(answer, mode)
                path = target
        return None, INVALID_PATH

    def _get_error(self, answer: requests.Response) -> str:
        """The error of a download the engine refused."""
        message = _message(answer)
        if answer.status_code == 404 and "No such container" in message:  # noqa: PLR2004
            return self._gone()
        if answer.status_code == 404 or "not a directory" in message:  # noqa: PLR2004
            return FILE_NOT_FOUND
        if "too many links" in message:
            return INVALID_PATH
        return self._refused(answer, "read")

    def _refused(self, answer: requests.Response, verb: str) -> str:
        """The sentence for an archive call the engine refused for another reason."""
        if answer.status_code in {404, 409} and not self.is_running():
            return self._gone()
        return (
            f"Error: the Docker Engine could not {verb} this file (HTTP"
            f" {answer.status_code}); check the path and try again."
        )


class _Watch:
    """Watches a running command: kills it at its deadline, lets its output go.

    The output is let go when it will not end: a process left both the group and the
    token, or the container is gone (a runtime that dies may never close an exec's
    output; checked every `ALIVE_EVERY` seconds).
    """

    def __init__(
        self,
        stream: Any,
        seconds: float | None,
        *,
        kill: Callable[[], None],
        alive: Callable[[], bool],
    ) -> None:
        self.stream = stream
        self.kill = kill
        self.alive = alive
        self.seconds = seconds
        self.expired = False
        """The deadline came first: the command was killed."""
        self.gone = False
        """The container stopped while the command ran."""
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def finished(self) -> None:
        """The output ended: stop watching (`expired` and `gone` are final after this)."""
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        until = None if self.seconds is None else time.monotonic() + self.seconds
        while True:
            left = ALIVE_EVERY if until is None else until - time.monotonic()
            if self._done.wait(max(0.0, min(left, ALIVE_EVERY))):
                return
            if until is not None and time.monotonic() >= until:
                self.expired = True
                self.kill()
                if not self._done.wait(KILL_GRACE):
                    self._let_go()
                return
            if not self.alive():
                self.gone = True
                self._let_go()
                return

    def _let_go(self) -> None:
        """End the read of the output: shut the connection's socket down."""
        raw = getattr(self.stream, "_sock", self.stream)
        with contextlib.suppress(OSError):
            raw.shutdown(socket.SHUT_RDWR)


class DockerStream:
    """A command's `docker exec` connection, kept open: its input written, its output read.

    Made by `DockerSandbox.open_stream`; `backends.sandbox.relay.SandboxStream`'s shape.
    """

    def __init__(self, stream: Any) -> None:
        """Hold the engine's hijacked connection `stream`."""
        self._stream = stream
        self._socket: socket.socket = getattr(stream, "_sock", stream)
        self._frames = output_frames(stream)

    def send(self, data: bytes, timeout: float | None) -> None:
        """Write `data` to the command's standard input, within `timeout` seconds.

        Raises:
            TimeoutError: it did not all go in time (the stream is then broken).
        """
        self._socket.settimeout(timeout)
        self._socket.sendall(data)

    def receive(self, timeout: float | None) -> bytes:
        """The next part of the command's output; `b""` once it ended.

        Raises:
            TimeoutError: nothing came within `timeout` seconds; the stream is then
                broken (the engine's framing may have been cut).
        """
        self._socket.settimeout(timeout)
        return next(self._frames, b"")

    def close(self) -> None:
        """End the command's standard input and the connection (the command then ends)."""
        with contextlib.suppress(OSError):
            self._socket.shutdown(socket.SHUT_RDWR)
        self._stream.close()


_FRAME_HEADER: Final = 8
"""An exec stream's frame header: the stream (1 stdout, 2 stderr), three zeros, the size."""


def output_frames(stream: Any) -> Iterator[bytes]:
    """The payloads of a non-tty exec's output stream, as the engine framed them.

    Read through the HTTP response's own buffered reader: reading its headers, the
    reader may have taken the first frames too (a command that printed at once, on a
    busy machine), and the raw socket `exec_start(socket=True)` hands out (what
    docker-py's `frames_iter` reads) no longer has them: the output came back empty
    while the command had printed (docker-py issue 3332).
    """
    response = getattr(stream, "_response", None)
    reader = getattr(getattr(getattr(response, "raw", None), "_fp", None), "fp", None)
    if reader is None:  # no response kept beside the socket: read the socket itself
        reader = stream
    read = reader.read if hasattr(reader, "read") else reader.recv
    while True:
        header = _read_exactly(read, _FRAME_HEADER)
        if len(header) < _FRAME_HEADER:
            return
        size = int.from_bytes(header[4:], "big")
        payload = _read_exactly(read, size)
        if payload:
            yield payload
        if len(payload) < size:
            return


def _read_exactly(read: Callable[[int], bytes], size: int) -> bytes:
    """`size` bytes from `read`, fewer only at the stream's end."""
    parts: list[bytes] = []
    left = size
    while left > 0:
        part = read(left)
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


class _Output:
    """A command's output, bounded: its first and last halves once it is too long."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.head = bytearray()
        self.tail = bytearray()
        self.cut = 0
        """Bytes left out between the head and the tail."""

    def add(self, chunk: bytes) -> None:
        room = self.limit // 2 - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        extra = len(self.tail) - (self.limit - self.limit // 2)
        if extra > 0:
            del self.tail[:extra]
            self.cut += extra

    def text(self, note: str = "") -> str:
        """The output as text, saying where bytes were left out, and `note` after it."""
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if self.cut:
            head += f"\n... [{plural(self.cut, 'byte')} of output left out] ...\n"
        body = head + tail
        if note:
            body = f"{body.rstrip()}\n\n{note}" if body.strip() else note
        return body


def _check_settings(workspace: str, timeout: int, max_output_bytes: int) -> None:
    if not workspace.startswith("/") or posixpath.normpath(workspace) in {"/", "//"}:
        raise ValueError(f"workspace must be an absolute folder below /; got {workspace!r}")
    if timeout < 0:
        raise ValueError(f"timeout must be 0 (no limit) or more seconds; got {timeout}")
    if max_output_bytes < 1024:  # noqa: PLR2004
        raise ValueError(f"max_output_bytes must be at least 1,024; got {max_output_bytes:,}")


def _resources(limits: Limits, cpus: float | None) -> dict[str, Any]:
    """The container settings for `limits` and `cpus` (see the module docstring)."""
    settings: dict[str, Any] = {}
    if limits.memory is not None:
        settings |= {"mem_limit": limits.memory, "memswap_limit": limits.memory}
    if limits.processes is not None:
        settings["pids_limit"] = limits.processes
    if cpus is not None:
        settings["nano_cpus"] = round(cpus * 1e9)
    rlimits = {"cpu": limits.cpu_seconds, "nofile": limits.open_files}
    if limits.file_size is not None:
        rlimits["fsize"] = limits.file_size
    settings["ulimits"] = [
        Ulimit(name=name, soft=value, hard=value)
        for name, value in rlimits.items()
        if value is not None
    ]
    if limits.tmp_size is not None:
        settings["shm_size"] = limits.tmp_size
    return settings


def _tar(files: list[tuple[str, bytes]]) -> bytes:
    """An uncompressed tar of `files` (relative names), mode 0644."""
    buffer = io.BytesIO()
    now = time.time()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for path, content in files:
            entry = tarfile.TarInfo(path)
            entry.size, entry.mode, entry.mtime = len(content), 0o644, now
            archive.addfile(entry, io.BytesIO(content))
    return buffer.getvalue()


def _content(answer: requests.Response, mode: int) -> tuple[bytes | None, str | None]:
    """The bytes of the file in the archive `answer`, or why there are none."""
    if mode & _DIRECTORY:
        return None, IS_DIRECTORY
    if mode & _NOT_REGULAR:
        return None, INVALID_PATH
    with tarfile.open(fileobj=io.BytesIO(answer.content)) as archive:
        member = archive.next()
        extracted = archive.extractfile(member) if member is not None else None
        return (extracted.read() if extracted is not None else b""), None


def _stat(answer: requests.Response) -> tuple[int, str]:
    """The file mode and link target the engine sent with an archive."""
    header = answer.headers.get("X-Docker-Container-Path-Stat", "")
    try:
        stat = json.loads(base64.b64decode(header))
    except (binascii.Error, ValueError):
        return 0, ""
    return int(stat.get("mode", 0)), str(stat.get("linkTarget") or "")


def _message(answer: requests.Response) -> str:
    """The engine's error message (host paths in it are never passed on)."""
    try:
        return str(answer.json().get("message", ""))
    except ValueError:
        return answer.text


__all__ = ["DEFAULT_MAX_OUTPUT", "DEFAULT_TIMEOUT", "LABEL", "DockerSandbox"]
