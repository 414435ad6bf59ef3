"""Child program for the directory sink's crash tests: one write, run the way Spark runs it
(the writer made on the driver, each partition's write() as a task, then commit() or
abort()), killed with SIGKILL when the commit protocol reaches a step.

    python sinkcrash.py <store> <kind> <write id|-tag> <rows> <partitions> <step|-> <nth> [fail] [ids]

kind: "batch" (DirectoryWriter, option write_id unless "-<tag>": an unkeyed write) or
"sink" (StreamSink, the write id is the micro-batch id).  Row i of the write is subject
`in.<i % 7>`, payload `<tag>-<i>` (tag "row" unless an unkeyed write names another);
with `ids` it carries a Nats-Msg-Id, some of them repeated (msg_id).  With `fail`, the
job fails after its tasks (Spark's abort instead of the commit).  Prints "ok" when it was
not killed.
"""

from __future__ import annotations

import os
import signal
import sys

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from jsstore.spark import staged, writer
from jsstore.spark.options import SourceOptions

SCHEMA = StructType([StructField("subject", StringType()), StructField("data", BinaryType())])
ID_SCHEMA = StructType(SCHEMA.fields + [
    StructField("headers", MapType(StringType(), ArrayType(StringType())))])
BATCH_ROWS = 100
SINK_ID = "crashsink"


def row_payload(tag: str, i: int) -> bytes:
    return f"{tag}-{i}".encode()


def msg_id(i: int) -> str:
    """Rows 10k and 10k+1 share a Nats-Msg-Id: the later of the two is a duplicate."""
    return f"m{i // 2}" if i % 10 in (0, 1) else f"m-{i}"


def partition_batches(tag: str, rows: int, partitions: int, partition: int, ids=False):
    mine = [i for i in range(rows) if i % partitions == partition]
    for start in range(0, len(mine), BATCH_ROWS):
        part = mine[start:start + BATCH_ROWS]
        columns = [pa.array([f"in.{i % 7}" for i in part]),
                   pa.array([row_payload(tag, i) for i in part], pa.binary())]
        names = ["subject", "data"]
        if ids:
            columns.append(pa.array([[("Nats-Msg-Id", [msg_id(i)])] for i in part],
                                    pa.map_(pa.string(), pa.list_(pa.string()))))
            names.append("headers")
        yield pa.RecordBatch.from_arrays(columns, names=names)


def kill_at(target: str, nth: int) -> None:
    seen = [0]

    def hook(name: str) -> None:
        if name == target:
            seen[0] += 1
            if seen[0] == nth:
                os.kill(os.getpid(), signal.SIGKILL)
    staged.STEP_HOOK = hook


def task_context(partition: int, batch_id: str | None) -> None:
    """What Spark gives a task: its partition and, in a micro-batch, the batch id."""
    context = TaskContext._getOrCreate()
    context._partitionId = partition
    context._localProperties = {writer.BATCH_ID_PROPERTY: batch_id} if batch_id else {}


def main(argv) -> None:
    store, kind, write_id, rows, partitions, step_name, nth = argv[:7]
    fail = "fail" in argv[7:]
    ids = "ids" in argv[7:]
    schema = ID_SCHEMA if ids else SCHEMA
    rows, partitions, nth = int(rows), int(partitions), int(nth)
    if step_name != "-":
        kill_at(step_name, nth)
    options = {"path": store, "stream": "OUT", "server_stopped": "true"}
    tag = "row"
    if kind == "batch":
        if write_id.startswith("-"):
            tag = write_id[1:] or tag           # an unkeyed write of rows <tag>-<i>
        else:
            options["write_id"] = write_id
        sink = writer.DirectoryWriter(SourceOptions.parse(options), schema)
        batch_id = None
    else:
        options["sink_id"] = SINK_ID
        sink = writer.StreamSink(SourceOptions.parse(options), schema)
        batch_id = write_id
    messages = []
    for partition in range(partitions):
        task_context(partition, batch_id)
        messages.append(sink.write(partition_batches(tag, rows, partitions, partition, ids)))
    if kind == "batch":
        (sink.abort if fail else sink.commit)(messages)
    else:
        (sink.abort if fail else sink.commit)(messages, int(batch_id))
    print("ok", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
