"""A second core for jsstore: two `jsstore serve` processes against one, and nats-server.

    python bench/scaling.py [--n N] [--fanout-n N] [--reps R] [--cases publish fanout fsync]
                            [--quick] [--json FILE]

`jsstore serve` runs its event loop on one thread (docs/scaling.md); the way it uses a
second core today is a second process.  This measures what that buys on this machine, in
one run, the kinds of server alternating from round to round (medians of the rounds):

- ``publish``: acked publishes (bench/pubceiling.py's raw-socket client: prebuilt ``PUB``
  frames of 128 B, 1,000 PubAcks outstanding, every PubAck checked) from two publishers at
  once, each into a file stream of its own (``RAW1`` and ``RAW2``, answers on its own
  inbox).  ``jsstore 2 processes``: two `jsstore serve`, each with its own store directory
  and one of the publishers; ``jsstore 1 process``: one `jsstore serve` and both
  publishers; ``jsstore 1 client``: one `jsstore serve` and one publisher, what a
  single client gets; ``nats-server``: one nats-server (its goroutines run on every core)
  and both publishers.  The rate is every publisher's messages over the time from the
  first publisher's start to the last one's end.
- ``fanout``: core NATS, no JetStream (bench/corefanout.py's clients): two pairs of a
  publisher and a subscriber, each pair on a subject of its own, the publisher keeping an
  end-to-end window; the same four kinds, pairs in place of publishers.  Delivered
  messages over the time from the first publish to the last delivery.
- ``fsync``: not a server run: a thread fsyncs a file with 64 MiB written to it while the
  main thread (as the event loop would) keeps running Python; the longest the main thread
  went without running, with ``os.fsync`` (which releases the GIL) and with the store's own
  fsync (``jsstore._core.storage.faults.fsync``, the one every file store, the group
  commit of ``sync_interval: always`` and the background sync use), in the temporary
  directory's file system.

Beside each rate, over the measured window: the servers' CPU microseconds per message
(bench/servercpu.py; both processes' for two) and the clients' (all of them), how many
cores the servers kept busy, and how busy the machine's cores were (/proc/stat: anything
running, other work too).  The clients run on the same machine: with two cores, servers
and clients take turns on them, and a second server process can only gain what the first
one leaves idle; the load average is printed with the results.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (HERE, os.path.join(ROOT, "src"), os.path.join(ROOT, "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)

import corefanout  # noqa: E402
import jsstoreserver  # noqa: E402
import pubceiling  # noqa: E402
from natsserver import start_nats_server  # noqa: E402

import summary  # noqa: E402
from servercpu import ServerCPU  # noqa: E402

from jsstore._core.storage import faults  # noqa: E402

# kind: (servers, clients, jsstore or not)
KINDS = {
    "jsstore 2 processes": (2, 2, True),
    "jsstore 1 process": (1, 2, True),
    "jsstore 1 client": (1, 1, True),
    "nats-server": (1, 2, False),
}
SUBJECTS = 1                # subjects per publish stream
STALL = 60.0                # s: a client that does not get ready or report by then failed
FSYNC_BYTES = 64 << 20


def start_servers(kind: str) -> list:
    servers, _, ours = KINDS[kind]
    started = []
    try:
        for _ in range(servers):
            directory = tempfile.mkdtemp(prefix="bench-scaling-")
            started.append(jsstoreserver.start_jsstore_server(directory) if ours
                           else start_nats_server(directory))
    except BaseException:
        for server in started:
            server.stop()
        raise
    return started


def placement(kind: str, servers: list) -> list[int]:
    """The port each client uses: client i on server i, or all on the one server."""
    clients = KINDS[kind][1]
    return [servers[i % len(servers)].port for i in range(clients)]


def machine_ticks() -> tuple[int, int]:
    """(busy, all) clock ticks of every core since boot (/proc/stat; idle and iowait are
    not busy)."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    return sum(fields) - fields[3] - fields[4], sum(fields)


def run_clients(processes: list, readies: list, go, out, servers: list,
                expected: int) -> tuple[list, dict]:
    """Start the clients, open the CPU window once every client is ready, let them go; the
    clients' reports and the window: its seconds, the servers' and the clients' CPU
    seconds (each side's processes together) and how busy the machine's cores were."""
    for process in processes:
        process.start()
    try:
        for ready in readies:
            if not ready.wait(STALL):
                raise RuntimeError("a client did not get ready")
        windows = [ServerCPU(server.pid) for server in servers]
        clients = [ServerCPU(process.pid) for process in processes]
        busy0, all0 = machine_ticks()
        began = time.perf_counter()
        go.set()
        reports = []
        for _ in range(expected):
            key, value = out.get(timeout=STALL)
            if key == "error":
                raise RuntimeError(value)
            reports.append((key, value))
        # (a client that reported may be gone; what it used is in its zombie's stat)
        window = {"seconds": time.perf_counter() - began,
                  "server cpu": sum(w.stop() for w in windows),
                  "client cpu": sum(w.stop() for w in clients)}
        busy1, all1 = machine_ticks()
        window["machine busy"] = (busy1 - busy0) / max(1, all1 - all0)
    finally:
        for process in processes:
            process.join(10)
            if process.is_alive():
                process.kill()
    return reports, window


def figures(total: int, elapsed: float, window: dict, per_client: list, ok: bool) -> dict:
    """One measurement's figures: the rate, CPU per message, the cores the servers kept
    busy over the window, the machine's cores busy (a share of all of them)."""
    return {"msgs/s": total / elapsed, "seconds": elapsed,
            "cpu us/msg": window["server cpu"] * 1e6 / total,
            "client cpu us/msg": window["client cpu"] * 1e6 / total,
            "server cores": window["server cpu"] / window["seconds"],
            "machine busy": window["machine busy"],
            "per client": sorted(per_client), "ok": ok}


# -- acked publishes ---------------------------------------------------------------------
def publisher(port: int, tag: bytes, n: int, ready, go, out) -> None:
    """One publisher process: stream RAW<tag> made, then n acked publishes at the go."""
    try:
        sock = pubceiling.connect(port, tag)
        ready.set()
        go.wait()
        out.put(("publisher", pubceiling.publish(sock, n, SUBJECTS, tag)))
    except Exception as e:
        out.put(("error", f"publisher {tag.decode()}: {e}"))


def measure_publish(kind: str, n: int) -> dict:
    servers = start_servers(kind)
    try:
        time.sleep(0.3)
        ctx = multiprocessing.get_context("fork")
        go, out = ctx.Event(), ctx.Queue()
        ports = placement(kind, servers)
        readies = [ctx.Event() for _ in ports]
        processes = [ctx.Process(target=publisher, args=(port, b"%d" % (i + 1), n, readies[i],
                                                         go, out))
                     for i, port in enumerate(ports)]
        reports, window = run_clients(processes, readies, go, out, servers, len(ports))
    finally:
        for server in servers:
            server.stop()
    results = [value for _, value in reports]
    elapsed = max(r["end"] for r in results) - min(r["start"] for r in results)
    return figures(n * len(results), elapsed, window, [r["rate"] for r in results],
                   all(r["ok"] for r in results))


# -- core NATS fan-out ---------------------------------------------------------------------
def measure_fanout(kind: str, n: int) -> dict:
    servers = start_servers(kind)
    try:
        time.sleep(0.3)
        ctx = multiprocessing.get_context("fork")
        go, out = ctx.Event(), ctx.Queue()
        pairs = []
        processes, readies = [], []
        for i, port in enumerate(placement(kind, servers)):
            subject = b"core.fan%d" % (i + 1)
            counts, last = ctx.RawArray("q", 1), ctx.RawArray("d", 1)
            start, stop = ctx.RawValue("d", 0.0), ctx.Event()
            ready_sub, ready_pub = ctx.Event(), ctx.Event()
            processes.append(ctx.Process(target=corefanout.subscriber, args=(
                port, 0, b"", counts, last, ready_sub, stop, out, subject)))
            processes.append(ctx.Process(target=corefanout.publisher, args=(
                port, n, True, counts, start, ready_pub, go, stop, out, subject)))
            readies += [ready_sub, ready_pub]
            pairs.append((counts, last, start))
        _, window = run_clients(processes, readies, go, out, servers, len(processes))
    finally:
        for server in servers:
            server.stop()
    got = [counts[0] for counts, _, _ in pairs]
    if got != [n] * len(pairs):
        raise RuntimeError(f"delivered {got}, expected {n:,} to each subscriber")
    elapsed = max(last[0] for _, last, _ in pairs) - min(start.value for _, _, start in pairs)
    return figures(n * len(pairs), elapsed, window,
                   [n / (last[0] - start.value) for _, last, start in pairs], True)


# -- an fsync on another thread ---------------------------------------------------------------
def fsync_stall(fsync, directory: str) -> dict:
    """`fsync` of a file with FSYNC_BYTES written, on a thread; how long it took and the
    longest the main thread went without running meanwhile."""
    path = os.path.join(directory, "fsync-stall.dat")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        chunk = os.urandom(1 << 20)
        for _ in range(FSYNC_BYTES >> 20):
            os.write(fd, chunk)
        done = threading.Event()
        took: list[float] = []

        def sync() -> None:
            began = time.perf_counter()
            fsync(fd)
            took.append(time.perf_counter() - began)
            done.set()

        thread = threading.Thread(target=sync)
        longest = 0.0
        last = time.perf_counter()
        thread.start()
        while not done.is_set():
            now = time.perf_counter()
            longest = max(longest, now - last)
            last = now
        thread.join()
    finally:
        os.close(fd)
        os.unlink(path)
    return {"fsync ms": took[0] * 1e3, "longest stall ms": longest * 1e3}


FSYNCS = {"os.fsync": os.fsync, "store fsync (faults.fsync)": faults.fsync}


# -- the runs --------------------------------------------------------------------------------
MEASURE = {"publish": measure_publish, "fanout": measure_fanout}
TITLES = {
    "publish": "Acked publishes of 128 B into file streams, {n:,} per publisher, "
               "1,000 outstanding each",
    "fanout": "Core NATS, a publisher and a subscriber per pair, 128 B, {n:,} per pair",
}
CLIENT = {"publish": "publisher", "fanout": "pair"}


MEDIANS = ("msgs/s", "cpu us/msg", "client cpu us/msg", "server cores", "machine busy")


def table(case: str, n: int, median: dict, reps: int) -> list[str]:
    base = median["jsstore 1 process"]["msgs/s"]
    lines = [TITLES[case].format(n=n) + f", median of {reps}", "",
             f"| server(s) | {CLIENT[case]}s | msgs/s | / jsstore 1 process | "
             f"/ nats-server | msgs/s per {CLIENT[case]} | server CPU us/msg | "
             "client CPU us/msg | server cores busy | machine busy |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    theirs = median["nats-server"]["msgs/s"]
    for kind, got in median.items():
        servers, clients, _ = KINDS[kind]
        per = " + ".join(f"{rate:,.0f}" for rate in got["per client"])
        lines.append(f"| {kind} | {clients} | {got['msgs/s']:,.0f} | "
                     f"{got['msgs/s'] / base:.2f} | {got['msgs/s'] / theirs:.2f} | "
                     f"{per} | {got['cpu us/msg']:.2f} | {got['client cpu us/msg']:.2f} | "
                     f"{got['server cores']:.2f} | {got['machine busy']:.0%} |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500_000, help="acked publishes per publisher")
    parser.add_argument("--fanout-n", type=int, default=2_000_000,
                        help="core NATS messages per pair")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--cases", nargs="+", choices=["publish", "fanout", "fsync"],
                        default=["publish", "fanout", "fsync"])
    parser.add_argument("--quick", action="store_true",
                        help="50,000 publishes and 100,000 core messages a client, 3 reps")
    parser.add_argument("--json", default=None, help="also write every figure to this file")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.fanout_n, args.reps = 50_000, 100_000, 3
    sizes = {"publish": args.n, "fanout": args.fanout_n}
    load_before = os.getloadavg()
    kinds = list(KINDS)
    runs = {case: {kind: [] for kind in kinds} for case in args.cases if case in MEASURE}
    failed = False
    for rep in range(args.reps):
        order = kinds[rep % len(kinds):] + kinds[:rep % len(kinds)]
        for case in runs:
            for kind in order:
                result = MEASURE[case](kind, sizes[case])
                runs[case][kind].append(result)
                failed |= not result["ok"]
                print(f"  {case:<8} {kind:<20} rep {rep + 1}: {result['msgs/s']:>11,.0f} msgs/s"
                      f" in {result['seconds']:.2f} s, server CPU {result['cpu us/msg']:.2f} "
                      f"us/msg ({result['server cores']:.2f} cores), machine "
                      f"{result['machine busy']:.0%} busy, per {CLIENT[case]} "
                      + " + ".join(f"{r:,.0f}" for r in result["per client"])
                      + ("" if result["ok"] else ", ACKS WRONG"), file=sys.stderr)
    median = {case: {kind: {**{key: statistics.median(r[key] for r in results)
                               for key in MEDIANS},
                            "per client": [statistics.median(r["per client"][i]
                                                             for r in results)
                                           for i in range(len(results[0]["per client"]))]}
                     for kind, results in by_kind.items()}
              for case, by_kind in runs.items()}
    stalls: dict[str, list[dict]] = {}
    if "fsync" in args.cases:
        directory = tempfile.mkdtemp(prefix="bench-scaling-fsync-")
        for rep in range(args.reps):
            for name, fsync in FSYNCS.items():
                stalls.setdefault(name, []).append(fsync_stall(fsync, directory))
        os.rmdir(directory)
    load_after = os.getloadavg()
    print(f"\n{os.cpu_count()} cores; load average {load_before[0]:.2f} before, "
          f"{load_after[0]:.2f} after\n")
    rows = []
    for case in runs:
        print("\n".join(table(case, sizes[case], median[case], args.reps)) + "\n")
        ours = median[case]["jsstore 2 processes"]["msgs/s"]
        what = {"publish": "acked publishes, 2 publishers", "fanout": "core NATS, 2 pairs"}[case]
        rows.append(summary.row("scaling", f"{what}: 2 jsstore processes / 1",
                                None if failed else ours, "jsstore 1 process",
                                median[case]["jsstore 1 process"]["msgs/s"], None))
        rows.append(summary.row("scaling", f"{what}: 2 jsstore processes / nats-server",
                                None if failed else ours, "nats-server",
                                median[case]["nats-server"]["msgs/s"], None))
    if stalls:
        fsync_median = {name: {key: statistics.median(r[key] for r in results)
                               for key in results[0]}
                        for name, results in stalls.items()}
        print(f"An fsync of {FSYNC_BYTES >> 20} MiB just written, on another thread, "
              f"median of {args.reps}\n")
        print("| fsync | fsync ms | longest the main thread waited, ms |\n|---|---|---|")
        for name, figures in fsync_median.items():
            print(f"| {name} | {figures['fsync ms']:.1f} | {figures['longest stall ms']:.1f} |")
    else:
        fsync_median = {}
    if failed:
        print("SOME RUNS LOST OR MISNUMBERED ACKS", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"sizes": sizes, "reps": args.reps, "cores": os.cpu_count(),
                       "load average": [load_before[0], load_after[0]], "runs": runs,
                       "median": median, "fsync": fsync_median, "failed": failed,
                       "summary": rows}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
