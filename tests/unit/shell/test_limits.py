"""Sandbox limits: their configuration, the cgroups that hold them, naming the one hit."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from langchain_fstools import Limits, Sandbox
from langchain_fstools.core.results import LimitHit
from langchain_fstools.shell.sandbox.limits import (
    DEFAULT_LIMITS,
    CgroupSet,
    GiB,
    MiB,
    cgroup_support,
    default_memory,
    limit_hit,
    remove_dead_cgroups,
)
from langchain_fstools.shell.sandbox.sandbox import Confinement


def test_limits_are_on_by_default_with_the_documented_values() -> None:
    assert Sandbox().limits == DEFAULT_LIMITS
    assert DEFAULT_LIMITS.memory == default_memory()
    assert MiB * 32 <= default_memory() <= 4 * GiB
    assert DEFAULT_LIMITS.processes == 1024
    assert DEFAULT_LIMITS.open_files == 4096
    assert DEFAULT_LIMITS.tmp_size == GiB
    assert DEFAULT_LIMITS.cpu_seconds is None
    assert DEFAULT_LIMITS.file_size is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"memory": MiB}, "at least"),
        ({"processes": 0}, "at least"),
        ({"tmp_size": -1}, "at least"),
        ({"memory": "2G"}, "whole number"),
        ({"open_files": 1.5}, "whole number"),
        ({"processes": True}, "whole number"),
    ],
)
def test_bad_limits_fail_at_construction(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Limits(**options)  # type: ignore[arg-type]


def test_a_sandbox_takes_limits_or_none_only() -> None:
    assert Sandbox(limits=None).limits is None
    with pytest.raises(ValueError, match="takes a Limits or None"):
        Sandbox(limits={"memory": GiB})  # type: ignore[arg-type]


def test_the_helper_gets_every_limit_set_and_bwrap_sizes_every_tmpfs() -> None:
    limits = Limits(memory=GiB, processes=99, cpu_seconds=7, open_files=64, tmp_size=MiB * 5)
    confinement = Confinement(Sandbox(limits=limits), "/ws", "/usr/bin/bwrap")
    plan = confinement.session()
    argv = plan.argv
    inner = argv[argv.index("--", argv.index("--chdir")) :]
    for option, value in (("--memory", GiB), ("--processes", 99), ("--cpu-seconds", 7)):
        assert inner[inner.index(option) + 1] == str(value)
    assert "--file-size" not in inner  # not set: no rlimit
    assert "--oom-first" in inner
    assert "--deny-keyring" in inner
    outer = argv[: argv.index("--chdir")]
    tmpfs = [i for i, arg in enumerate(outer) if arg == "--tmpfs"]
    assert outer[outer.index("--tmpfs") + 1] == "/dev/shm"
    assert all(outer[i - 2 : i] == ["--size", str(MiB * 5)] for i in tmpfs)
    other = Confinement(Sandbox(limits=None), "/ws", "/usr/bin/bwrap").session()
    unlimited = other.argv
    for made in (plan, other):
        shutil.rmtree(made.folder)
    assert plan.limits == limits
    assert "--size" not in unlimited
    assert "--memory" not in unlimited


def test_the_limit_hit_is_named_from_cgroup_events_or_the_exit_signal() -> None:
    limits = Limits(memory=GiB, processes=50, cpu_seconds=5, file_size=MiB)
    assert limit_hit(limits, ["memory"], 137) == LimitHit("memory", GiB)
    assert limit_hit(limits, ["processes"], 0) == LimitHit("processes", 50)
    assert limit_hit(limits, [], 128 + signal.SIGXCPU) == LimitHit("cpu_seconds", 5)
    assert limit_hit(limits, [], 128 + signal.SIGXFSZ) == LimitHit("file_size", MiB)
    assert limit_hit(limits, [], 137) is None
    assert limit_hit(Limits(), [], 128 + signal.SIGXCPU) is None  # no CPU limit was set


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("[stderr] MemoryError", LimitHit("memory", GiB)),
        ("[stderr] sort: cannot allocate memory", LimitHit("memory", GiB)),
        ("[stderr] bash: fork: Resource temporarily unavailable", LimitHit("processes", 50)),
        ("[stderr] OSError: [Errno 24] Too many open files", LimitHit("open_files", 64)),
        (
            "[stderr] bash: line 1: 7 File size limit exceeded head -c 2M",
            LimitHit("file_size", MiB),
        ),
        ("[stderr] bash: line 1: 7 CPU time limit exceeded yes", LimitHit("cpu_seconds", 5)),
        ("[stderr] BlockingIOError: [Errno 11] Resource temporarily unavailable", None),
        ("all is well", None),
    ],
)
def test_a_limit_a_process_of_the_shell_hit_is_named_from_what_it_said(
    said: str, expected: LimitHit | None
) -> None:
    limits = Limits(memory=GiB, processes=50, cpu_seconds=5, file_size=MiB, open_files=64)
    assert limit_hit(limits, [], 0, said) == expected
    assert limit_hit(Limits(memory=None, open_files=None), [], 0, said) in {
        None,
        LimitHit("processes", 1024),
    }  # a limit that was not set is never named


@pytest.fixture
def cgroups() -> CgroupSet:
    if cgroup_support() == "none":
        pytest.skip("no cgroup can be made on this machine (not root, no delegated v2)")
    made = CgroupSet.create(Limits(memory=256 * MiB, processes=8))
    assert made is not None
    return made


def test_a_cgroup_holds_a_tree_counts_a_refused_fork_and_is_removed(cgroups: CgroupSet) -> None:
    """Placed after it started, the tree is inside, children included; remove kills the rest."""
    script = (
        "import os, time\n"
        "time.sleep(0.3)\n"  # placed meanwhile
        "kids = []\n"
        "try:\n"
        "    for _ in range(20): kids.append(os.fork() or time.sleep(30))\n"
        "except OSError: print('refused after', len(kids), flush=True)\n"
        "time.sleep(30)\n"
    )
    process = subprocess.Popen(["python3", "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        cgroups.place(process.pid)
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("refused after"), line
        assert int(line.split()[-1]) < 8
        assert "processes" in cgroups.events()
    finally:
        cgroups.remove()
        process.wait(timeout=10)
    assert all(not Path(folder).exists() for folder in cgroups.folders.values())


def test_placing_moves_children_born_before_it(cgroups: CgroupSet) -> None:
    process = subprocess.Popen(["bash", "-c", "sleep 30 & sleep 30 & wait"])
    try:
        deadline = time.monotonic() + 10
        while len(_children(process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        cgroups.place(process.pid)
        for pid in [process.pid, *_children(process.pid)]:
            name = Path(next(iter(cgroups.folders.values()))).name
            assert name in Path(f"/proc/{pid}/cgroup").read_text()
    finally:
        cgroups.remove()
        process.wait(timeout=10)


def test_the_cgroups_a_dead_agent_left_are_removed_and_a_live_ones_kept(
    cgroups: CgroupSet,
) -> None:
    """A killed agent never removes its commands' cgroups: the next session does."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    left = [
        str(Path(folder).with_name(f"fstools-{dead.pid}-0")) for folder in cgroups.folders.values()
    ]
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        for folder in left:
            Path(folder).mkdir()
            Path(folder, "cgroup.procs").write_text(str(sleeper.pid))  # still running in it
        remove_dead_cgroups()
        assert all(Path(folder).is_dir() for folder in cgroups.folders.values())  # ours stay
        assert not [folder for folder in left if Path(folder).exists()]
        assert sleeper.wait(timeout=10) == -signal.SIGKILL
    finally:
        sleeper.kill()
        cgroups.remove()


def _children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
