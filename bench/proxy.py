"""What the allowed-domains proxy costs, against the sandbox sharing the host's network.

    python bench/proxy.py [--repeat 21] [--megabytes 10] [--link 1000]

Three rows, each timed side by side in one run (medians, interleaved):

- a `--megabytes` download from `python -m http.server` on 127.0.0.1, inside the
  sandbox with `curl` (its own `time_total`, so the sandbox's start is not counted):
  through the proxy (`Sandbox(network=[name])`, the name given to the loopback server
  by the proxy's resolver) against `Sandbox(network=True)` reaching the server
  directly; target: the proxy costs at most 10%.
- the same from a loopback server that sends at most `--link` Mbit/s (1,000: a fast
  real link), for the record: what the proxy costs where the network, not memory, is
  the limit.
- `execute("true")`: a sandbox with allowed domains (it starts the bridge) against one
  without the network; no target, printed for the record.

A benchmark, not a test: it checks only that every download is complete.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from langchain_fstools import LocalBackend
from langchain_fstools.shell.domains import AllowedDomains
from langchain_fstools.shell.sandbox import Sandbox

PACED = """
import socket, sys, time
size, rate = int(sys.argv[1]), int(sys.argv[2]) * 125_000  # Mbit/s to bytes/s
server = socket.create_server(("127.0.0.1", int(sys.argv[3])))
chunk = b"x" * 65536
while True:
    client, _ = server.accept()
    with client:
        if not client.recv(65536):
            continue  # the start-up probe
        try:
            client.sendall(b"HTTP/1.0 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n" % size)
            begin, sent = time.perf_counter(), 0
            while sent < size:
                piece = chunk[: size - sent]
                client.sendall(piece)
                sent += len(piece)
                ahead = sent / rate - (time.perf_counter() - begin)
                if ahead > 0:
                    time.sleep(ahead)
        except OSError:
            pass
"""
"""A server that sends SIZE bytes to every request at most RATE Mbit/s."""


def serve(folder: str, size: int, link: int = 0) -> tuple[subprocess.Popen[bytes], int]:
    """A server on 127.0.0.1 in its own process (its own GIL): `python -m http.server`
    over `folder`, or at most `link` Mbit/s (`PACED`)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = ["-m", "http.server", "-b", "127.0.0.1", "-d", folder, str(port)]
    if link:
        argv = ["-c", PACED, str(size), str(link), str(port)]
    server = subprocess.Popen(
        [sys.executable, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    for _ in range(500):
        with socket.socket() as client:
            if client.connect_ex(("127.0.0.1", port)) == 0:
                return server, port
        time.sleep(0.01)
    raise SystemExit("the loopback server did not start")


def download(backend: LocalBackend, url: str, size: int) -> float:
    """Seconds curl took to fetch `url` inside the sandbox (checks the byte count)."""
    result = backend.execute(
        f"curl -sS -o /dev/null -w '%{{size_download}} %{{time_total}}' {url}",
        timeout=60,
        output_limit=1000,
    )
    fetched, seconds = result.output.split()
    if result.exit_code != 0 or int(fetched) != size:
        raise SystemExit(f"incomplete download: {result.output!r}")
    return float(seconds)


def started(backend: LocalBackend) -> float:
    begin = time.perf_counter()
    backend.execute("true", timeout=30, output_limit=1000)
    return time.perf_counter() - begin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--megabytes", type=int, default=10)
    parser.add_argument("--link", type=int, default=1000)
    options = parser.parse_args()
    folder = tempfile.mkdtemp()
    size = options.megabytes * 1_000_000
    Path(folder, "blob").write_bytes(bytes(range(256)) * (size // 256) + b"\0" * (size % 256))
    server, port = serve(folder, size)
    paced, slow = serve(folder, size, options.link)
    try:
        measure(options.repeat, options.megabytes, size, (port, slow), options.link)
    finally:
        for each in (server, paced):
            each.terminate()
            each.wait()


def measure(repeat: int, megabytes: int, size: int, ports: tuple[int, int], link: int) -> None:
    port, slow = ports
    domains = AllowedDomains(["files.test"], ports=ports, resolve={"files.test": "127.0.0.1"})
    proxied = LocalBackend(tempfile.mkdtemp(), execute=True, sandbox=Sandbox(network=domains))
    direct = LocalBackend(tempfile.mkdtemp(), execute=True, sandbox=Sandbox(network=True))
    closed = LocalBackend(tempfile.mkdtemp(), execute=True)
    for backend in (proxied, direct, closed):  # the one-time sandbox probe
        backend.execute("true", timeout=30, output_limit=1000)
    through: list[float] = []
    straight: list[float] = []
    paced_through: list[float] = []
    paced_straight: list[float] = []
    start_proxied: list[float] = []
    start_closed: list[float] = []
    for _ in range(repeat):
        through.append(download(proxied, f"http://files.test:{port}/blob", size))
        straight.append(download(direct, f"http://127.0.0.1:{port}/blob", size))
        paced_through.append(download(proxied, f"http://files.test:{slow}/blob", size))
        paced_straight.append(download(direct, f"http://127.0.0.1:{slow}/blob", size))
        start_proxied.append(started(proxied))
        start_closed.append(started(closed))
    ours, theirs = statistics.median(through) * 1000, statistics.median(straight) * 1000
    ratio = ours / theirs
    verdict = "PASS" if ratio <= 1.10 else "FAIL"
    print("| row | proxy | direct | ratio | target |")
    print("|---|---:|---:|---:|---|")
    print(
        f"| {megabytes} MB download (curl, median of {repeat}) | {ours:.2f} ms"
        f" | {theirs:.2f} ms | {ratio:.2f}x | at most 1.10x: {verdict} |"
    )
    ours = statistics.median(paced_through) * 1000
    theirs = statistics.median(paced_straight) * 1000
    print(
        f"| {megabytes} MB at {link} Mbit/s | {ours:.2f} ms | {theirs:.2f} ms"
        f" | {ours / theirs:.2f}x | - |"
    )
    a, b = statistics.median(start_proxied) * 1000, statistics.median(start_closed) * 1000
    print(f'| `execute("true")` | {a:.2f} ms | {b:.2f} ms (no network) | +{a - b:.2f} ms | - |')


if __name__ == "__main__":
    main()
