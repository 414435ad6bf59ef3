"""Reading a stream over NATS (`option("url", "nats://host:4222")`): for executors that do
not share a disk with the server.

The driver asks the server for the stream's state and cuts [first_seq, last_seq] (the
snapshot) into ranges of `nats_partition_messages` sequences; each task fetches its range with batched direct gets when the stream
allows them and no subject filter narrows the read, else through a pull consumer bounded
to it (jsstore.spark.natsclient), and the core builds the Arrow columns and applies the filters
to each chunk of records as it arrives, while the rest is still being fetched.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSourceReader, InputPartition

from jsstore._core.columns.arrowblock import BlockColumns
from jsstore.spark import natsclient
from jsstore.spark.arrow import arrow_schema, column_bits, record_batch
from jsstore.spark.options import SourceOptions
from jsstore.spark.scan import ScanFilter


class SequenceRange(InputPartition):
    def __init__(self, low: int, high: int, direct: bool = False):
        super().__init__(None)
        self.low = low
        self.high = high
        self.direct = direct          # the stream allows direct gets


def plan_ranges(first: int, last: int, scan: ScanFilter, size: int,
                direct: bool = False) -> list[SequenceRange]:
    low = max(first, scan.seq_low, 1)
    high = min(last, scan.seq_high)
    if scan.empty or low > high:
        return []
    return [SequenceRange(start, min(start + size - 1, high), direct)
            for start in range(low, high + 1, size)]


def range_batches(options: SourceOptions, stream: str, low: int, high: int, scan: ScanFilter,
                  columns, direct: bool = False):
    schema = arrow_schema(columns)
    bits = column_bits(columns)
    predicate = scan.predicate()
    for records in natsclient.fetch_records(options, stream, low, high,
                                            natsclient.server_filters(scan), direct=direct):
        walker = BlockColumns(records, bits, low, high, scan.time_low, scan.time_high, None,
                              predicate)
        while True:
            out = walker.next_batch(options.batch_rows)
            if out is None:
                break
            rows, buffers = out
            if rows:
                yield record_batch(columns, schema, rows, buffers)


class NatsReader(DataSourceReader):
    def __init__(self, options: SourceOptions, columns, scan: ScanFilter):
        self.options = options
        self.columns = columns
        self.scan = scan

    def partitions(self):
        info = natsclient.stream_info(self.options, self.options.stream_name)
        state = info["state"]
        return plan_ranges(state.get("first_seq", 0), state.get("last_seq", 0), self.scan,
                           self.options.nats_partition_messages,
                           bool(info.get("config", {}).get("allow_direct")))

    def read(self, partition):
        if not isinstance(partition, SequenceRange):
            return iter(())
        return range_batches(self.options, self.options.stream_name, partition.low,
                             partition.high, self.scan, self.columns,
                             partition.direct)
