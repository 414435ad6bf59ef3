"""The `jsstore` data source: DataSource and the batch readers Spark drives.

    spark.read.format("jsstore").option("path", store_dir).option("stream", "ORDERS").load()

Reading runs in three kinds of processes: the planner (schema, pushFilters, partitions) and
the executors (read) are Python workers, so the reader keeps only picklable plain data and
opens files inside read().  Filter pushdown needs
`spark.sql.python.filterPushdown.enabled=true`: Spark refuses a reader with pushFilters
otherwise, so `option("pushdown", "false")` gives a reader without it.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from jsstore.spark import kv as kv_table
from jsstore.spark import natsread, streaming, writer
from jsstore.spark.arrow import KV_COLUMNS, KV_SCHEMA, STREAM_COLUMNS, STREAM_SCHEMA
from jsstore.spark.directory import partition_batches
from jsstore.spark.options import KV_SUBJECT_PREFIX, OptionError, SourceOptions
from jsstore.spark.planning import plan
from jsstore.spark.pushdown import FilterTranslator
from jsstore.spark.scan import ScanFilter

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


def base_scan(options: SourceOptions) -> ScanFilter:
    scan = ScanFilter()
    if options.subject_filter:
        prefix = KV_SUBJECT_PREFIX + options.kv + "." if options.kv else ""
        scan.wildcards = [prefix + f for f in options.subject_filter]
    if options.kv:
        scan.prefixes.append(KV_SUBJECT_PREFIX + options.kv + ".")
    return scan


def translator(options: SourceOptions, scan: ScanFilter) -> FilterTranslator:
    if options.kv:
        if options.kv_history:
            return FilterTranslator(scan, subject_column="key",
                                    subject_prefix=KV_SUBJECT_PREFIX + options.kv + ".",
                                    seq_column="revision", time_column="created",
                                    time_ns_column=None)
        return FilterTranslator(scan, subject_column="key",
                                subject_prefix=KV_SUBJECT_PREFIX + options.kv + ".",
                                seq_column=None, time_column=None, time_ns_column=None)
    return FilterTranslator(scan)


class DirectoryReader(DataSourceReader):
    """Batch read of a stream (or KV bucket) in a store directory."""

    def __init__(self, options: SourceOptions, schema: StructType):
        self.options = options
        self.columns = requested_columns(schema, KV_COLUMNS if options.kv else STREAM_COLUMNS)
        self.scan = base_scan(options)

    def partitions(self):
        opts = self.options
        if opts.kv:
            return [KvPartition(work) for work in
                    kv_table.plan_kv(opts.stream_directory(), opts.stream_name, self.scan,
                                     opts.kv_history, opts.partition_bytes)]
        _stream, planned = plan(opts.stream_directory(), opts.stream_name, self.scan,
                                opts.partition_bytes)
        return [BlockPartition(p.slices) for p in planned]

    def read(self, partition):
        if isinstance(partition, KvPartition):
            return kv_table.kv_batches(partition.work, self.scan, self.columns, self.options)
        if isinstance(partition, BlockPartition):
            return partition_batches(partition.slices, self.scan, self.columns,
                                     self.options.batch_rows)
        return iter(())            # Spark's stand-in partition when everything was pruned


class PushdownDirectoryReader(DirectoryReader):
    def pushFilters(self, filters):
        return translator(self.options, self.scan).push(filters)


class PushdownNatsReader(natsread.NatsReader):
    def pushFilters(self, filters):
        return translator(self.options, self.scan).push(filters)


class JetStreamDataSource(DataSource):
    """Streams and KV buckets of jsstore / nats-server store directories, or of a server
    reached over NATS, as Spark tables; writes append to streams."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def _options(self) -> SourceOptions:
        return SourceOptions.parse(self.options)

    def schema(self):
        return KV_SCHEMA if self.options.get("kv") else STREAM_SCHEMA

    def reader(self, schema: StructType):
        options = self._options()
        if options.over_nats:
            if options.kv:
                raise OptionError("KV tables are read from a store directory ('path')")
            kind = PushdownNatsReader if options.pushdown else natsread.NatsReader
            return kind(options, requested_columns(schema, STREAM_COLUMNS), base_scan(options))
        kind = PushdownDirectoryReader if options.pushdown else DirectoryReader
        return kind(options, schema)

    def writer(self, schema: StructType, overwrite: bool):
        options = self._options()
        if overwrite:
            raise OptionError("a stream is append-only: use mode('append')")
        if options.over_nats:
            return writer.NatsWriter(options, schema)
        return writer.DirectoryWriter(options, schema)

    def streamReader(self, schema: StructType):
        options = self._options()
        return streaming.StreamReader(options, requested_columns(schema, STREAM_COLUMNS))

    def streamWriter(self, schema: StructType, overwrite: bool):
        return writer.StreamSink(self._options(), schema)
