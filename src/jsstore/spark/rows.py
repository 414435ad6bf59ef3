"""The rows a DataFrame writes into a stream: the input columns, their checks, and each
row as (subject, payload, headers).

Input columns: `subject` STRING and `data` BINARY (or STRING, written as UTF-8) are
required; `headers` MAP<STRING, ARRAY<STRING>> (or MAP<STRING, STRING>) is optional.  The
other columns a stream read gives (seq, time, ...) are allowed and not written, so a
DataFrame read from a stream can be written back; any other column is refused, since a
misspelled `headers` would otherwise be dropped without a word.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    MapType,
    StringType,
    StructType,
)

from jsstore.spark.arrow import STREAM_COLUMNS
from jsstore.spark.options import OptionError

WRITE_COLUMNS = ("subject", "data", "headers")
# what a publish subject can not hold: nothing, whitespace or a control character (the
# protocol line would split), an empty token
BAD_SUBJECT = r"^$|[\s\x00-\x1f\x7f]|^\.|\.$|\.\."


def check_input(schema: StructType) -> list[str]:
    """The columns to write, in WRITE_COLUMNS order; OptionError naming the problem for a
    missing, mistyped or unknown column."""
    fields = {f.name: f.dataType for f in schema.fields}
    for required in ("subject", "data"):
        if required not in fields:
            raise OptionError(f"writing needs a {required!r} column; the DataFrame has "
                              f"{list(fields)}")
    unknown = [n for n in fields if n not in WRITE_COLUMNS and n not in STREAM_COLUMNS]
    if unknown:
        raise OptionError(f"unknown column(s) {unknown}: a write takes {list(WRITE_COLUMNS)} "
                          f"(and ignores the other columns of a stream read, "
                          f"{[c for c in STREAM_COLUMNS if c not in WRITE_COLUMNS]})")
    if not isinstance(fields["subject"], StringType):
        raise OptionError(f"column 'subject' must be STRING, not {fields['subject'].simpleString()}")
    if not isinstance(fields["data"], (BinaryType, StringType)):
        raise OptionError(f"column 'data' must be BINARY or STRING, not "
                          f"{fields['data'].simpleString()}")
    headers = fields.get("headers")
    if headers is not None and not (
            isinstance(headers, MapType) and isinstance(headers.keyType, StringType)
            and (isinstance(headers.valueType, StringType)
                 or (isinstance(headers.valueType, ArrayType)
                     and isinstance(headers.valueType.elementType, StringType)))):
        raise OptionError(f"column 'headers' must be MAP<STRING, ARRAY<STRING>> or "
                          f"MAP<STRING, STRING>, not {headers.simpleString()}")
    return [n for n in WRITE_COLUMNS if n in fields]


def check_batch(batch: pa.RecordBatch, first_row: int = 0) -> None:
    """OptionError naming the row (counted in the task's rows from `first_row`) with a null
    or unusable subject or a null data cell."""
    subjects = batch.column("subject")
    if subjects.null_count:
        row = first_row + pc.index(pc.is_null(subjects), True).as_py()
        raise OptionError(f"row {row} of the task has a null subject")
    bad = pc.match_substring_regex(subjects, BAD_SUBJECT)
    if pc.any(bad).as_py():
        index = pc.index(bad, True).as_py()
        raise OptionError(f"row {first_row + index} of the task has subject "
                          f"{subjects[index].as_py()!r}, which is not a subject to publish to")
    data = batch.column("data")
    if data.null_count:
        row = first_row + pc.index(pc.is_null(data), True).as_py()
        raise OptionError(f"row {row} of the task has null data (write b'' for an empty "
                          f"message)")


def _headers_dict(value):
    """A headers cell (list of (key, value or values) pairs from Arrow) as a dict."""
    if not value:
        return None
    out: dict[str, list[str]] = {}
    for key, item in value:
        if item is None:
            continue
        values = item if isinstance(item, list) else [item]
        out.setdefault(key, []).extend(v for v in values if v is not None)
    return out or None


def batch_rows(batch: pa.RecordBatch):
    """(subject, payload bytes, headers dict or None) for every row of a batch."""
    subjects = batch.column("subject").to_pylist()
    data = batch.column("data")
    payloads = data.to_pylist()
    if pa.types.is_string(data.type) or pa.types.is_large_string(data.type):
        payloads = [p.encode() if p is not None else b"" for p in payloads]
    else:
        payloads = [p if p is not None else b"" for p in payloads]
    column = batch.column("headers") if "headers" in batch.schema.names else None
    if column is not None and column.null_count < len(column):
        headers = [_headers_dict(h) for h in column.to_pylist()]
    else:
        headers = [None] * len(subjects)
    return zip(subjects, payloads, headers)
