"""A Spark job for the directory sink's crash tests: writes ROWS rows (payload `row-<i>`,
in PARTITIONS tasks) into stream OUT of a store directory with option write_id, then prints
"ok".  tests/sparkkill/sitecustomize.py kills it at a commit step when asked.

    python sparkjob.py <store> <write id>
"""

from __future__ import annotations

import os
import sys

ROWS, PARTITIONS = 30_000, 3


def main(store: str, write_id: str) -> None:
    os.environ["JSSTORE_TEST_DRIVER_PID"] = str(os.getpid())
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    spark = (SparkSession.builder.master("local[2]").appName("jsstore-sink-kill")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", "2000")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.range(0, ROWS, numPartitions=PARTITIONS).select(
        F.concat(F.lit("in."), (F.col("id") % 7).cast("string")).alias("subject"),
        F.concat(F.lit("row-"), F.col("id").cast("string")).cast("binary").alias("data"))
    df.write.format("jsstore").option("path", store).option("stream", "OUT") \
        .option("write_id", write_id).option("server_stopped", "true").mode("append").save()
    spark.stop()
    print("ok", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
