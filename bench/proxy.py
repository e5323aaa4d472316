"""What the allowed-domains proxy costs, against the sandbox sharing the host's network.

    python bench/proxy.py [--repeat 21] [--megabytes 10] [--link 1000]

Four rows, each timed side by side in one run (medians, interleaved):

- a `--megabytes` download from `python -m http.server` on 127.0.0.1, inside the
  sandbox with `curl` (its own `time_total`, so the sandbox's start is not counted):
  through the proxy (`Sandbox(network=[name])`, the name given to the loopback server
  by the proxy's resolver) against `Sandbox(network=True)` reaching the server
  directly; target: the proxy costs at most 10%.
- the same from a loopback server that sends at most `--link` Mbit/s (1,000: a fast
  real link), for the record: what the proxy costs where the network, not memory, is
  the limit.
- the floor of any relay: the same download with `Sandbox(network=True)` through a bare
  relay on the host (`RELAY`, C: a thread per direction moving bytes with `splice`, as
  the proxy does, without reading a request), compiled with `cc` when there is one, else
  left out. What the proxy costs over that row is its own; the rest is a second TCP
  connection's work in the kernel.
- `execute("true")`: a sandbox with allowed domains (it starts the bridge) against one
  without the network; no target, printed for the record.

A benchmark, not a test: it checks only that every download is complete.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from langchain_fstools import LocalBackend
from langchain_fstools.shell.network.domains import AllowedDomains
from langchain_fstools.shell.sandbox.sandbox import Sandbox

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

RELAY = r"""
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
static struct sockaddr_in to;
struct pair { int from, to; };
static void *pump(void *arg) {
  struct pair *p = arg; int pipe_[2]; pipe(pipe_); fcntl(pipe_[1], F_SETPIPE_SZ, 1 << 20);
  for (ssize_t n; (n = splice(p->from, 0, pipe_[1], 0, 1 << 20, 0)) > 0;)
    for (ssize_t m; n > 0; n -= m) if ((m = splice(pipe_[0], 0, p->to, 0, n, 0)) <= 0) goto out;
out: shutdown(p->to, SHUT_WR); close(pipe_[0]); close(pipe_[1]); return 0;
}
static void *serve(void *arg) {
  int client = (int)(long)arg, upstream = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(upstream, (void *)&to, sizeof to) == 0) {
    struct pair up = {client, upstream}, down = {upstream, client}; pthread_t other;
    pthread_create(&other, 0, pump, &up); pump(&down); pthread_join(other, 0);
  }
  close(client); close(upstream); return 0;
}
int main(int argc, char **argv) {
  struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
  at.sin_addr.s_addr = to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  to.sin_family = AF_INET; to.sin_port = htons(atoi(argv[2]));
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  if (bind(listener, (void *)&at, sizeof at) || listen(listener, 128)) return 1;
  for (pthread_t t;;) { long c = accept(listener, 0, 0);
    if (c >= 0 && pthread_create(&t, 0, serve, (void *)c) == 0) pthread_detach(t); }
}
"""
"""The floor: a bare relay from PORT to the loopback server at UPSTREAM (`relay PORT UPSTREAM`)."""


def serve(folder: str, size: int, link: int = 0) -> tuple[subprocess.Popen[bytes], int]:
    """A server on 127.0.0.1 in its own process (its own GIL): `python -m http.server`
    over `folder`, or at most `link` Mbit/s (`PACED`)."""
    port = free_port()
    argv = ["-m", "http.server", "-b", "127.0.0.1", "-d", folder, str(port)]
    if link:
        argv = ["-c", PACED, str(size), str(link), str(port)]
    server = subprocess.Popen(
        [sys.executable, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return wait_for(server, port)


def wait_for(process: subprocess.Popen[bytes], port: int) -> tuple[subprocess.Popen[bytes], int]:
    """`process` once something listens on 127.0.0.1:`port`."""
    for _ in range(500):
        with socket.socket() as client:
            if client.connect_ex(("127.0.0.1", port)) == 0:
                return process, port
        time.sleep(0.01)
    process.kill()
    raise SystemExit("the loopback server did not start")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def relay(folder: str, upstream: int) -> tuple[subprocess.Popen[bytes], int] | None:
    """`RELAY` compiled and listening, in front of `upstream`; None without a C compiler."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    Path(folder, "relay.c").write_text(RELAY)
    binary = str(Path(folder, "relay"))
    built = subprocess.run(
        [compiler, "-O2", "-pthread", "-o", binary, str(Path(folder, "relay.c"))],
        capture_output=True,
        check=False,
    )
    if built.returncode != 0:
        return None
    port = free_port()
    return wait_for(subprocess.Popen([binary, str(port), str(upstream)]), port)


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
    bare = relay(folder, port)
    try:
        floor = None if bare is None else bare[1]
        measure(options.repeat, options.megabytes, size, (port, slow, floor), options.link)
    finally:
        for each in (server, paced, *([] if bare is None else [bare[0]])):
            each.terminate()
            each.wait()


def measure(
    repeat: int, megabytes: int, size: int, ports: tuple[int, int, int | None], link: int
) -> None:
    port, slow, floor = ports
    domains = AllowedDomains(
        ["files.test"], ports=(port, slow), resolve={"files.test": "127.0.0.1"}
    )
    proxied = LocalBackend(tempfile.mkdtemp(), execute=True, sandbox=Sandbox(network=domains))
    direct = LocalBackend(tempfile.mkdtemp(), execute=True, sandbox=Sandbox(network=True))
    closed = LocalBackend(tempfile.mkdtemp(), execute=True)
    for backend in (proxied, direct, closed):  # the one-time sandbox probe
        backend.execute("true", timeout=30, output_limit=1000)
    through: list[float] = []
    straight: list[float] = []
    relayed: list[float] = []
    paced_through: list[float] = []
    paced_straight: list[float] = []
    start_proxied: list[float] = []
    start_closed: list[float] = []
    for _ in range(repeat):
        through.append(download(proxied, f"http://files.test:{port}/blob", size))
        straight.append(download(direct, f"http://127.0.0.1:{port}/blob", size))
        if floor is not None:
            relayed.append(download(direct, f"http://127.0.0.1:{floor}/blob", size))
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
    if relayed:
        bare = statistics.median(relayed) * 1000
        print(
            f"| {megabytes} MB through a bare splice relay (C): the floor | {bare:.2f} ms"
            f" | {theirs:.2f} ms | {bare / theirs:.2f}x | - |"
        )
    ours = statistics.median(paced_through) * 1000
    theirs = statistics.median(paced_straight) * 1000
    print(
        f"| {megabytes} MB at {link} Mbit/s | {ours:.2f} ms | {theirs:.2f} ms"
        f" | {ours / theirs:.2f}x | - |"
    )
    a, b = statistics.median(start_proxied) * 1000, statistics.median(start_closed) * 1000
    print(f'| `execute("true")` | {a:.2f} ms | {b:.2f} ms (no network) | {a - b:+.2f} ms | - |')


if __name__ == "__main__":
    main()
