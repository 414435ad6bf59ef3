"""KV buckets as tables: `option("kv", bucket)` reads stream KV_<bucket> as

    key STRING, value BINARY, revision BIGINT, created TIMESTAMP, operation STRING

with the latest revision of every key, keys whose latest revision is a delete or purge
marker left out.  With `option("kv_history", "true")` every stored revision is a row,
markers included (operation PUT, DEL or PURGE, from the KV-Operation header).

Planning uses the per-subject state: every key is looked up in the block that holds its
last message (index.db's last-block hint, or the last block whose subjects include it), so
a key is read from one block only.  Should that block no longer hold a live message of the
key (the hint was stale, or the message was removed), the task walks back through the
earlier blocks until it finds one.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from jsstore._core.columns.arrowblock import SubjectPredicate
from jsstore.spark.arrow import arrow_schema
from jsstore.spark.directory import slice_batches
from jsstore.spark.options import KV_SUBJECT_PREFIX
from jsstore.spark.planning import BlockSlice, load_stream_blocks, plan_slices
from jsstore.spark.scan import ScanFilter

OPERATION_HEADER = "KV-Operation"
PUT = "PUT"
MARKERS = ("DEL", "PURGE")
READ_COLUMNS = ("seq", "subject", "time", "headers", "data")


class KvWork:
    """One task of a KV read: keys to find, each starting at one slice of `slices`."""

    def __init__(self, slices: list[BlockSlice], targets: list[tuple[int, list[str]]] | None):
        self.slices = slices       # every live block of the bucket, in sequence order
        self.targets = targets     # (position in slices, subjects); None = history read


def plan_kv(directory: str, stream_name: str, scan: ScanFilter, history: bool,
            target_bytes: int, fail_on_data_loss: bool = True) -> list[KvWork]:
    stream = load_stream_blocks(directory, stream_name)
    stream.check_losses(scan, fail_on_data_loss)
    if history:
        slices = plan_slices(stream, scan)
        work, current, size = [], [], 0
        for piece in slices:
            if current and size + piece.size > target_bytes:
                work.append(KvWork(current, None))
                current, size = [], 0
            current.append(piece)
            size += piece.size
        if current:
            work.append(KvWork(current, None))
        return work
    everything = ScanFilter(seq_low=scan.seq_low, seq_high=scan.seq_high)
    slices = plan_slices(stream, everything)
    position = {piece.index: i for i, piece in enumerate(slices)}
    predicate = scan.predicate()
    last_block: dict[str, int] = {}
    if stream.subject_blocks is not None:
        for subject, (_total, _first, last) in stream.subject_blocks.items():
            last_block[subject] = last
    else:
        for block in stream.blocks:
            for subject in block.subjects or ():
                last_block[subject] = block.index
    by_position: dict[int, list[str]] = {}
    for subject, index in last_block.items():
        if not predicate.accepts(subject):
            continue
        pos = position.get(index)
        if pos is None:          # the hint names a block with nothing live: look below it
            pos = max((i for i, piece in enumerate(slices) if piece.index < index), default=None)
        if pos is not None:
            by_position.setdefault(pos, []).append(subject)
    work, current, size = [], [], 0
    for pos in sorted(by_position):
        if current and size + slices[pos].size > target_bytes:
            work.append(KvWork(slices, current))
            current, size = [], 0
        current.append((pos, sorted(by_position[pos])))
        size += slices[pos].size
    if current:
        work.append(KvWork(slices, current))
    return work


def _operations(headers: pa.Array) -> pa.Array:
    found = pc.map_lookup(headers, OPERATION_HEADER, "first")   # a key present has a value
    return pc.fill_null(pc.list_element(found, 0), PUT)


def _latest_rows(table: pa.Table) -> pa.Table:
    """The row with the highest seq of every subject."""
    if table.num_rows == 0:
        return table
    last = table.group_by("subject").aggregate([("seq", "max")])
    return table.filter(pc.is_in(table["seq"], value_set=last["seq_max"]))


def _kv_batch(table: pa.Table, prefix_len: int, columns, keep_markers: bool) -> pa.RecordBatch:
    operation = _operations(table["headers"].combine_chunks()) if table.num_rows else pa.array([], pa.string())
    values = {
        "key": pc.utf8_slice_codeunits(table["subject"], prefix_len),
        "value": table["data"],
        "revision": table["seq"],
        "created": table["time"],
        "operation": operation,
    }
    out = pa.table({name: values[name] for name in columns}, schema=arrow_schema(columns))
    if not keep_markers and out.num_rows:
        out = out.filter(pc.invert(pc.is_in(operation, value_set=pa.array(MARKERS))))
    return out.combine_chunks().to_batches()[0] if out.num_rows else None


def _read_table(piece: BlockSlice, scan: ScanFilter, predicate, options) -> pa.Table:
    schema = arrow_schema(READ_COLUMNS)
    batches = list(slice_batches(piece, scan, READ_COLUMNS, options.batch_rows, predicate, schema,
                                 options.fail_on_data_loss))
    return pa.Table.from_batches(batches, schema=schema)


def kv_batches(work: KvWork, scan: ScanFilter, columns, options):
    prefix_len = len(KV_SUBJECT_PREFIX + options.kv + ".")
    if work.targets is None:
        for piece in work.slices:
            table = _read_table(piece, scan, scan.predicate(), options)
            if table.num_rows:
                batch = _kv_batch(table, prefix_len, columns, True)
                if batch is not None:
                    yield batch
        return
    everything = ScanFilter(seq_low=scan.seq_low, seq_high=scan.seq_high)
    for pos, subjects in work.targets:
        found = []
        missing = set(subjects)
        while missing and pos >= 0:
            predicate = SubjectPredicate(exact=sorted(missing))
            table = _latest_rows(_read_table(work.slices[pos], everything, predicate, options))
            if table.num_rows:
                found.append(table)
                missing -= set(table["subject"].to_pylist())
            pos -= 1
        if found:
            batch = _kv_batch(pa.concat_tables(found), prefix_len, columns, False)
            if batch is not None:
                yield batch
