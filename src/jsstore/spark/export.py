"""`jsstore export`: a stream of a store directory to Parquet, run by Spark.

    jsstore export --store DIR --stream S --to out.parquet [--subject FILTER] [--since TIME]
                   [--account A] [--master URL] [--reader auto|jvm|python]

Runs on `local[*]` unless `--master` names a cluster (whose executors must have jsstore
installed and see DIR, or use `--url` to read over NATS instead of a directory).
A directory is read by the JVM reader (format "jsstore-jvm", its jar built with the JDK's
javac and shipped to the executors with the job) when a JDK is there, else by the Python
source; `--reader` forces one.
`--subject` takes NATS wildcards; `--since` an ISO 8601 time.  A progress bar of the
scan's tasks is drawn on stderr while Spark works.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

from jsstore.spark import jvmjar
from jsstore.spark.options import parse_time_ns

BAR_WIDTH = 30
POLL_SECONDS = 0.5


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="jsstore export", description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--store", help="store directory (nats-server's -sd)")
    source.add_argument("--url", help="read over NATS from this server instead")
    parser.add_argument("--stream", required=True)
    parser.add_argument("--to", required=True, help="output Parquet path (a directory)")
    parser.add_argument("--subject", help="NATS subject filter, e.g. orders.*.eu")
    parser.add_argument("--since", help="only messages stored at or after this ISO 8601 time")
    parser.add_argument("--account", default="$G")
    parser.add_argument("--master", default="local[*]", help="Spark master URL")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output")
    parser.add_argument("--reader", choices=("auto", "jvm", "python"), default="auto",
                        help="directory reads: the JVM reader (needs a JDK), the Python "
                             "source, or the JVM one when a JDK is there (default)")
    return parser.parse_args(argv)


class ProgressBar:
    """Draws `[#####.....] done/total tasks` for the running Spark jobs until stopped."""

    def __init__(self, spark, out=sys.stderr):
        self.tracker = spark.sparkContext.statusTracker()
        self.out = out
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="jsstore-export-progress",
                                       daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        self.thread.join(timeout=5)
        self.out.write("\n")
        self.out.flush()

    def _run(self) -> None:
        while not self.stopped.wait(POLL_SECONDS):
            done = total = 0
            for stage_id in self.tracker.getActiveStageIds():
                info = self.tracker.getStageInfo(stage_id)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
            if total:
                filled = BAR_WIDTH * done // total
                self.out.write(f"\r[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] "
                               f"{done}/{total} tasks")
                self.out.flush()


def reader_jar(args) -> str | None:
    """The JVM reader's jar when this export reads a directory with it, else None."""
    if args.url or args.reader == "python":
        return None
    try:
        return jvmjar.jar_path()
    except jvmjar.JarBuildError as exc:
        if args.reader == "jvm":
            raise SystemExit(f"jsstore export: {exc}") from None
        return None


def session(master: str, jar: str | None = None):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession  # optional dependency: jsstore[spark]
    builder = SparkSession.builder
    if jar is not None:
        builder = builder.config("spark.jars", jar)
    spark = (builder.master(master).appName("jsstore export")
             .config("spark.sql.python.filterPushdown.enabled", "true")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def export(spark, args, jvm: bool = False) -> int:
    source = "jsstore-jvm" if jvm else "jsstore"
    read = spark.read.format(source).option("stream", args.stream).option("account", args.account)
    read = read.option("path", args.store) if args.store else read.option("url", args.url)
    if args.subject:
        read = read.option("subject_filter", args.subject)
    df = read.load()
    if args.since:
        df = df.filter(df.time_ns >= parse_time_ns("--since", args.since))
    with ProgressBar(spark):
        started = time.monotonic()
        df.write.mode("overwrite" if args.overwrite else "errorifexists").parquet(args.to)
    rows = spark.read.parquet(args.to).count()
    print(f"exported {rows} messages of {args.stream} to {args.to} in "
          f"{time.monotonic() - started:.1f} s", file=sys.stderr)
    return rows


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.since:
        parse_time_ns("--since", args.since)     # a bad time fails before Spark starts
    jar = reader_jar(args)
    spark = session(args.master, jar)
    try:
        export(spark, args, jvm=jar is not None)
    finally:
        spark.stop()
    return 0
