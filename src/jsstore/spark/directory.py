"""Reading planned block slices of a store directory into Arrow record batches (executors).

Each slice's file is read whole (and decompressed when it is s2 or lz4 compressed), then
the core walks its records and builds the requested columns of the rows that pass the scan
filter, `batch_rows` rows at a time.  A block removed since planning (limits, compaction)
reads as empty: the store no longer holds those messages.
"""

from __future__ import annotations

import pyarrow as pa

from jsstore._core.arrowblock import BlockColumns
from jsstore.spark.arrow import arrow_schema, column_bits, record_batch
from jsstore.spark.planning import BlockSlice, read_plain_block
from jsstore.spark.scan import ScanFilter


def slice_batches(piece: BlockSlice, scan: ScanFilter, columns, batch_rows: int,
                  predicate=None, schema: pa.Schema | None = None):
    """Record batches of the stream columns named, from one block slice."""
    schema = schema if schema is not None else arrow_schema(columns)
    try:
        data = read_plain_block(piece.path)
    except FileNotFoundError:
        return
    walker = BlockColumns(data, column_bits(columns), piece.seq_low, piece.seq_high,
                          scan.time_low, scan.time_high, piece.deleted or None,
                          predicate if predicate is not None else scan.predicate())
    while True:
        out = walker.next_batch(batch_rows)
        if out is None:
            return
        rows, buffers = out
        if rows:
            yield record_batch(columns, schema, rows, buffers)


def partition_batches(slices, scan: ScanFilter, columns, batch_rows: int):
    """Record batches of every slice of a partition, in sequence order."""
    schema = arrow_schema(columns)
    predicate = scan.predicate()
    for piece in slices:
        yield from slice_batches(piece, scan, columns, batch_rows, predicate, schema)
