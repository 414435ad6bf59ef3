"""The Spark data source side by side with Spark's own Parquet reader and with nats-py.

    python bench/spark.py [--n 1000000] [--reps 3] [--dir DIR] [--json FILE] [--skip-nats]

One local[2] session runs every measurement; each figure is the median of --reps runs, and
the jsstore and Parquet sides of a comparison run in turn, after a warm-up of both.
Workload (bench/data.py): N messages of 128 random bytes on 1,000 subjects, stored by
jsstore's FileStore (8 MiB blocks) and the same rows written as Parquet by Spark.

  full read      every row and column into format("noop"): jsstore vs Parquet, target >= 0.8x
  breakdown      where a full read's time goes: the core alone (no Spark), Arrow building,
                 projection, batch size, partitions
  one subject    subject = <one of 1,000> and a 5% time window: jsstore vs Parquet
                 (target >= 3x, bytes read <= 20% of a full scan); subjects interleaved
                 (message i on subject i % 1000) and in runs (1,000 messages each)
  over NATS      the stream served by jsstore serve, then by nats-server: Spark over NATS
                 vs one nats-py ordered consumer on the same server (target >= 5x)
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
os.environ["PYTHONPATH"] = SRC + os.pathsep + os.environ.get("PYTHONPATH", "")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import data  # noqa: E402
import nats  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

import jsstore  # noqa: E402
from jsstore import StoreOptions, StreamConfig  # noqa: E402
from jsstore.spark.arrow import STREAM_COLUMNS  # noqa: E402
from jsstore.spark.directory import partition_batches  # noqa: E402
from jsstore.spark.planning import plan  # noqa: E402
from jsstore.spark.scan import ScanFilter  # noqa: E402
from jsstoreserver import jsstore_server  # noqa: E402
from natsserver import nats_server, nats_server_binary  # noqa: E402

STREAM = "BENCH"
CHUNK = 1000                      # messages per store_batch call (one timestamp each)
RUN = 1000                        # the "runs" layout: consecutive messages per subject
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


def paired_medians(first, second, reps: int) -> tuple[float, float]:
    """Medians of two measurements taken in turn (first, second, first, ...), so that the
    load of the machine and the JVM's compilation so far weigh on both alike."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(reps):
        for fn, out in ((first, times[0]), (second, times[1])):
            started = time.perf_counter()
            fn()
            out.append(time.perf_counter() - started)
    return statistics.median(times[0]), statistics.median(times[1])


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


def session():
    spark = (SparkSession.builder.master("local[2]").appName("jsstore-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.python.filterPushdown.enabled", "true")
             .config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def jsstore_df(spark, directory, schema=None, **options):
    read = spark.read.format("jsstore").option("path", directory).option("stream", STREAM)
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=data.bench_n())
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--skip-nats", action="store_true")
    args = parser.parse_args(argv)
    root = tempfile.mkdtemp(prefix="jsstore-spark-bench-", dir=args.dir)
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
        spark = session()
        base = stores["interleaved"]
        parquet = os.path.join(root, "parquet")
        jsstore_df(spark, base).write.parquet(parquet)
        # warm the Python workers and the JIT: the first reads of either kind run up to
        # twice as long as the later ones while the JVM compiles the row conversion
        for _ in range(WARMUP):
            noop(jsstore_df(spark, base))
            noop(spark.read.parquet(parquet))

        print("full read into noop", flush=True)
        full_js, full_pq = paired_medians(lambda: noop(jsstore_df(spark, base)),
                                          lambda: noop(spark.read.parquet(parquet)), args.reps)
        report("jsstore full read", full_js)
        report("parquet full read", full_pq)
        report("ratio jsstore/parquet speed (target >= 0.8)", full_pq / full_js, "x")

        print("breakdown of the full read", flush=True)
        report("core + Arrow building, 1 process, no Spark",
               median_time(lambda: core_only(base, STREAM_COLUMNS, 65536), args.reps))
        report("core, seq column only, no Spark",
               median_time(lambda: core_only(base, ["seq"], 65536), args.reps))
        report("spark: a query with every block pruned (fixed cost per query)",
               median_time(lambda: noop(jsstore_df(spark, base).filter("seq > 100000000000")),
                           args.reps))
        report("parquet: a query with every row group pruned",
               median_time(lambda: noop(spark.read.parquet(parquet).filter("seq > 100000000000")),
                           args.reps))
        report("spark: every column but headers",
               median_time(lambda: noop(jsstore_df(spark, base, HEADERLESS)), args.reps))
        report("spark: every column but data",
               median_time(lambda: noop(jsstore_df(spark, base, DATALESS)), args.reps))
        report("spark: seq, subject only (projection by schema)",
               median_time(lambda: noop(jsstore_df(spark, base, "seq BIGINT, subject STRING")), args.reps))
        report("parquet: seq, subject only",
               median_time(lambda: noop(spark.read.parquet(parquet).select("seq", "subject")), args.reps))
        for rows in (8192, 32768, 65536, 262144):
            report(f"spark: batch_rows {rows}",
                   median_time(lambda: noop(jsstore_df(spark, base, batch_rows=rows)), args.reps))
        for size in (16 << 20, 64 << 20, 256 << 20):
            parts = jsstore_df(spark, base, partition_bytes=size).rdd.getNumPartitions()
            report(f"spark: partition_bytes {size >> 20} MiB ({parts} partitions)",
                   median_time(lambda: noop(jsstore_df(spark, base, partition_bytes=size)), args.reps))

        print("one subject of 1,000 and a 5% time window", flush=True)
        full_bytes = planned_bytes(base, ScanFilter())
        chosen = f"orders.{437 if args.n >= 438 * RUN else args.n // RUN // 2}"   # in both layouts
        subject = f"subject = '{chosen}'"
        for layout, directory in stores.items():
            pq_dir = parquet if layout == "interleaved" else os.path.join(root, "parquet-runs")
            if layout != "interleaved":
                jsstore_df(spark, directory).write.parquet(pq_dir)
            times = [r["time_ns"] for r in jsstore_df(spark, directory).filter(
                f"seq IN ({int(args.n * 0.475)}, {int(args.n * 0.525)})").select("time_ns").collect()]
            low, high = min(times), max(times)
            window = f"time_ns BETWEEN {low} AND {high}"
            for name, condition, scan in (
                    ("one subject", subject, ScanFilter(exact={chosen})),
                    ("5% window", window, ScanFilter(time_low=low, time_high=high))):
                t_js, t_pq = paired_medians(
                    lambda: noop(jsstore_df(spark, directory).filter(condition)),
                    lambda: noop(spark.read.parquet(pq_dir).filter(condition)), args.reps)
                report(f"{layout}: {name}: jsstore", t_js)
                report(f"{layout}: {name}: parquet", t_pq)
                report(f"{layout}: {name}: speed ratio (target >= 3)", t_pq / t_js, "x")
                report(f"{layout}: {name}: bytes read / full scan (target <= 0.2)",
                       planned_bytes(directory, scan) / full_bytes, "")

        if not args.skip_nats:
            count = min(NATS_N, args.n)
            print(f"over NATS, {count:,} messages", flush=True)
            for kind, start in (("jsstore serve", jsstore_server), ("nats-server", nats_server)):
                if kind == "nats-server" and nats_server_binary() is None:
                    print("  nats-server: not installed, skipped", flush=True)
                    continue
                served = os.path.join(root, "served-" + kind.split()[0])
                shutil.copytree(base, served)
                with start(served) as server:
                    over = lambda: noop(spark.read.format("jsstore").option("url", server.url)
                                        .option("stream", STREAM)
                                        .option("nats_partition_messages", count // 4)
                                        .load().filter(f"seq <= {count}"))
                    over()
                    t_nats = median_time(over, args.reps)
                    t_py = median_time(lambda: asyncio.run(nats_py_ordered(server.url, count)),
                                       args.reps)
                report(f"spark over NATS ({kind})", t_nats)
                report(f"nats-py ordered consumer ({kind})", t_py)
                report(f"ratio over NATS / nats-py, {kind} (target >= 5)", t_py / t_nats, "x")
                shutil.rmtree(served, ignore_errors=True)

        print(f"writing {args.n:,} rows", flush=True)
        rows = spark.read.parquet(parquet).select("subject", "data").cache()
        rows.count()
        counter = iter(range(1000))

        def write_stream():
            target = os.path.join(root, f"write-{next(counter)}")
            rows.write.format("jsstore").option("path", target).option("stream", "W") \
                .option("create", "true").option("subjects", "orders.>").mode("append").save()

        def write_parquet():
            rows.write.mode("overwrite").parquet(os.path.join(root, "write-parquet"))

        t_write = median_time(write_stream, args.reps)
        t_write_pq = median_time(write_parquet, args.reps)
        report("jsstore write", t_write)
        report("parquet write", t_write_pq)
        report("ratio jsstore/parquet write speed", t_write_pq / t_write, "x")
        spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
