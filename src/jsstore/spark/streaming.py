"""Tailing a stream with Structured Streaming: `spark.readStream.format("jsstore")`.

Offsets are stream sequences: {"seq": N} means everything up to N is read.  The starting
point (`startingOffsets`) is `earliest`, `latest`, a sequence number (the first one to
read) or an ISO 8601 time (the first message stored at or after it).
`maxMessagesPerTrigger` caps each micro-batch at that many sequences; with
`trigger(availableNow=True)` the end is pinned when the query starts.  A query restarted
from its checkpoint resumes after the last committed offset, so it reads only what is new.

The `subject_filter` option narrows every micro-batch (offsets still count every
sequence).  A stream that does not exist fails the query when it starts.

Works on store directories (block metadata is summarized once per block file and reused
across micro-batches while the file is unchanged) and over NATS.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from jsstore.spark import natsclient, natsread
from jsstore.spark.directory import partition_batches
from jsstore.spark.options import OptionError, SourceOptions, parse_time_ns
from jsstore.spark.planning import (
    StreamNotFound,
    group_slices,
    latest_sequence,
    load_stream_blocks,
    plan_slices,
    stream_exists,
)
from jsstore.spark.scan import ScanFilter, options_scan


class StreamSlices(InputPartition):
    def __init__(self, slices):
        super().__init__(None)
        self.slices = slices


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions, columns):
        if options.kv:
            raise OptionError("streaming reads take option 'stream', not 'kv'")
        self.options = options
        self.columns = columns
        self.target: int | None = None     # the end pinned by trigger(availableNow=True)
        if options.over_nats:
            natsclient.stream_info(options, options.stream)     # fails naming a missing one
        elif not stream_exists(options.stream_directory()):
            raise StreamNotFound(f"no stream {options.stream!r} in the store directory "
                                 f"{options.path!r}: a streaming read needs an existing stream")

    # -- where the stream is ---------------------------------------------------------------
    def _last_seq(self) -> int:
        if self.options.over_nats:
            return natsclient.stream_info(self.options, self.options.stream)["state"]["last_seq"]
        return latest_sequence(self.options.stream_directory())

    def _first_seq_since(self, nanos: int) -> int:
        """First sequence stored at or after `nanos` (last + 1 when none)."""
        if self.options.over_nats:
            return natsclient.first_seq_since(self.options, self.options.stream, nanos)
        stream = load_stream_blocks(self.options.stream_directory(), self.options.stream)
        scan = ScanFilter(time_low=nanos)
        for piece in plan_slices(stream, scan):
            for batch in partition_batches([piece], scan, ["seq"], 1):
                return batch.column(0)[0].as_py()
        return stream.last_seq + 1

    # -- offsets -----------------------------------------------------------------------------
    def initialOffset(self) -> dict:
        start = self.options.starting_offsets
        lowered = start.lower()
        if lowered == "earliest":
            return {"seq": 0}
        if lowered == "latest":
            return {"seq": self._last_seq()}
        if start.isdigit():
            return {"seq": max(int(start) - 1, 0)}
        return {"seq": self._first_seq_since(parse_time_ns("startingOffsets", start)) - 1}

    def getDefaultReadLimit(self):
        if self.options.max_messages_per_trigger:
            return ReadMaxRows(self.options.max_messages_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._last_seq()

    def latestOffset(self, start: dict, limit) -> dict:
        last = self.target if self.target is not None else self._last_seq()
        begin = start["seq"] if start else 0
        if isinstance(limit, ReadMaxRows):
            last = min(last, begin + limit.max_rows)
        return {"seq": max(last, begin)}

    def reportLatestOffset(self):
        return {"seq": self._last_seq()}

    # -- reading -----------------------------------------------------------------------------
    def partitions(self, start: dict, end: dict):
        scan = options_scan(self.options, seq_low=start["seq"] + 1, seq_high=end["seq"])
        if scan.seq_low > scan.seq_high:
            return []
        if self.options.over_nats:
            return natsread.plan_ranges(scan.seq_low, scan.seq_high, scan,
                                        self.options.nats_partition_messages)
        stream = load_stream_blocks(self.options.stream_directory(), self.options.stream)
        stream.check_losses(scan, self.options.fail_on_data_loss)
        return [StreamSlices(p.slices) for p in
                group_slices(plan_slices(stream, scan), self.options.partition_bytes)]

    def read(self, partition):
        scan = options_scan(self.options)
        if isinstance(partition, natsread.SequenceRange):
            return natsread.range_batches(self.options, self.options.stream, partition.low,
                                          partition.high, scan, self.columns)
        if isinstance(partition, StreamSlices):
            return partition_batches(partition.slices, scan, self.columns, self.options.batch_rows,
                                     self.options.fail_on_data_loss)
        return iter(())

    def commit(self, end: dict) -> None:
        pass                      # reading takes nothing from the stream: nothing to release
