"""The `jsstore` data source: DataSource and the batch readers Spark drives.

    spark.read.format("jsstore").option("path", store_dir).option("stream", "ORDERS").load()

Reading runs in three kinds of processes: the planner (schema, pushFilters, partitions) and
the executors (read) are Python workers, so the reader keeps only picklable plain data and
opens files inside read().

The readers take no filters from Spark (no pushFilters): pyspark keeps a Python source's
read info (the reader as pushFilters left it, and its partitions) on the table provider of
a DataFrame and plans a later query of that DataFrame or view that pushes no filter, or a
second scan of it in the same query, with it, so a filter taken once would be applied to
queries that never asked for it.  Spark filters the rows instead; the `subject_filter`
option (part of the DataFrame's options, so never stale) narrows the read, and the JVM
reader (format("jsstore-jvm")) takes Spark's filters per scan.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from jsstore.spark import kv as kv_table
from jsstore.spark import natsread, streaming, writer
from jsstore.spark.arrow import KV_COLUMNS, KV_SCHEMA, STREAM_COLUMNS, STREAM_SCHEMA
from jsstore.spark.directory import partition_batches
from jsstore.spark.options import (
    BATCH_READ,
    STREAM_READ,
    OptionError,
    SourceOptions,
)
from jsstore.spark.planning import plan
from jsstore.spark.scan import options_scan

SOURCE_NAME = "jsstore"


class BlockPartition(InputPartition):
    """Block slices (jsstore.spark.planning.BlockSlice) read by one task."""

    def __init__(self, slices):
        super().__init__(None)
        self.slices = slices


class KvPartition(InputPartition):
    """One task of a KV read (jsstore.spark.kv.KvWork)."""

    def __init__(self, work):
        super().__init__(None)
        self.work = work


def requested_columns(schema: StructType, allowed) -> list[str]:
    """The columns Spark asked for: the whole table, or a user schema naming a subset (the
    only way a Python source learns of a projection)."""
    names = list(schema.fieldNames())
    unknown = [n for n in names if n not in allowed]
    if unknown:
        raise OptionError(f"unknown column(s) {unknown}; the table has {list(allowed)}")
    return names


class DirectoryReader(DataSourceReader):
    """Batch read of a stream (or KV bucket) in a store directory."""

    def __init__(self, options: SourceOptions, schema: StructType):
        self.options = options
        self.columns = requested_columns(schema, KV_COLUMNS if options.kv else STREAM_COLUMNS)
        self.scan = options_scan(options)

    def partitions(self):
        opts = self.options
        if opts.kv:
            return [KvPartition(work) for work in
                    kv_table.plan_kv(opts.stream_directory(), opts.stream_name, self.scan,
                                     opts.kv_history, opts.partition_bytes,
                                     opts.fail_on_data_loss)]
        _stream, planned = plan(opts.stream_directory(), opts.stream_name, self.scan,
                                opts.partition_bytes, opts.fail_on_data_loss)
        return [BlockPartition(p.slices) for p in planned]

    def read(self, partition):
        if isinstance(partition, KvPartition):
            return kv_table.kv_batches(partition.work, self.scan, self.columns, self.options)
        if isinstance(partition, BlockPartition):
            return partition_batches(partition.slices, self.scan, self.columns,
                                     self.options.batch_rows, self.options.fail_on_data_loss)
        return iter(())            # Spark's stand-in partition when everything was pruned


class JetStreamDataSource(DataSource):
    """Streams and KV buckets of jsstore / nats-server store directories, or of a server
    reached over NATS, as Spark tables; writes append to streams."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def _options(self, read: str | None = None) -> SourceOptions:
        return SourceOptions.parse(self.options, read)

    def schema(self):
        return KV_SCHEMA if self.options.get("kv") else STREAM_SCHEMA

    def reader(self, schema: StructType):
        options = self._options(BATCH_READ)
        if options.over_nats:
            if options.kv:
                raise OptionError("KV tables are read from a store directory ('path')")
            return natsread.NatsReader(options, requested_columns(schema, STREAM_COLUMNS),
                                       options_scan(options))
        return DirectoryReader(options, schema)

    def writer(self, schema: StructType, overwrite: bool):
        options = self._options()
        if overwrite:
            raise OptionError("a stream is append-only: use mode('append')")
        if options.over_nats:
            return writer.NatsWriter(options, schema)
        return writer.DirectoryWriter(options, schema)

    def streamReader(self, schema: StructType):
        options = self._options(STREAM_READ)
        return streaming.StreamReader(options, requested_columns(schema, STREAM_COLUMNS))

    def streamWriter(self, schema: StructType, overwrite: bool):
        return writer.StreamSink(self._options(), schema)
