"""DockerSandbox.upload_files and download_files: bytes round trip, one error per file."""

from __future__ import annotations

from typing import TYPE_CHECKING

import docker
import pytest
from deepagents.backends.protocol import FileDownloadResponse, FileUploadResponse

from langchain_fstools.sandboxes.docker import LABEL, DockerSandbox

if TYPE_CHECKING:
    from tests.integration.docker.engine import DockerEngine

pytestmark = pytest.mark.integration

BINARY = bytes(range(256)) * 64 + b"\r\n\x00 last line without newline"


def test_binary_bytes_round_trip_and_parents_are_made(docker_sandbox: DockerSandbox) -> None:
    uploaded = docker_sandbox.upload_files(
        [("/workspace/deep/er/data.bin", BINARY), ("notes.txt", b"relative\n")]
    )
    assert uploaded == [
        FileUploadResponse("/workspace/deep/er/data.bin"),
        FileUploadResponse("notes.txt"),
    ]
    downloaded = docker_sandbox.download_files(["/workspace/deep/er/data.bin", "notes.txt"])
    assert downloaded == [
        FileDownloadResponse("/workspace/deep/er/data.bin", content=BINARY),
        FileDownloadResponse("notes.txt", content=b"relative\n"),
    ]
    listing = docker_sandbox.execute("wc -c < deep/er/data.bin; cat notes.txt")
    assert listing.output == f"{len(BINARY)}\nrelative\n"


def test_an_upload_replaces_a_file_and_a_download_follows_links(
    docker_sandbox: DockerSandbox,
) -> None:
    docker_sandbox.upload_files([("/workspace/a.txt", b"old")])
    docker_sandbox.upload_files([("/workspace/a.txt", b"new")])
    docker_sandbox.execute("ln -s a.txt link.txt && ln -s /workspace dir-link")
    downloaded = docker_sandbox.download_files(["/workspace/link.txt", "/workspace/dir-link/a.txt"])
    assert [response.content for response in downloaded] == [b"new", b"new"]


def test_each_failed_upload_says_why_and_the_others_are_written(
    docker_sandbox: DockerSandbox,
) -> None:
    docker_sandbox.execute("mkdir folder && echo x > file")
    uploaded = docker_sandbox.upload_files(
        [
            ("/workspace/folder", b"would replace a folder"),
            ("/workspace/file/below", b"below a file"),
            ("", b"no path"),
            ("/workspace/bad\0name", b"a NUL"),
            ("/workspace/good.txt", b"written"),
        ]
    )
    assert [response.error for response in uploaded] == [
        "is_directory",
        "invalid_path",
        "invalid_path",
        "invalid_path",
        None,
    ]
    assert (
        docker_sandbox.execute("ls -p; cat good.txt").output == "file\nfolder/\ngood.txt\nwritten"
    )


def test_each_failed_download_says_why(docker_sandbox: DockerSandbox) -> None:
    docker_sandbox.execute("mkdir folder && echo x > file && mkfifo pipe && ln -s a b && ln -s b a")
    paths = [
        "/workspace/a",
        "/workspace/missing",
        "/workspace/folder",
        "/workspace/file/below",
        "/workspace/pipe",
        "/dev/null",
        "",
        "/workspace/file",
    ]
    downloaded = docker_sandbox.download_files(paths)
    assert [(response.path, response.error) for response in downloaded] == [
        ("/workspace/a", "invalid_path"),
        ("/workspace/missing", "file_not_found"),
        ("/workspace/folder", "is_directory"),
        ("/workspace/file/below", "file_not_found"),
        ("/workspace/pipe", "invalid_path"),
        ("/dev/null", "invalid_path"),
        ("", "invalid_path"),
        ("/workspace/file", None),
    ]
    assert downloaded[-1].content == b"x\n"


def test_a_read_only_place_is_permission_denied(docker_engine: DockerEngine) -> None:
    """A container run read-only with its workspace on a volume, as an image may be run."""
    container = docker_engine.client.containers.run(
        docker_engine.image,
        ["sleep", "60"],
        detach=True,
        read_only=True,
        network_mode="none",
        labels={LABEL: "/workspace"},
        mounts=[docker.types.Mount("/workspace", None, type="volume")],
    )
    try:
        sandbox = DockerSandbox.attach(container.id, client=docker_engine.client)
        uploaded = sandbox.upload_files([("/etc/new.conf", b"x"), ("/workspace/ok", b"y")])
        assert [response.error for response in uploaded] == ["permission_denied", None]
        assert sandbox.download_files(["/workspace/ok"])[0].content == b"y"
    finally:
        container.remove(force=True, v=True)


def test_a_file_uploaded_to_tmp_is_seen_by_commands(docker_sandbox: DockerSandbox) -> None:
    """deepagents' edit uploads to /tmp: it must not be a mount the archive calls miss."""
    docker_sandbox.upload_files([("/tmp/.edit_old", b"seen")])
    assert docker_sandbox.execute("cat /tmp/.edit_old").output == "seen"


def test_a_removed_workspace_is_made_again(docker_sandbox: DockerSandbox) -> None:
    assert docker_sandbox.execute("cd / && rm -rf /workspace").exit_code == 0
    assert docker_sandbox.upload_files([("/workspace/sub/a.txt", b"back")])[0].error is None
    docker_sandbox.execute("cd / && rm -rf /workspace")
    result = docker_sandbox.execute("pwd; ls")
    assert (result.output, result.exit_code) == ("/workspace\n", 0)


async def test_files_move_off_the_event_loop(docker_sandbox: DockerSandbox) -> None:
    assert await docker_sandbox.aupload_files([("/workspace/a", b"async")]) == [
        FileUploadResponse("/workspace/a")
    ]
    downloaded = await docker_sandbox.adownload_files(["/workspace/a"])
    assert downloaded[0].content == b"async"


def test_deepagents_file_operations_work_on_it(docker_sandbox: DockerSandbox) -> None:
    """BaseSandbox's own read, write, edit, grep and glob run on these three calls."""
    assert docker_sandbox.write("/workspace/src/app.py", "print('hi')\n").error is None
    assert docker_sandbox.edit("/workspace/src/app.py", "hi", "there").error is None
    read = docker_sandbox.read("/workspace/src/app.py")
    assert read.error is None
    assert "print('there')" in str(read.file_data)
    assert [
        match["path"] for match in docker_sandbox.grep("there", "/workspace").matches or []
    ] == ["/workspace/src/app.py"]
    assert [
        info["path"] for info in docker_sandbox.glob("**/*.py", "/workspace").matches or []
    ] == ["/workspace/src/app.py"]
