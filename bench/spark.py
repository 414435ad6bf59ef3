"""The Spark data source side by side with Spark's own Parquet reader and with nats-py.

    python bench/spark.py [--n 1000000] [--reps 3] [--warmup 60] [--dir DIR] [--json FILE]
                          [--skip-nats] [--sections full,breakdown,queries,nats,write]

One local[2] session runs every measurement; each figure is the median of --reps runs, and
the jsstore and Parquet sides of a comparison run in turn, after a warm-up of both. In the
full and queries sections that warm-up is the comparison itself, run in turn untimed for
--warmup seconds: a session's first runs of a query shape are slower (the JIT has not yet
compiled Spark's planning of it), up to 2-3x for a query that reads little, and that time,
added to every side of a comparison, pulls its ratio towards 1. The queries section also
times the first run of each query on its own (the cold case).
Workload (bench/data.py): N messages of 128 random bytes on 1,000 subjects, stored by
jsstore's FileStore (8 MiB blocks) and the same rows written as Parquet by Spark.

  full           every row and column into format("noop"): the JVM reader (format
                 "jsstore-jvm") and the Python source vs Parquet, target >= 0.8x, and the
                 floor of any Python source: the same batches ready-made
                 (bench/sparkfloor.py), so that only Spark's part of the read is left
  breakdown      where a full read's time goes: the core alone (no Spark), the planner round
                 trips, a bare job, a query with nothing to read, projections (jsstore and
                 its floor), batch size, partitions
  queries        subject = <one of 1,000> and a 5% time window: jsstore (JVM reader and
                 Python source) vs Parquet
                 (target >= 3x, bytes read <= 20% of a full scan) beside jsstore's query with
                 every block pruned and the JVM reader's floor: the same partitions with
                 their batches kept from an earlier read (bench/java, FloorSource), Spark's
                 part of the query alone; subjects interleaved (message i on subject
                 i % 1000) and in runs (1,000 messages each)
  nats           the stream served by jsstore serve, then by nats-server: Spark over NATS
                 (batched direct gets, the stream with allow_direct; and the pull consumer,
                 without) vs one nats-py ordered consumer on the same server (target >= 5x)
  write          N rows written into a stream vs Spark writing the same rows as Parquet
Timing assertions live nowhere: this prints figures and ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
sys.path.insert(0, SRC)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
# the Python workers import jsstore, and sparkfloor from here
os.environ["PYTHONPATH"] = os.pathsep.join([SRC, HERE, os.environ.get("PYTHONPATH", "")])
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import data  # noqa: E402
import jvmfloor  # noqa: E402
import nats  # noqa: E402
import sparkfloor  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

import jsstore  # noqa: E402
from jsstore.spark import jvmjar  # noqa: E402
from jsstore import StoreOptions, StreamConfig  # noqa: E402
from jsstore.spark import natsclient  # noqa: E402
from jsstore.spark.arrow import STREAM_COLUMNS  # noqa: E402
from jsstore.spark.directory import partition_batches  # noqa: E402
from jsstore.spark.options import SourceOptions  # noqa: E402
from jsstore.spark.planning import plan  # noqa: E402
from jsstore.spark.scan import ScanFilter  # noqa: E402
from jsstoreserver import jsstore_server  # noqa: E402
from natsserver import nats_server, nats_server_binary  # noqa: E402
from sparksession import jvm_scan_metrics  # noqa: E402

STREAM = "BENCH"
CHUNK = 1000                      # messages per store_batch call (one timestamp each)
RUN = 1000                        # the "runs" layout: consecutive messages per subject
SECTIONS = ("full", "breakdown", "queries", "nats", "write")
JVM = "jsstore-jvm"
WARMUP = 5                        # full reads of each kind before anything is timed
NATS_N = 200_000                  # messages read over NATS by both readers
HEADERLESS = "seq BIGINT, subject STRING, time TIMESTAMP, time_ns BIGINT, data BINARY"
DATALESS = ("seq BIGINT, subject STRING, time TIMESTAMP, time_ns BIGINT, "
            "headers MAP<STRING, ARRAY<STRING>>")


def median_time(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def medians_in_turn(*fns, reps: int, warm: float = 0.0) -> list[float]:
    """Medians of measurements taken in turn (first, second, ..., first, ...), so that the
    load of the machine and the JVM's compilation so far weigh on all alike. With warm > 0
    the same turns run untimed for that many seconds first (at least one turn): the JIT
    compiles the paths these queries take through Spark's planner and the readers, so that
    what is timed is the steady state of a session, not its warm-up."""
    started = time.perf_counter()
    while warm > 0:
        for fn in fns:
            fn()
        if time.perf_counter() - started >= warm:
            break
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(reps):
        for fn, out in zip(fns, times):
            started = time.perf_counter()
            fn()
            out.append(time.perf_counter() - started)
    return [statistics.median(t) for t in times]


def build_store(directory: str, n: int, layout: str) -> None:
    pool = data.payload_pool()
    names = data.subject_names()
    config = StreamConfig(name=STREAM, subjects=["orders.>"])
    fs = jsstore.FileStore(jsstore.stream_dir(directory, STREAM), config,
                           StoreOptions(sync_interval=0))
    for start in range(0, n, CHUNK):
        if layout == "interleaved":
            batch = [(names[i % 1000], None, pool[i % len(pool)]) for i in range(start, min(n, start + CHUNK))]
        else:
            batch = [(names[(i // RUN) % 1000], None, pool[i % len(pool)]) for i in range(start, min(n, start + CHUNK))]
        fs.store_batch(batch)
    fs.stop()


def session(jars: list[str]):
    spark = (SparkSession.builder.master("local[2]").appName("jsstore-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.python.filterPushdown.enabled", "true")
             .config("spark.driver.memory", "2g")
             .config("spark.jars", ",".join(jars)).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(sparkfloor.FloorDataSource)
    spark.dataSource.register(sparkfloor.NothingDataSource)
    return spark


def jsstore_df(spark, directory, schema=None, source="jsstore", **options):
    read = spark.read.format(source).option("path", directory).option("stream", STREAM)
    if schema:
        read = read.schema(schema)
    for key, value in options.items():
        read = read.option(key, str(value))
    return read.load()


def noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def planned_bytes(directory: str, scan: ScanFilter) -> int:
    _stream, parts = plan(jsstore.stream_dir(directory, STREAM), STREAM, scan, 1 << 40)
    return sum(p.size for p in parts)


def core_only(directory: str, columns, batch_rows: int) -> int:
    _stream, parts = plan(jsstore.stream_dir(directory, STREAM), STREAM, ScanFilter(), 16 << 20)
    rows = 0
    for part in parts:
        for batch in partition_batches(part.slices, ScanFilter(), columns, batch_rows):
            rows += batch.num_rows
    return rows


async def nats_py_ordered(url: str, count: int) -> int:
    nc = await nats.connect(url)
    js = nc.jetstream()
    sub = await js.subscribe(">", stream=STREAM, ordered_consumer=True)
    got = 0
    while got < count:
        await sub.next_msg(timeout=30)
        got += 1
    await sub.unsubscribe()
    await nc.close()
    return got


def full_read(spark, base: str, parquet: str, reps: int, warm: float, report) -> None:
    print("full read into noop (JVM reader, Python source, its floor and Parquet in turn)",
          flush=True)
    full_jvm, full_js, floor, full_pq = medians_in_turn(
        lambda: noop(jsstore_df(spark, base, source=JVM)),
        lambda: noop(jsstore_df(spark, base)),
        lambda: noop(jsstore_df(spark, base, source=sparkfloor.FLOOR_NAME)),
        lambda: noop(spark.read.parquet(parquet)), reps=reps, warm=warm)
    report("jsstore-jvm full read", full_jvm)
    report("jsstore (Python source) full read", full_js)
    report("floor: the same batches ready-made (no reading, no building)", floor)
    report("parquet full read", full_pq)
    report("ratio jsstore-jvm/parquet speed (target >= 0.8)", full_pq / full_jvm, "x")
    report("ratio Python source/parquet speed", full_pq / full_js, "x")
    report("ratio floor/parquet speed (best any Python reader gets)", full_pq / floor, "x")


def breakdown(spark, base: str, parquet: str, reps: int, report) -> None:
    print("breakdown of the full read", flush=True)
    report("core + Arrow building, 1 process, no Spark",
           median_time(lambda: core_only(base, STREAM_COLUMNS, 262144), reps))
    report("core, seq column only, no Spark",
           median_time(lambda: core_only(base, ["seq"], 262144), reps))
    report("spark: load() (the schema from a Python planner)",
           median_time(lambda: jsstore_df(spark, base), reps))
    report("spark: planning (pushFilters, partitions in a Python planner)",
           median_time(lambda: jsstore_df(spark, base).filter("seq > 0")
                       ._jdf.queryExecution().executedPlan(), reps))
    report("spark: a job of 10 rows (spark.range) into noop",
           median_time(lambda: noop(spark.range(10)), reps))
    pruned, nothing, pruned_pq = medians_in_turn(
        lambda: noop(jsstore_df(spark, base).filter("seq > 100000000000")),
        lambda: noop(spark.read.format(sparkfloor.NOTHING_NAME).load()
                     .filter("seq > 100000000000")),
        lambda: noop(spark.read.parquet(parquet).filter("seq > 100000000000")), reps=reps)
    report("spark: a query with every block pruned (fixed cost per query)", pruned)
    report("spark: the same query of a Python source that reads nothing", nothing)
    report("parquet: a query with every row group pruned", pruned_pq)
    for label, columns in (("every column", list(STREAM_COLUMNS)),
                           ("every column but headers", [c for c in STREAM_COLUMNS if c != "headers"]),
                           ("seq, subject", ["seq", "subject"]), ("seq", ["seq"])):
        jvm, pq = medians_in_turn(
            lambda: noop(jsstore_df(spark, base, source=JVM).select(*columns)),
            lambda: noop(spark.read.parquet(parquet).select(*columns)), reps=reps)
        report(f"jvm: {label}", jvm)
        report(f"parquet: {label}", pq)
    for rows in (1024, 4096, 16384, 65536):
        report(f"jvm: batch_rows {rows}",
               median_time(lambda: noop(jsstore_df(spark, base, source=JVM, batch_rows=rows)), reps))
    for size in (16 << 20, 64 << 20, 256 << 20):
        parts = jsstore_df(spark, base, source=JVM, partition_bytes=size).rdd.getNumPartitions()
        report(f"jvm: partition_bytes {size >> 20} MiB ({parts} partitions)",
               median_time(lambda: noop(jsstore_df(spark, base, source=JVM,
                                                   partition_bytes=size)), reps))
    report("jvm: a query with every block pruned (fixed cost per query)",
           median_time(lambda: noop(jsstore_df(spark, base, source=JVM)
                                    .filter("seq > 100000000000")), reps))
    for label, schema in (("every column but headers", HEADERLESS),
                          ("every column but data", DATALESS),
                          ("seq, subject only (projection by schema)", "seq BIGINT, subject STRING"),
                          ("seq only", "seq BIGINT")):
        js, floor = medians_in_turn(
            lambda: noop(jsstore_df(spark, base, schema)),
            lambda: noop(jsstore_df(spark, base, schema, source=sparkfloor.FLOOR_NAME)), reps=reps)
        report(f"spark: {label}", js)
        report(f"floor: {label}", floor)
    report("parquet: seq, subject only",
           median_time(lambda: noop(spark.read.parquet(parquet).select("seq", "subject")), reps))
    for rows in (8192, 65536, 262144, 1 << 20):
        report(f"spark: batch_rows {rows}",
               median_time(lambda: noop(jsstore_df(spark, base, batch_rows=rows)), reps))
    for size in (16 << 20, 64 << 20, 256 << 20):
        parts = jsstore_df(spark, base, partition_bytes=size).rdd.getNumPartitions()
        js, floor = medians_in_turn(
            lambda: noop(jsstore_df(spark, base, partition_bytes=size)),
            lambda: noop(jsstore_df(spark, base, source=sparkfloor.FLOOR_NAME,
                                    partition_bytes=size)), reps=reps)
        report(f"spark: partition_bytes {size >> 20} MiB ({parts} partitions)", js)
        report(f"floor: partition_bytes {size >> 20} MiB ({parts} partitions)", floor)


def queries(spark, stores, parquet: str, root: str, n: int, reps: int, warm: float,
            report) -> None:
    """One subject and a 5% time window on both layouts: jsstore, Parquet, jsstore's
    query with every block pruned (the fixed cost no pruning removes) and the JVM reader's
    floor (the query's rows with nothing read) in turn."""
    print("one subject of 1,000 and a 5% time window", flush=True)
    chosen = f"orders.{437 if n >= 438 * RUN else n // RUN // 2}"   # in both layouts
    subject = f"subject = '{chosen}'"
    for layout, directory in stores.items():
        full_bytes = planned_bytes(directory, ScanFilter())
        pq_dir = parquet if layout == "interleaved" else os.path.join(root, "parquet-runs")
        if not os.path.exists(pq_dir):
            jsstore_df(spark, directory).write.parquet(pq_dir)
        times = [r["time_ns"] for r in jsstore_df(spark, directory).filter(
            f"seq IN ({int(n * 0.475)}, {int(n * 0.525)})").select("time_ns").collect()]
        low, high = min(times), max(times)
        window = f"time_ns BETWEEN {low} AND {high}"
        for name, condition, scan in (
                ("one subject", subject, ScanFilter(exact={chosen})),
                ("5% window", window, ScanFilter(time_low=low, time_high=high))):
            started = time.perf_counter()
            def jvm_query(condition=condition, directory=directory):
                return jsstore_df(spark, directory, source=JVM).filter(condition)
            first_read = jvm_scan_metrics(jvm_query())["blockBytesRead"]
            report(f"{layout}: {name}: jsstore-jvm first query (writes block indexes)",
                   time.perf_counter() - started)
            report(f"{layout}: {name}: jsstore-jvm first query bytes read / full scan",
                   first_read / full_bytes, "")
            def floor_query(condition=condition, directory=directory):
                return jsstore_df(spark, directory, source=jvmfloor.FLOOR_FORMAT).filter(condition)
            noop(floor_query())                  # reads each partition, once for the JVM
            t_jvm, t_js, t_pq, t_none, t_floor = medians_in_turn(
                lambda: noop(jvm_query()),
                lambda: noop(jsstore_df(spark, directory).filter(condition)),
                lambda: noop(spark.read.parquet(pq_dir).filter(condition)),
                lambda: noop(jsstore_df(spark, directory, source=JVM).filter("seq > 100000000000")),
                lambda: noop(floor_query()),
                reps=reps, warm=warm)
            read = planned_bytes(directory, scan)
            read_jvm = jvm_scan_metrics(jvm_query())["blockBytesRead"]
            report(f"{layout}: {name}: jsstore-jvm", t_jvm)
            report(f"{layout}: {name}: jsstore (Python source)", t_js)
            report(f"{layout}: {name}: parquet", t_pq)
            report(f"{layout}: {name}: jsstore-jvm, every block pruned", t_none)
            report(f"{layout}: {name}: jvm floor (its batches kept: no reading)", t_floor)
            report(f"{layout}: {name}: jvm speed ratio (target >= 3)", t_pq / t_jvm, "x")
            report(f"{layout}: {name}: Python source speed ratio", t_pq / t_js, "x")
            report(f"{layout}: {name}: floor speed ratio (best a reader of its partitions gets)", t_pq / t_floor, "x")
            report(f"{layout}: {name}: ratio with every block pruned", t_pq / t_none, "x")
            report(f"{layout}: {name}: MB read (full scan {full_bytes / 1e6:.1f} MB)",
                   read / 1e6, "MB")
            report(f"{layout}: {name}: Python source bytes read / full scan",
                   read / full_bytes, "")
            report(f"{layout}: {name}: jvm bytes read / full scan (target <= 0.2)",
                   read_jvm / full_bytes, "")


def allow_direct(url: str, on: bool) -> None:
    """Set the stream's allow_direct over NATS: the Spark reader uses batched direct gets
    when it is set, a pull consumer when not."""
    with natsclient.Connection(SourceOptions(url=url, stream=STREAM)) as conn:
        config = conn.request(f"$JS.API.STREAM.INFO.{STREAM}", b"")["config"]
        config["allow_direct"] = on
        conn.request(f"$JS.API.STREAM.UPDATE.{STREAM}", config)


def over_nats(spark, base: str, root: str, count: int, reps: int, report) -> None:
    print(f"over NATS, {count:,} messages", flush=True)
    for kind, start in (("jsstore serve", jsstore_server), ("nats-server", nats_server)):
        if kind == "nats-server" and nats_server_binary() is None:
            print("  nats-server: not installed, skipped", flush=True)
            continue
        served = os.path.join(root, "served-" + kind.split()[0])
        shutil.copytree(base, served)
        with start(served) as server:
            def over(direct: bool, url=server.url):
                # the default options: nats_partition_messages cuts 200,000 into 2 tasks,
                # which beat 4 (the server takes a core of its own)
                allow_direct(url, direct)
                noop(spark.read.format("jsstore").option("url", url).option("stream", STREAM)
                     .load().filter(f"seq <= {count}"))
            over(False)
            over(True)
            t_direct, t_pull, t_py = medians_in_turn(
                lambda: over(True), lambda: over(False),
                lambda: asyncio.run(nats_py_ordered(server.url, count)), reps=reps)
        report(f"spark over NATS, direct gets ({kind})", t_direct)
        report(f"spark over NATS, pull consumer ({kind})", t_pull)
        report(f"nats-py ordered consumer ({kind})", t_py)
        report(f"ratio over NATS / nats-py, {kind} (target >= 5)", t_py / t_direct, "x")
        report(f"ratio pull consumer / nats-py, {kind}", t_py / t_pull, "x")
        shutil.rmtree(served, ignore_errors=True)


def write(spark, parquet: str, root: str, n: int, reps: int, report) -> None:
    print(f"writing {n:,} rows", flush=True)
    rows = spark.read.parquet(parquet).select("subject", "data").cache()
    rows.count()
    counter = iter(range(1000))

    def write_stream():
        target = os.path.join(root, f"write-{next(counter)}")
        rows.write.format("jsstore").option("path", target).option("stream", "W") \
            .option("create", "true").option("subjects", "orders.>").mode("append").save()
        shutil.rmtree(target, ignore_errors=True)

    def write_parquet():
        rows.write.mode("overwrite").parquet(os.path.join(root, "write-parquet"))

    t_write, t_write_pq = medians_in_turn(write_stream, write_parquet, reps=reps)
    report("jsstore write", t_write)
    report("parquet write", t_write_pq)
    report("ratio jsstore/parquet write speed", t_write_pq / t_write, "x")
    rows.unpersist()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=data.bench_n())
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--warmup", type=float, default=60.0,
                        help="seconds each comparison of the full and queries sections runs "
                             "untimed, in turn, before it is timed (0: none)")
    parser.add_argument("--dir", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--skip-nats", action="store_true")
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"comma-separated, of {','.join(SECTIONS)}")
    args = parser.parse_args(argv)
    sections = set(args.sections.split(","))
    if args.skip_nats:
        sections.discard("nats")
    root = tempfile.mkdtemp(prefix="jsstore-spark-bench-", dir=args.dir)
    # the JVM reader's block indexes: this run's own, started empty (set before the JVM starts)
    os.environ["JSSTORE_BLOCK_INDEX_DIR"] = os.path.join(root, "block-index")
    results: dict[str, float] = {}

    def report(name: str, value: float, unit: str = "s") -> None:
        results[name] = value
        print(f"  {name:<58} {value:10.3f} {unit}", flush=True)

    try:
        print(f"building {args.n:,} messages (interleaved and in runs)...", flush=True)
        stores = {}
        for layout in ("interleaved", "runs"):
            stores[layout] = os.path.join(root, layout)
            build_store(stores[layout], args.n, layout)
        reader_jar = jvmjar.jar_path()
        spark = session([reader_jar, jvmfloor.floor_jar(reader_jar, root)])
        base = stores["interleaved"]
        parquet = os.path.join(root, "parquet")
        jsstore_df(spark, base).write.parquet(parquet)
        # warm the Python workers and the JIT: the first reads of either kind run up to
        # twice as long as the later ones while the JVM compiles the row conversion
        for _ in range(WARMUP):
            noop(jsstore_df(spark, base, source=JVM))
            noop(jsstore_df(spark, base))
            noop(jsstore_df(spark, base, source=sparkfloor.FLOOR_NAME))
            noop(spark.read.parquet(parquet))

        if "full" in sections:
            full_read(spark, base, parquet, args.reps, args.warmup, report)
        if "breakdown" in sections:
            breakdown(spark, base, parquet, args.reps, report)

        if "queries" in sections:
            queries(spark, stores, parquet, root, args.n, args.reps, args.warmup, report)
        if "nats" in sections:
            over_nats(spark, base, root, min(NATS_N, args.n), args.reps, report)
        if "write" in sections:
            write(spark, parquet, root, args.n, args.reps, report)
        spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
