"""Reading planned block slices of a store directory into Arrow record batches (executors).

Each slice's file is read whole (and decompressed when it is s2 or lz4 compressed), then
the core walks its records, checking each one's hash, and builds the requested columns of
the rows that pass the scan filter, `batch_rows` rows at a time.  A block removed since
planning (limits, compaction) reads as empty: the store no longer holds those messages.

When the walk is done it accounts for the slice (see jsstore.spark.planning): sequences it
should have given and could not (damaged stretches, a block that ends early, one that does
not decompress, or one missing sequences a current index.db lists) fail the task with
DataLoss naming them, unless the read was asked to go on (fail_on_data_loss=false).
"""

from __future__ import annotations

from array import array

import pyarrow as pa

from jsstore._core.columns.arrowblock import COLUMNS, BlockColumns
from jsstore.errors import BadMsg
from jsstore.spark.arrow import arrow_schema, column_bits, record_batch
from jsstore.spark.planning import BlockSlice, DataLoss, Loss, missing_between, read_plain_block
from jsstore.spark.scan import ScanFilter


def slice_batches(piece: BlockSlice, scan: ScanFilter, columns, batch_rows: int,
                  predicate=None, schema: pa.Schema | None = None, fail_on_data_loss: bool = True):
    """Record batches of the stream columns named, from one block slice."""
    schema = schema if schema is not None else arrow_schema(columns)
    try:
        data = read_plain_block(piece.path)
    except FileNotFoundError:
        return
    except BadMsg as exc:
        _lost(piece, Loss(piece.path, f"the block does not decompress ({exc})",
                          missing_between(piece.seq_low, piece.seq_high, _deleted(piece))),
              fail_on_data_loss)
        return
    walker = BlockColumns(data, column_bits(columns), piece.seq_low, piece.seq_high,
                          scan.time_low, scan.time_high, piece.deleted or None,
                          predicate if predicate is not None else scan.predicate(),
                          piece.hash_key or None)
    while True:
        out = walker.next_batch(batch_rows)
        if out is None:
            break
        rows, buffers = out
        if rows:
            yield record_batch(columns, schema, rows, buffers)
    loss = slice_loss(piece, data, walker)
    if loss is not None:
        _lost(piece, loss, fail_on_data_loss)


def _deleted(piece: BlockSlice) -> set[int]:
    return set(array("Q", piece.deleted)) if piece.deleted else set()


def _lost(piece: BlockSlice, loss: Loss, fail: bool) -> None:
    if fail and loss.seqs:
        raise DataLoss(loss.text())


def slice_loss(piece: BlockSlice, data, walker: BlockColumns) -> Loss | None:
    """What the walk of a slice could not give, or None: the sequences of its damaged
    stretches, those after the block's early end, and, for a slice index.db describes,
    any it lists that the block does not hold."""
    short = not walker.passed_high and walker.last_seq < piece.seq_high
    expected = piece.seq_high - piece.seq_low + 1 - len(piece.deleted) // 8
    if not walker.holes and not short and not (piece.complete and walker.accounted < expected):
        return None
    deleted = _deleted(piece)
    present = _present(piece, data)
    wanted: set[int] = set()
    for _offset, first, last in walker.holes:
        wanted.update(range(max(first, piece.seq_low), min(last or piece.seq_high, piece.seq_high) + 1))
    if short:
        wanted.update(range(max(walker.last_seq + 1, piece.seq_low), piece.seq_high + 1))
    if piece.complete:
        wanted.update(range(piece.seq_low, piece.seq_high + 1))
    missing = sorted(seq for seq in wanted if seq not in deleted and seq not in present)
    if not missing:
        return None
    if walker.holes:
        offset = walker.holes[0][0]
        problem = f"damaged at byte offset {offset} of {len(data)} (not a record, or a record whose checksum is wrong)"
    elif short:
        problem = (f"the block ends after sequence {walker.last_seq} (byte {walker.position} of "
                   f"{len(data)}) where its known range goes to {piece.seq_high}")
    else:
        problem = "index.db lists sequences this block does not hold"
    return Loss(piece.path, problem, missing)


def _present(piece: BlockSlice, data) -> set[int]:
    """The sequences of the intact message records of a slice (a second walk, only when
    something is missing)."""
    walker = BlockColumns(data, COLUMNS["seq"], piece.seq_low, piece.seq_high,
                          hash_key=piece.hash_key or None)
    out: set[int] = set()
    while True:
        batch = walker.next_batch(1 << 16)
        if batch is None:
            return out
        rows, buffers = batch
        out.update(array("q", bytes(buffers[0]))[:rows])


def partition_batches(slices, scan: ScanFilter, columns, batch_rows: int,
                      fail_on_data_loss: bool = True):
    """Record batches of every slice of a partition, in sequence order."""
    schema = arrow_schema(columns)
    predicate = scan.predicate()
    for piece in slices:
        yield from slice_batches(piece, scan, columns, batch_rows, predicate, schema,
                                 fail_on_data_loss)
