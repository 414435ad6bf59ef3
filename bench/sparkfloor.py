"""The floor of a Python data source in Spark, for bench/spark.py's breakdown.

`jsstore_floor` is the `jsstore` source whose read() hands Spark the same record batches
as jsstore's, built once per Python worker and kept: from the second read on, a task's
Python side costs nothing but yielding ready-made batches, so what is left of a full read
is Spark's part (its planner round trips, the tasks, the Arrow stream into the JVM, rows
made from it) and no reader can go below it.  `python_nothing` plans no partition and
reads nothing, with no jsstore code at all: what any query of a Python source costs.  Workers must import this module: the bench
puts this directory on their PYTHONPATH before the session starts.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader

from jsstore.spark.arrow import STREAM_SCHEMA
from jsstore.spark.source import BlockPartition, DirectoryReader, JetStreamDataSource

FLOOR_NAME = "jsstore_floor"
NOTHING_NAME = "python_nothing"

# (block paths, columns) -> the batches of that partition, per worker process
_built: dict[tuple, list] = {}


class FloorReader(DirectoryReader):
    def read(self, partition):
        if not isinstance(partition, BlockPartition):
            return iter(())
        key = (tuple((s.path, s.seq_low, s.seq_high) for s in partition.slices),
               tuple(self.columns))
        batches = _built.get(key)
        if batches is None:
            batches = _built[key] = list(super().read(partition))
        return iter(batches)


class FloorDataSource(JetStreamDataSource):
    @classmethod
    def name(cls) -> str:
        return FLOOR_NAME

    def reader(self, schema):
        return FloorReader(self._options(), schema)


class NothingReader(DataSourceReader):
    """Plans no partition and reads nothing: a query's cost in Spark for any Python
    source, with no code of jsstore in it."""

    def partitions(self):
        return []

    def read(self, partition):
        return iter(())


class NothingDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NOTHING_NAME

    def schema(self):
        return STREAM_SCHEMA

    def reader(self, schema):
        return NothingReader()
