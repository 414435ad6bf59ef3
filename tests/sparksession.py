"""One local Spark session for every tests/test_spark_*.py file (starting one takes 6-16 s).

The environment is set before the JVM starts: the Python workers Spark spawns must run this
interpreter and find this tree's `src` (where `pyspark_jsstore` makes the source known by
name, with no register() call).  The JVM reader's jar (format("jsstore-jvm")) is built from this
tree's Java sources and put on the session's class path; without a JDK its tests skip.
"""

from __future__ import annotations

import os
import sys
import tempfile

import pytest

from jsstore.spark import jvmjar

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
JVM_FORMAT = "jsstore-jvm"
_jar_problem: list[str] = []


def _jvm_jar() -> str | None:
    try:
        return jvmjar.jar_path()
    except jvmjar.JarBuildError as exc:
        if "javac not found" not in str(exc):
            raise                        # a compile error fails the suite, it is not a skip
        _jar_problem.append(str(exc))
        return None


def require_jvm_reader() -> None:
    if _jar_problem:
        pytest.skip(_jar_problem[0])


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    os.environ["PYTHONPATH"] = SRC + os.pathsep + os.environ.get("PYTHONPATH", "")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # the JVM reader's block indexes go to a directory of this run, not the user's cache
    os.environ["JSSTORE_BLOCK_INDEX_DIR"] = tempfile.mkdtemp(prefix="jsstore-block-index-")
    from pyspark.sql import SparkSession   # optional dependency: only the Spark tests need it
    jar = _jvm_jar()
    builder = SparkSession.builder
    if jar is not None:
        builder = builder.config("spark.jars", jar)
    session = (builder.master("local[2]").appName("jsstore-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.python.filterPushdown.enabled", "true")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(params=["jsstore", JVM_FORMAT])
def source_format(request, spark):
    """Each directory-read test runs against both readers: the Python source and the JVM one."""
    if request.param == JVM_FORMAT:
        require_jvm_reader()
    return request.param


def jvm_scan_metrics(df) -> dict[str, int]:
    """Run a query of the JVM reader and return its scan's metrics (blockBytesRead,
    recordsWalked, plannedBlockBytes)."""
    execution = df._jdf.queryExecution()
    execution.executedPlan().executeCollect()
    leaves = execution.executedPlan().collectLeaves()
    for i in range(leaves.size()):
        metrics = leaves.apply(i).metrics()
        if metrics.contains("blockBytesRead"):
            return {name: metrics.apply(name).value()
                    for name in ("blockBytesRead", "recordsWalked", "plannedBlockBytes")}
    raise AssertionError("no jsstore-jvm scan in the plan")
