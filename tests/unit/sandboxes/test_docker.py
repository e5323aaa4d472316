"""DockerSandbox's parts that need no engine: settings, limits, output bounds, paths, and
the two image recipes (offline and with a registry) installing the same packages."""

from __future__ import annotations

import re
from pathlib import Path

import docker
import pytest

from langchain_fstools.sandboxes.docker import DockerSandbox, _Output, _resources
from langchain_fstools.shell.sandbox.limits import Limits, MiB

ROOT = Path(__file__).resolve().parents[3]


def _sandbox(**settings: object) -> DockerSandbox:
    """A sandbox object on a client that is never called (no engine is reached)."""
    client = docker.DockerClient(base_url="unix:///nonexistent/docker.sock", version="1.41")
    return DockerSandbox(client, "0" * 64, **settings)  # type: ignore[arg-type]


def test_limits_become_the_container_s_resources() -> None:
    limits = Limits(
        memory=256 * MiB,
        processes=64,
        cpu_seconds=30,
        open_files=100,
        file_size=4096,
        tmp_size=8 * MiB,
    )
    settings = _resources(limits, cpus=1.5)
    ulimits = {u["Name"]: (u["Soft"], u["Hard"]) for u in settings.pop("ulimits")}
    assert settings == {
        "mem_limit": 256 * MiB,
        "memswap_limit": 256 * MiB,
        "pids_limit": 64,
        "nano_cpus": 1_500_000_000,
        "shm_size": 8 * MiB,
    }
    assert ulimits == {"cpu": (30, 30), "nofile": (100, 100), "fsize": (4096, 4096)}


def test_unset_limits_set_nothing() -> None:
    limits = Limits(memory=None, processes=None, open_files=None, tmp_size=None, changed_bytes=None)
    assert _resources(limits, cpus=None) == {"ulimits": []}


def test_a_short_output_is_kept_whole() -> None:
    output = _Output(1024)
    output.add(b"hello ")
    output.add(b"world\n")
    assert (output.text(), output.cut) == ("hello world\n", 0)


def test_a_long_output_keeps_its_first_and_last_halves() -> None:
    output = _Output(1024)
    output.add(b"A" * 600)
    for _ in range(10):
        output.add(b"B" * 300)
    output.add(b"Z" * 100)
    text = output.text()
    assert text.startswith("A" * 512 + "\n... [")
    assert text.endswith("B" * 412 + "Z" * 100)
    assert output.cut == 600 + 3000 + 100 - 1024
    assert f"[{output.cut:,} bytes of output left out]" in text


def test_a_note_follows_the_output_or_stands_alone() -> None:
    output = _Output(1024)
    assert output.text("Error: x") == "Error: x"
    output.add(b"partial\n")
    assert output.text("Error: x") == "partial\n\nError: x"


def test_paths_are_taken_from_the_workspace_and_malformed_ones_refused() -> None:
    sandbox = _sandbox(workspace="/srv/work")
    assert sandbox._resolve("a/b.txt") == "/srv/work/a/b.txt"
    assert sandbox._resolve("/etc/../tmp/x") == "/tmp/x"
    assert sandbox._resolve("//double") == "/double"
    assert sandbox._resolve("") is None
    assert sandbox._resolve("a\0b") is None


@pytest.mark.parametrize(
    ("settings", "wrong"),
    [
        ({"workspace": "relative"}, "workspace"),
        ({"workspace": "/"}, "workspace"),
        ({"timeout": -1}, "timeout"),
        ({"max_output_bytes": 100}, "max_output_bytes"),
    ],
)
def test_bad_settings_are_a_value_error(settings: dict[str, object], wrong: str) -> None:
    with pytest.raises(ValueError, match=wrong):
        _sandbox(**settings)


def test_the_dockerfile_and_the_offline_build_install_the_same_packages() -> None:
    script = (ROOT / "scripts" / "docker-engine").read_text()
    dockerfile = (ROOT / "docs" / "sandbox.Dockerfile").read_text()
    offline = re.search(r"^packages=(\S+)$", script, re.MULTILINE)
    registry = re.search(r"--no-install-recommends ([\w\s.-]+?) \\", dockerfile)
    assert offline
    assert registry
    assert sorted(offline[1].split(",")) == sorted(registry[1].split())
    assert "debootstrap --variant=minbase" in script
    assert " bookworm " in script
    assert "FROM debian:bookworm-slim" in dockerfile


def test_an_engine_that_does_not_answer_is_one_sentence_per_call() -> None:
    sandbox = _sandbox()
    result = sandbox.execute("true")
    assert result.exit_code is None
    assert result.output.startswith("Error: the Docker Engine did not answer;")
    assert sandbox.upload_files([("/workspace/a", b"")])[0].error == result.output
    assert sandbox.download_files(["/workspace/a"])[0].error == result.output
