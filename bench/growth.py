"""Growth curves: the cost of one operation as the stream's subjects, consumers and
pending acknowledgements grow by 10x steps, for jsstore (embedded and `jsstore serve`)
beside nats-server.

    python bench/growth.py [--quick] [--curves subjects,consumers,acks] [--json FILE]
                           [--plot FILE.png] [--server-max-subjects N] [--dir DIR]

Curves (sizes; --quick stops each one a step or two earlier):

- subjects (1k .. 10M distinct subjects already in the stream, one message each):
  publish of a message on an existing subject, ``load_last_msg`` of a random subject and
  the filtered pending count of a random subject.  Embedded: the file store's contract
  (``store_msg``, ``load_last_msg``, ``num_pending(1, subject)``).  Servers: a PUB with its
  PubAck; a direct get of the last message by subject (``$JS.API.DIRECT.GET.<stream>.<subj>``);
  the creation of an ephemeral consumer filtered on the subject (its state in memory, so
  no files are written), whose answer carries its num_pending (checked).  The servers stop at --server-max-subjects (1M): filling 10M
  subjects through the protocol takes minutes per server.
- consumers (1 .. 10,000 durable push consumers on one interest stream, consumer i
  filtered on ``c.<i>``): publish cost per message with the consumers created and not yet
  listened to, then delivery cost per delivered message once subscriptions on their
  deliver subjects appear (time from the SUBs to the last delivery / messages; one
  literal SUB per consumer, as nats-server does not start a push consumer for a
  wildcard subscription that covers its deliver subject).
- acks (1k .. 1M pending on one explicit-ack pull consumer): cost per ack of the first A
  deliveries in order (the ack floor moves) and of A random other ones.

Every timed section is split into TRIALS parts; a point's figure is the median part's
cost per operation, in CPU time: of the benchmark process for the embedded store (every
thread, so background writers count), of the server process for the servers (every
thread, from /proc/<pid>/task/*/schedstat).  On a machine shared with other work, CPU
time is what stays steady; a wall-clock figure would mostly measure the waits for a core.  The servers are started fresh for every point, alternating which goes
first; the client is a raw socket (rawclient.py) with pipelined requests, so the client is
not what is measured.  Figures are microseconds per operation.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (os.path.join(ROOT, "src"), os.path.join(ROOT, "tests"), HERE):
    if path not in sys.path:
        sys.path.insert(0, path)

from jsstoreserver import start_jsstore_server  # noqa: E402
from natsserver import start_nats_server  # noqa: E402
from rawclient import RawClient  # noqa: E402

import summary  # noqa: E402

PAYLOAD = b"x" * 128
TRIALS = 5
# nats-server 2.15 refuses a stream's 1,001st consumer unless max_consumers is set
# (though its account and the stream report no limit)
MAX_CONSUMERS = 20_000
PART_BUDGET = 2.0               # CPU seconds: a trial part that costs more stops early
BAND = 1.5
EMBEDDED, SERVE, NATS = "jsstore embedded", "jsstore serve", "nats-server"
SIZES = {
    "subjects": ((1_000, 10_000, 100_000, 1_000_000, 10_000_000), (1_000, 10_000, 100_000)),
    "consumers": ((1, 10, 100, 1_000, 10_000), (1, 10, 100, 1_000)),
    "acks": ((1_000, 10_000, 100_000, 1_000_000), (1_000, 10_000, 100_000)),
}
CURVES = {   # curve -> (family, what one operation is)
    "publish / subjects": ("subjects", "publish on an existing subject; servers: PUB + PubAck"),
    "load_last_msg / subjects": ("subjects", "last message of a subject; servers: direct get"),
    "num_pending / subjects": ("subjects",
                               "filtered pending count; servers: create a filtered consumer"),
    "publish / consumers": ("consumers", "publish, interest stream"),
    "delivery / consumers": ("consumers", "push delivery"),
    "ack in order / pending": ("acks", "ack, in order"),
    "ack random / pending": ("acks", "ack, random"),
}


def per_op(seconds: list[float], ops: list[int]) -> float:
    """Median microseconds per operation over the trials."""
    return statistics.median(s / n * 1e6 for s, n in zip(seconds, ops) if n)


def trials(items: list, parts: int = TRIALS) -> list[list]:
    size = max(1, len(items) // parts)
    return [items[i:i + size] for i in range(0, len(items), size)][:parts]


cpu_clock = time.process_time      # embedded: CPU seconds of this process, every thread


def cpu_ns(pid: int) -> int:
    """CPU nanoseconds a server process has used so far, all its threads."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:       # a thread that ended meanwhile
            pass
    return total


def server_cpu(server, run, *args, **kwargs) -> float:
    """CPU seconds the server spent while `run(*args, **kwargs)` ran."""
    start = cpu_ns(server.pid)
    run(*args, **kwargs)
    return (cpu_ns(server.pid) - start) / 1e9


# -- embedded -----------------------------------------------------------------------------
def embedded_subjects(directory: str, n: int, ops: int, rng: random.Random) -> dict:
    from jsstore.store.config import StoreConfig
    from jsstore.store.filestore import FileStore
    store = FileStore(directory, StoreConfig(name="S", subjects=["s.>"]))
    for start in range(0, n, 1000):
        store.store_batch([(f"s.{i}", None, PAYLOAD) for i in range(start, min(n, start + 1000))])
    store.flush_all_pending()
    picks = [f"s.{rng.randrange(n)}" for _ in range(ops)]
    extra: dict[str, int] = {}
    gc.collect()
    out = {}
    seconds = []
    store_msg = store.store_msg
    for part in trials(picks):
        start = cpu_clock()
        for subject in part:
            store_msg(subject, None, PAYLOAD)
        seconds.append(cpu_clock() - start)
        for subject in part:
            extra[subject] = extra.get(subject, 0) + 1
    store.flush_all_pending()
    out["publish / subjects"] = per_op(seconds, [len(p) for p in trials(picks)])
    lasts = [f"s.{rng.randrange(n)}" for _ in range(ops)]
    load_last_msg = store.load_last_msg
    seconds, done = [], []
    for part in trials(lasts):
        start = cpu_clock()
        count = 0
        # in runs of 50, stopping after PART_BUDGET: once the records outgrow the block
        # cache, each look-up may load a whole block (milliseconds)
        for run_start in range(0, len(part), 50):
            for subject in part[run_start:run_start + 50]:
                load_last_msg(subject)
            count += len(part[run_start:run_start + 50])
            if cpu_clock() - start > PART_BUDGET:
                break
        seconds.append(cpu_clock() - start)
        done.append(count)
    out["load_last_msg / subjects"] = per_op(seconds, done)
    num_pending = store.num_pending
    seconds = []
    for part in trials(lasts):
        start = cpu_clock()
        for subject in part:
            num_pending(1, subject, False)
        seconds.append(cpu_clock() - start)
    out["num_pending / subjects"] = per_op(seconds, [len(p) for p in trials(lasts)])
    for subject in lasts[:100]:
        if store.num_pending(1, subject, False)[0] != 1 + extra.get(subject, 0):
            raise AssertionError(f"num_pending({subject}) is wrong")
    store.stop()
    return out


def embedded_consumers(directory: str, k: int, m: int) -> dict:
    import jsstore
    js = jsstore.open(directory)
    js.add_stream(name="C", subjects=["c.>"], retention="interest", max_consumers=MAX_CONSUMERS)
    for i in range(k):
        js.add_consumer("C", durable_name=f"k{i}", deliver_subject=f"d.{i}",
                        filter_subject=f"c.{i}", ack_policy="explicit", max_ack_pending=-1,
                        ack_wait=3600 * 10**9)
    subjects = [f"c.{i % k}" for i in range(m)]
    publish = js.publish
    gc.collect()
    seconds = []
    for part in trials(subjects):
        start = cpu_clock()
        for subject in part:
            publish(subject, PAYLOAD)
        seconds.append(cpu_clock() - start)
    out = {"publish / consumers": per_op(seconds, [len(p) for p in trials(subjects)])}
    got = [0]

    def delivered(_msg) -> None:
        got[0] += 1
    gc.collect()
    start = cpu_clock()
    for i in range(k):
        js.bus.subscribe(f"d.{i}", delivered)
    deadline = time.monotonic() + 300
    while got[0] < m and time.monotonic() < deadline:
        js.tick()
    elapsed = cpu_clock() - start
    if got[0] != m:
        raise AssertionError(f"{got[0]} of {m} delivered")
    out["delivery / consumers"] = elapsed / m * 1e6
    js.close()
    return out


def ack_plan(pending: int, acks: int, rng: random.Random) -> tuple[list[int], list[int]]:
    """Delivery indexes (0-based) acked in order, and those acked at random."""
    in_order = list(range(acks))
    rest = list(range(acks, pending))
    return in_order, rng.sample(rest, min(acks, len(rest)))


def embedded_acks(directory: str, pending: int, acks: int, rng: random.Random) -> dict:
    import jsstore
    js = jsstore.open(directory)
    js.add_stream(name="A", subjects=["a.>"])
    for i in range(pending):
        js.publish(f"a.{i % 1000}", PAYLOAD)
    js.add_consumer("A", durable_name="HOLD", ack_policy="explicit", max_ack_pending=-1,
                    ack_wait=3600 * 10**9)
    sub = js.pull_subscribe("a.>", "HOLD", stream="A")
    in_order, randomly = ack_plan(pending, acks, rng)
    wanted = set(in_order) | set(randomly)
    held: dict[int, object] = {}
    index = 0
    while index < pending:
        for msg in sub.fetch(min(10_000, pending - index), timeout=0):
            if index in wanted:
                held[index] = msg
            index += 1
    out = {}
    for curve, order in (("ack in order / pending", in_order),
                         ("ack random / pending", randomly)):
        msgs = [held[i] for i in order]
        gc.collect()
        seconds = []
        for part in trials(msgs):
            start = cpu_clock()
            for msg in part:
                msg.ack()
            seconds.append(cpu_clock() - start)
        out[curve] = per_op(seconds, [len(p) for p in trials(msgs)])
    info = js.consumer_info("A", "HOLD")
    if info.num_ack_pending != pending - len(in_order) - len(randomly):
        raise AssertionError(f"{info.num_ack_pending} pending after the acks")
    js.close()
    return out


# -- servers ------------------------------------------------------------------------------
def start(kind: str, directory: str):
    return start_jsstore_server(directory) if kind == SERVE else start_nats_server(directory)


def publish_frames(subjects, reply: bytes = b"_R.p"):
    head = b"PUB %s " + reply + b" 128\r\n" + PAYLOAD + b"\r\n"
    for subject in subjects:
        yield head % subject.encode()


def server_subjects(kind: str, directory: str, n: int, ops: int, creates: int,
                    rng: random.Random) -> dict:
    server = start(kind, directory)
    client = RawClient(server.port)
    try:
        client.api("$JS.API.STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"],
                                                "allow_direct": True})
        client.pipeline(publish_frames(f"s.{i}" for i in range(n)))
        state = client.api("$JS.API.STREAM.INFO.S")["state"]
        if state["messages"] != n:
            raise AssertionError(f"{kind}: {state['messages']} of {n} stored")
        out = {}
        picks = [f"s.{rng.randrange(n)}" for _ in range(ops)]
        seconds = [server_cpu(server, client.pipeline, publish_frames(part))
                   for part in trials(picks)]
        out["publish / subjects"] = per_op(seconds, [len(p) for p in trials(picks)])
        extra: dict[str, int] = {}
        for subject in picks:
            extra[subject] = extra.get(subject, 0) + 1
        lasts = [f"s.{rng.randrange(n)}" for _ in range(ops)]
        seconds = [server_cpu(server, client.pipeline,
                              (b"PUB $JS.API.DIRECT.GET.S.%s _R.g 0\r\n\r\n" % s.encode()
                               for s in part), window=100)
                   for part in trials(lasts)]
        out["load_last_msg / subjects"] = per_op(seconds, [len(p) for p in trials(lasts)])
        answer = client.request(f"$JS.API.DIRECT.GET.S.{lasts[0]}")
        if not answer.endswith(b"\r\n\r\n" + PAYLOAD):
            raise AssertionError(f"{kind}: direct get answered {answer[:100]!r}")
        filtered = lasts[:creates]
        seconds = []
        for part in trials(filtered):
            start_at = cpu_ns(server.pid)
            for subject in part:
                info = client.api("$JS.API.CONSUMER.CREATE.S", {
                    "stream_name": "S", "config": {"filter_subject": subject,
                                                   "ack_policy": "none", "mem_storage": True,
                                                   "inactive_threshold": 60 * 10**9}})
                if info["num_pending"] != 1 + extra.get(subject, 0):
                    raise AssertionError(f"{kind}: num_pending {info['num_pending']}")
            seconds.append((cpu_ns(server.pid) - start_at) / 1e9)
        out["num_pending / subjects"] = per_op(seconds, [len(p) for p in trials(filtered)])
        return out
    finally:
        client.close()
        server.stop()


def server_consumers(kind: str, directory: str, k: int, m: int) -> dict:
    server = start(kind, directory)
    client = RawClient(server.port)
    try:
        client.api("$JS.API.STREAM.CREATE.C", {"name": "C", "subjects": ["c.>"],
                                                "retention": "interest",
                                                "max_consumers": MAX_CONSUMERS})
        creates = []
        for i in range(k):
            body = json.dumps({"stream_name": "C", "config": {
                "durable_name": f"k{i}", "deliver_subject": f"d.{i}",
                "filter_subject": f"c.{i}", "ack_policy": "explicit",
                "max_ack_pending": -1, "ack_wait": 3600 * 10**9}}).encode()
            creates.append(b"PUB $JS.API.CONSUMER.CREATE.C.k%d _R.c %d\r\n%s\r\n"
                           % (i, len(body), body))
        client.pipeline(creates, window=50)
        names = client.api("$JS.API.STREAM.INFO.C")["state"]["consumer_count"]
        if names != k:
            raise AssertionError(f"{kind}: {names} of {k} consumers created")
        subjects = [f"c.{i % k}" for i in range(m)]
        seconds = [server_cpu(server, client.pipeline, publish_frames(part))
                   for part in trials(subjects)]
        out = {"publish / consumers": per_op(seconds, [len(p) for p in trials(subjects)])}
        state = client.api("$JS.API.STREAM.INFO.C")["state"]
        if state["messages"] != m:
            raise AssertionError(f"{kind}: {state['messages']} of {m} kept")
        start_at = cpu_ns(server.pid)
        client.send(b"".join(b"SUB d.%d %d\r\n" % (i, 10 + i) for i in range(k)))
        client.collect(m, keep=False)
        out["delivery / consumers"] = (cpu_ns(server.pid) - start_at) / 1e3 / m
        return out
    finally:
        client.close()
        server.stop()


def server_acks(kind: str, directory: str, pending: int, acks: int,
                rng: random.Random) -> dict:
    server = start(kind, directory)
    client = RawClient(server.port)
    try:
        client.api("$JS.API.STREAM.CREATE.A", {"name": "A", "subjects": ["a.>"]})
        client.pipeline(publish_frames(f"a.{i % 1000}" for i in range(pending)))
        client.api("$JS.API.CONSUMER.CREATE.A.HOLD", {"stream_name": "A", "config": {
            "durable_name": "HOLD", "ack_policy": "explicit", "max_ack_pending": -1,
            "ack_wait": 3600 * 10**9}})
        in_order, randomly = ack_plan(pending, acks, rng)
        wanted = set(in_order) | set(randomly)
        replies: dict[int, bytes] = {}
        index = 0
        while index < pending:
            batch = min(10_000, pending - index)
            client.send(b'PUB $JS.API.CONSUMER.MSG.NEXT.A.HOLD _R.n %d\r\n{"batch":%d}\r\n'
                        % (len(b'{"batch":%d}' % batch), batch))
            for _subject, reply, _data in client.collect(batch):
                if index in wanted:
                    replies[index] = reply
                index += 1
        out = {}
        for curve, order in (("ack in order / pending", in_order),
                             ("ack random / pending", randomly)):
            frames = [b"PUB %s _R.a 4\r\n+ACK\r\n" % replies[i] for i in order]
            seconds = [server_cpu(server, client.pipeline, part) for part in trials(frames)]
            out[curve] = per_op(seconds, [len(p) for p in trials(frames)])
        info = client.api("$JS.API.CONSUMER.INFO.A.HOLD")
        if info["num_ack_pending"] != pending - len(in_order) - len(randomly):
            raise AssertionError(f"{kind}: {info['num_ack_pending']} pending after the acks")
        return out
    finally:
        client.close()
        server.stop()


# -- the run ------------------------------------------------------------------------------
def run(args) -> list[dict]:
    rng = random.Random(20)
    work = tempfile.mkdtemp(prefix="jsstore-growth-", dir=args.dir)
    points: list[dict] = []
    failures: list[str] = []
    quick = 1 if args.quick else 0
    ops = 5_000 if args.quick else 20_000
    try:
        def record(kind: str, size: int, figures: dict) -> None:
            for curve, us in figures.items():
                points.append({"curve": curve, "impl": kind, "size": size, "us": us})
                print(f"  {curve:<26} {kind:<17} {size:>10,}: {us:8.2f} us", file=sys.stderr)

        def fresh() -> str:
            return tempfile.mkdtemp(dir=work)

        flip = 0
        for family in args.curves:
            for size in SIZES[family][quick]:
                kinds = [EMBEDDED]
                if family != "subjects" or size <= args.server_max_subjects:
                    kinds += [SERVE, NATS] if flip % 2 == 0 else [NATS, SERVE]
                    flip += 1
                kinds = [kind for kind in kinds if kind in args.contenders]
                for kind in kinds:
                    directory = fresh()
                    figures = {}
                    try:
                        if family == "subjects":
                            figures = (embedded_subjects(directory, size, ops, rng)
                                       if kind == EMBEDDED else
                                       server_subjects(kind, directory, size, ops,
                                                       200 if not args.quick else 50, rng))
                        elif family == "consumers":
                            m = max(ops, 2 * size)
                            figures = (embedded_consumers(directory, size, m)
                                       if kind == EMBEDDED else
                                       server_consumers(kind, directory, size, m))
                        else:
                            acks = min(ops // 2, size // 2)
                            figures = (embedded_acks(directory, size, acks, rng)
                                       if kind == EMBEDDED else
                                       server_acks(kind, directory, size, acks, rng))
                    except Exception as exc:        # one failed point: say so, go on
                        print(f"  {family} {kind} {size:,}: FAILED {exc!r}", file=sys.stderr)
                        failures.append(f"{family} {kind} {size:,}: {exc!r}")
                    finally:
                        shutil.rmtree(directory, ignore_errors=True)
                    record(kind, size, figures)
                    if args.json:
                        with open(args.json, "w") as f:
                            json.dump({"quick": args.quick, "points": points,
                                       "failures": failures}, f, indent=1)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return points


def table(points: list[dict]) -> str:
    """Markdown: per curve and size, each contender's us/op and its ratio to its
    smallest size."""
    lines = ["| curve | size | jsstore embedded | jsstore serve | nats-server |",
             "|---|---|---|---|---|"]
    for curve in CURVES:
        rows = [p for p in points if p["curve"] == curve]
        if not rows:
            continue
        base = {}
        for p in sorted(rows, key=lambda p: p["size"]):
            base.setdefault(p["impl"], p["us"])
        for size in sorted({p["size"] for p in rows}):
            cells = []
            for impl in (EMBEDDED, SERVE, NATS):
                hit = [p for p in rows if p["size"] == size and p["impl"] == impl]
                cells.append(f"{hit[0]['us']:.2f} ({hit[0]['us'] / base[impl]:.2f}×)"
                             if hit else "–")
            lines.append(f"| {curve} | {size:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def verdicts(points: list[dict]) -> list[str]:
    out = []
    for curve in CURVES:
        for impl in (EMBEDDED, SERVE):
            rows = sorted((p for p in points if p["curve"] == curve and p["impl"] == impl),
                          key=lambda p: p["size"])
            if not rows:
                continue
            worst = max(rows, key=lambda p: p["us"])
            ratio = worst["us"] / rows[0]["us"]
            out.append(f"{'PASS' if ratio <= BAND else 'FAIL'}  {curve}, {impl}: worst "
                       f"{ratio:.2f}× of the smallest size (at {worst['size']:,})")
    return out


def plot(points: list[dict], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    curves = [c for c in CURVES if any(p["curve"] == c for p in points)]
    cols = 3
    rows = (len(curves) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.8 * rows), squeeze=False)
    styles = {EMBEDDED: ("tab:blue", "o"), SERVE: ("tab:green", "s"), NATS: ("tab:red", "^")}
    for ax, curve in zip(axes.flat, curves):
        family, what = CURVES[curve]
        for impl, (color, marker) in styles.items():
            rows_ = sorted((p for p in points if p["curve"] == curve and p["impl"] == impl),
                           key=lambda p: p["size"])
            if not rows_:
                continue
            xs = [p["size"] for p in rows_]
            ys = [p["us"] for p in rows_]
            ax.plot(xs, ys, marker=marker, color=color, label=impl)
            if impl != NATS:
                ax.fill_between(xs, [ys[0]] * len(xs), [ys[0] * BAND] * len(xs),
                                color=color, alpha=0.12)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{curve}\n({what})", fontsize=9)
        ax.set_xlabel({"subjects": "distinct subjects", "consumers": "consumers",
                       "acks": "pending acks"}[family])
        ax.set_ylabel("CPU µs per operation")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(curves):]:
        ax.axis("off")
    fig.suptitle("Cost per operation as the work grows (shaded: 1.5× of jsstore's smallest "
                 "size; servers not filled to 10M subjects)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def summary_rows(points: list[dict]) -> list[dict]:
    """make bench's rows: per curve and jsstore contender, the costliest size against the
    smallest (bench/summary.py)."""
    rows = []
    for curve in CURVES:
        for impl in (EMBEDDED, SERVE):
            mine = sorted((p for p in points if p["curve"] == curve and p["impl"] == impl),
                          key=lambda p: p["size"])
            if len(mine) < 2:
                continue
            worst = max(mine[1:], key=lambda p: p["us"])
            rows.append(summary.row(
                "growth", f"{curve}, {impl}: {worst['size']:,} vs {mine[0]['size']:,}",
                worst["us"], f"{mine[0]['size']:,}", mine[0]["us"], BAND,
                unit="us/op", better=summary.LOWER))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--curves", default="subjects,consumers,acks")
    parser.add_argument("--contenders", default=",".join((EMBEDDED, SERVE, NATS)),
                        help="which of them to measure (comma-separated)")
    parser.add_argument("--server-max-subjects", type=int, default=1_000_000)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--plot", default=None)
    parser.add_argument("--from-json", default=None, help="tabulate and plot earlier runs' JSON files (comma-separated)")
    args = parser.parse_args(argv)
    args.curves = [c for c in args.curves.split(",") if c]
    args.contenders = [c for c in args.contenders.split(",") if c]
    if args.from_json:
        merged: dict[tuple, dict] = {}      # a later run's point replaces an earlier one's
        for path in args.from_json.split(","):
            with open(path) as f:
                for p in json.load(f)["points"]:
                    merged[p["curve"], p["impl"], p["size"]] = p
        points = list(merged.values())
    else:
        points = run(args)
    print(table(points))
    print()
    print("\n".join(verdicts(points)))
    if args.json and not args.from_json:
        with open(args.json) as f:
            written = json.load(f)
        written["summary"] = summary_rows(points)
        with open(args.json, "w") as f:
            json.dump(written, f, indent=1)
    if args.plot:
        plot(points, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
