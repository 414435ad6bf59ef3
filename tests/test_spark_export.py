"""`jsstore export`: a stream to Parquet through Spark, from the command line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import jsstore
from sparksession import require_jvm_reader

pytestmark = pytest.mark.spark

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


@pytest.mark.parametrize("reader", ["python", "jvm"])
def test_export_with_subject_filter_and_since(spark, tmp_path, reader):
    if reader == "jvm":
        require_jvm_reader()
    directory = str(tmp_path / "store")
    with jsstore.open(directory) as js:
        js.add_stream(name="ORDERS", subjects=["orders.>"])
        for i in range(600):
            js.publish(f"orders.{('eu', 'us')[i % 2]}.{i % 3}", f"o{i}".encode())
        cut = js.get_msg("ORDERS", 301).time
    since = f"{cut}"                     # Unix ns are accepted as well as ISO 8601
    out = str(tmp_path / "eu.parquet")
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "jsstore", "export", "--store", directory,
                           "--stream", "ORDERS", "--to", out, "--subject", "orders.eu.*",
                           "--since", since, "--master", "local[1]", "--reader", reader],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "exported 150 messages" in done.stderr
    rows = spark.read.parquet(out).collect()
    assert sorted(r["seq"] for r in rows) == [s for s in range(301, 601) if (s - 1) % 2 == 0]
    assert {r["subject"].split(".")[1] for r in rows} == {"eu"}


def test_a_bad_since_fails_before_spark_starts(tmp_path):
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "jsstore", "export", "--store", str(tmp_path),
                           "--stream", "ORDERS", "--to", str(tmp_path / "out.parquet"),
                           "--since", "yesterday", "--reader", "python"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode != 0
    assert "option '--since': 'yesterday' is not an ISO 8601 time" in done.stderr
    assert "log level" not in done.stderr          # Spark never started
