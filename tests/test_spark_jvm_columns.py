"""The JVM reader's record walk (jsstore.spark.BlockColumns, BlockSummary, SubjectMatch in
Java) gives exactly what the core's BlockColumns, summarize_block and SubjectPredicate give
for the same block bytes and the same filters.

Java runs through its test driver jsstore.spark.ColumnsInspect (tests/java), one JVM launch
per test for every case of that test (commands on stdin, one JSON answer a line).  No Spark session.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
import subprocess
from array import array

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jsstore
from jsstore import StoreOptions, StreamConfig
from jsstore._core.columns.arrowblock import (
    MAX_SEQ,
    BlockColumns,
    SubjectPredicate,
    summarize_block,
)
from jsstore.spark import jvmjar
from jvminspect import driver_classpath, java_binary
from jsstore.spark.arrow import STREAM_COLUMNS, arrow_schema, column_bits, record_batch
from jsstore.spark.planning import block_alg

pa = pytest.importorskip("pyarrow")

TIME_MIN = -(1 << 63)
TIME_MAX = (1 << 63) - 1
HEADERS = [
    b"NATS/1.0\r\nTag: x\r\nTag: 2\r\nOther: y\r\nTag: 3\r\n\r\n",      # repeated key
    b"NATS/1.0 503\r\n\r\n",                                           # status only
    b"NATS/1.0 404 No Messages\r\nNats-Expected: a\r\n\r\n",          # status + header
    b"NATS/1.0\r\nK:  \t v \t \r\nK2:\r\nK3:\t\t\r\n\r\n",             # blank-padded values
    b"NATS/1.0\nA: 1\nB: 2\nA: 3\n",                                   # lines without \r
    b"NATS/1.0",                                                       # bare version line
    b"NATS/1.0\r\nno colon here\r\n:novalue\r\nX:1:2\r\n\r\n",         # odd lines
    b"NATS/1.0\r\nUml\xc3\xa4ut: \xc3\xbc\xc3\x9f\r\n\r\n",            # UTF-8 key and value
    b"NATS/1.0\r\n" + b"".join(b"L%d: %d\r\n" % (i % 7, i) for i in range(300)) + b"\r\n",
    b"",                                                               # empty header block
]


# -- the driver ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def jar(tmp_path_factory):
    if shutil.which("javac") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no javac: the JVM reader needs a JDK")
    pytest.importorskip("pyspark")
    saved = os.environ.get("JSSTORE_JAR_CACHE")
    os.environ["JSSTORE_JAR_CACHE"] = str(tmp_path_factory.mktemp("jar"))
    try:
        try:
            jvmjar.javac()
        except jvmjar.JarBuildError as exc:
            pytest.skip(str(exc))
        return driver_classpath(jvmjar.jar_path(), str(tmp_path_factory.mktemp("drivers")))
    finally:
        if saved is None:
            del os.environ["JSSTORE_JAR_CACHE"]
        else:
            os.environ["JSSTORE_JAR_CACHE"] = saved


def inspect(classpath, commands):
    """Every command's answer, from one JVM launch."""
    done = subprocess.run([java_binary(), "-cp", classpath, "jsstore.spark.ColumnsInspect"],
                          input="".join(json.dumps(c) + "\n" for c in commands),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(answers) == len(commands)
    return answers


# -- the core's answers, in the driver's form ----------------------------------------------

def _hex_list(arr):
    return [None if v is None else v.hex() for v in arr.cast(pa.binary()).to_pylist()]


def _column_values(name, arr):
    if name in ("seq", "time_ns"):
        return arr.to_pylist()
    if name == "time":
        return arr.cast(pa.int64()).to_pylist()
    if name in ("subject", "data"):
        return _hex_list(arr)
    keys = _hex_list(arr.keys)                  # headers: bytes compared, no decoding
    lists = arr.items
    values = _hex_list(lists.values)
    list_offsets = lists.offsets.to_pylist()
    offsets = arr.offsets.to_pylist()
    out = []
    for row in range(len(arr)):
        if not arr[row].is_valid:
            out.append(None)
            continue
        entries = {}
        for e in range(offsets[row], offsets[row + 1]):
            entries[keys[e]] = values[list_offsets[e]:list_offsets[e + 1]]
        out.append(entries)
    return out


def core_read(data, cmd):
    columns = cmd["columns"]
    deleted = array("Q", cmd.get("deleted", []))
    walker = BlockColumns(data, column_bits(columns), cmd.get("seq_low", 0),
                          cmd.get("seq_high", MAX_SEQ), cmd.get("time_low", TIME_MIN),
                          cmd.get("time_high", TIME_MAX), deleted if len(deleted) else None,
                          SubjectPredicate(cmd.get("exact"), cmd.get("prefixes", ()),
                                           cmd.get("wildcards", ())))
    schema = arrow_schema(columns)
    rows, batches = [], []
    while (out := walker.next_batch(cmd["batch"])) is not None:
        count, buffers = out
        batches.append(count)
        batch = record_batch(columns, schema, count, buffers)
        values = [_column_values(name, batch.column(i)) for i, name in enumerate(columns)]
        rows.extend({name: values[i][r] for i, name in enumerate(columns)} for r in range(count))
        if count == 0:
            break
    return {"rows": rows, "batches": batches, "walked": walker.records_walked,
            "emitted": walker.rows_emitted}


def core_summary(data):
    out = summarize_block(data)
    out["subjects"] = sorted(out["subjects"])
    return out


def java_summary(answer):
    answer["subjects"] = sorted(answer["subjects"])
    return answer


def same_read(java, core):
    """Rows compared with header maps in order (a dict compares without order)."""
    assert java == core
    for jrow, crow in zip(java["rows"], core["rows"]):
        if jrow.get("headers") is not None:
            assert list(jrow["headers"].items()) == list(crow["headers"].items())


# -- a store with every kind of record -----------------------------------------------------

def block_files(directory):
    msgs = os.path.join(jsstore.stream_dir(directory, "S"), "msgs")
    return [os.path.join(msgs, n) for n in sorted(os.listdir(msgs), key=lambda n: (len(n), n))
            if n.endswith(".blk")]


@pytest.fixture(scope="module")
def store_blocks(tmp_path_factory):
    """Block paths of an uncompressed FileStore: headers of every shape, deletes, tombstones
    in later blocks, erased messages and skips, several blocks."""
    directory = str(tmp_path_factory.mktemp("store"))
    rng = random.Random(7)
    fs = jsstore.FileStore(jsstore.stream_dir(directory, "S"),
                           StreamConfig(name="S", subjects=[">"]),
                           StoreOptions(sync_interval=0, block_size=8192))
    subjects = ["a.1", "a.2", "a.b.c", "b.x", "b.y.z", "\u00fc.t", "a.10", "c"]
    for i in range(700):
        hdr = HEADERS[i % len(HEADERS)] if i % 3 else None
        fs.store_msg(subjects[rng.randrange(len(subjects))], hdr, os.urandom(rng.randrange(60)))
    for seq in (3, 40, 41, 150, 333, 600):
        fs.remove_msg(seq)
    for seq in (5, 77, 420, 699):
        fs.erase_msg(seq)
    fs.skip_msgs(701, 4)
    fs.store_msg("a.1", HEADERS[0], b"after the skips")
    fs.stop()
    paths = block_files(directory)
    assert len(paths) >= 4
    for path in paths:
        with open(path, "rb") as f:
            assert block_alg(f.read()) == 0     # plain: the driver reads the file as is
    return paths


def read_cases(path, data):
    """Column subsets x filters x batch sizes for one block."""
    info = summarize_block(data)
    seqs = [row["seq"] for row in core_read(data, {"columns": ["seq"], "batch": 1 << 20})["rows"]]
    times = sorted(core_read(data, {"columns": ["time_ns"], "batch": 1 << 20}) ["rows"],
                   key=lambda r: r["time_ns"])
    rng = random.Random(path)
    column_sets = [list(STREAM_COLUMNS), ["seq"], ["subject"], ["time"], ["time_ns"],
                   ["headers"], ["data"], ["data", "seq"], ["headers", "subject", "time"],
                   ["seq", "subject"], list(reversed(STREAM_COLUMNS))]
    mid_ts = times[len(times) // 2]["time_ns"] if times else 0
    filters = [
        {},
        {"seq_low": info["first_seq"] + 3, "seq_high": info["last_seq"] - 5},
        {"seq_low": info["last_seq"] - 2},
        {"seq_high": info["first_seq"]},
        {"time_low": mid_ts},
        {"time_high": mid_ts},
        {"time_low": mid_ts, "time_high": mid_ts},
        {"deleted": sorted(rng.sample(seqs, min(len(seqs), 9)) + [info["max_seq"] + 10])},
        {"deleted": seqs},
        {"exact": ["a.1", "b.y.z", "\u00fc.t", "nope", ""]},
        {"exact": []},
        {"prefixes": ["a."]},
        {"prefixes": ["a.1", "a."]},
        {"prefixes": [""]},
        {"wildcards": ["a.*", "b.>"]},
        {"wildcards": ["*.*.*"]},
        {"wildcards": [">"], "prefixes": ["b"]},
        {"exact": ["a.1", "a.2", "c"], "wildcards": ["a.*"]},
        {"exact": ["a.10", "a.b.c"], "prefixes": ["a.1"], "seq_low": info["first_seq"] + 1,
         "deleted": seqs[::4]},
    ]
    cases = []
    for n, columns in enumerate(column_sets):
        for batch in (1, 7, 4096):
            cases.append({"columns": columns, "batch": batch, **filters[n % len(filters)]})
    for n, extra in enumerate(filters):
        cases.append({"columns": list(STREAM_COLUMNS), "batch": (1, 7, 4096)[n % 3], **extra})
        cases.append({"columns": ["seq", "headers"], "batch": 7, **extra})
    return [{"op": "read", "path": path, **case} for case in cases]


def test_read_matches_the_core(jar, store_blocks):
    commands, expected = [], []
    for path in store_blocks:
        with open(path, "rb") as f:
            data = f.read()
        for cmd in read_cases(path, data):
            commands.append(cmd)
            expected.append(core_read(data, cmd))
    answers = inspect(jar, commands)
    total = 0
    for cmd, java, core in zip(commands, answers, expected):
        same_read(java, core)
        total += len(core["rows"])
    assert total > 10_000                       # the cases do read rows
    assert any(r.get("headers") == {} for a in answers for r in a["rows"])
    assert any(r.get("headers") is None for a in answers for r in a["rows"])


def test_summary_matches_the_core(jar, store_blocks):
    answers = inspect(jar, [{"op": "summary", "path": p} for p in store_blocks])
    tombstones = []
    for path, answer in zip(store_blocks, answers):
        with open(path, "rb") as f:
            assert java_summary(answer) == core_summary(f.read())
        tombstones += answer["tombstones"]
    assert tombstones                           # removals in earlier blocks left tombstones


# -- subject clauses -----------------------------------------------------------------------

TOKENS = st.sampled_from(["a", "b", "ab", "*", ">", "", "\u00fc", "a*", ">b", "abcdefghijk",
                          "abcdefghijkl"])
SUBJECTS = st.lists(TOKENS, min_size=1, max_size=4).map(".".join)


def test_match_matches_the_core(jar):
    cases = []

    @settings(max_examples=400, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(subjects=st.lists(SUBJECTS, min_size=1, max_size=12),
           exact=st.none() | st.lists(SUBJECTS, max_size=4),
           prefixes=st.lists(st.sampled_from(["", "a", "a.", "ab", "\u00fc", "b.*"]), max_size=2),
           wildcards=st.lists(SUBJECTS, max_size=3), data=st.data())
    def collect(subjects, exact, prefixes, wildcards, data):
        if exact is not None and subjects and data.draw(st.booleans()):
            exact = exact + [subjects[0]]
        cases.append({"op": "match", "exact": exact, "prefixes": prefixes,
                      "wildcards": wildcards, "subjects": subjects + subjects[:3]})

    collect()
    answers = inspect(jar, cases)
    for cmd, answer in zip(cases, answers):
        predicate = SubjectPredicate(cmd["exact"], cmd["prefixes"], cmd["wildcards"])
        assert answer["accepts"] == [predicate.accepts(s) for s in cmd["subjects"]], cmd
    assert any(any(a["accepts"]) for a in answers) and any(
        not all(a["accepts"]) for a in answers)


# -- hand-made blocks: odd records, torn and padded tails -----------------------------------

def record(seq, ts, subject, hdr, payload, flags=0):
    body = struct.pack("<QqH", seq | flags, ts, len(subject)) + subject
    if hdr is not None:
        body += struct.pack("<I", len(hdr)) + hdr
    body += payload
    length = 4 + len(body) + 8
    return struct.pack("<I", length | (0x80000000 if hdr is not None else 0)) + body + b"\0" * 8


RECORDS = st.lists(st.tuples(
    st.integers(0, 40),                                     # sequence step
    st.integers(-3_000_000, 3_000_000),                     # ts around the epoch (ns)
    st.sampled_from([b"", b"a.1", b"a.2", b"b.c", b"\xc3\xbc.x"]) | st.binary(max_size=9),
    st.none() | st.sampled_from(HEADERS[:8]),
    st.binary(max_size=20),
    st.sampled_from([0, 0, 0, 1 << 63, 1 << 62])), max_size=25)
DAMAGE = st.one_of(
    st.tuples(st.just("none"), st.just(0), st.just(b"")),
    st.tuples(st.just("truncate"), st.integers(1, 200), st.just(b"")),
    st.tuples(st.just("append"), st.just(0), st.binary(max_size=64)),
    st.tuples(st.just("zeros"), st.integers(1, 100), st.just(b"")),
    st.tuples(st.just("length"), st.integers(0, 24), st.binary(min_size=4, max_size=4)),
)


def damaged_block(records, damage):
    seq = 0
    out = bytearray()
    starts = []
    for step, ts, subject, hdr, payload, flags in records:
        seq += step
        starts.append(len(out))
        out += record(seq, ts, subject, hdr, payload, flags)
    kind, n, raw = damage
    if kind == "truncate":
        del out[max(0, len(out) - n):]
    elif kind == "append":
        out += raw
    elif kind == "zeros":
        out += bytes(n)
    elif kind == "length" and starts:
        at = starts[n % len(starts)]
        out[at:at + 4] = raw                                # a record length gone bad
    return bytes(out)


ODD_SUBJECTS = [b"\xed\xa0\x80", b"\xe0\x80\x80", b"\xf4\x90\x80\x80", b"\xf0\x8f\xbf\xbf",
                b"\xc0\xaf", b"a.\xe2\x82", b"a\xffb", b"\xf0\x9f\x98\x80", b"\xc3\xbc",
                b"\xed\x9f\xbf", b"\xee\x80\x80", b"\xf4\x8f\xbf\xbf", b"\xe2\x82\xac\xe2",
                b"\x80\xbf", b"\xf8\x88\x80\x80\x80", b"\xc3", b"\xf5\x80\x80\x80"]


def test_summary_decodes_subjects_as_python_does(jar, tmp_path):
    """Subjects that are not valid UTF-8 come back with Python's surrogateescape."""
    path = tmp_path / "odd.blk"
    path.write_bytes(b"".join(record(i + 1, i, subject, None, b"x")
                              for i, subject in enumerate(ODD_SUBJECTS)))
    (answer,) = inspect(jar, [{"op": "summary", "path": str(path)}])
    assert java_summary(answer) == core_summary(path.read_bytes())
    assert len(answer["subjects"]) == len(ODD_SUBJECTS)


def test_walk_stops_where_the_core_stops(jar, tmp_path):
    blocks = []

    @settings(max_examples=200, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(records=RECORDS, damage=DAMAGE, batch=st.sampled_from([1, 3, 4096]),
           seq_low=st.integers(0, 100), seq_span=st.integers(0, 1000),
           time_low=st.integers(-4_000_000, 0), time_high=st.integers(0, 4_000_000),
           wildcards=st.sampled_from([[], ["a.*"], [">"]]))
    def collect(records, damage, batch, seq_low, seq_span, time_low, time_high, wildcards):
        blocks.append((damaged_block(records, damage),
                       {"columns": list(STREAM_COLUMNS), "batch": batch, "seq_low": seq_low,
                        "seq_high": seq_low + seq_span, "time_low": time_low,
                        "time_high": time_high, "wildcards": wildcards}))

    collect()
    commands, expected = [], []
    for n, (data, filters) in enumerate(blocks):
        path = str(tmp_path / f"{n}.blk")
        with open(path, "wb") as f:
            f.write(data)
        full = {"columns": list(STREAM_COLUMNS), "batch": 5}
        for cmd in (full, filters):
            commands.append({"op": "read", "path": path, **cmd})
            expected.append(core_read(data, cmd))
        commands.append({"op": "summary", "path": path})
        expected.append(core_summary(data))
    answers = inspect(jar, commands)
    for cmd, java, core in zip(commands, answers, expected):
        if cmd["op"] == "summary":
            assert java_summary(java) == core, cmd["path"]
        else:
            same_read(java, core)
    assert any(a.get("rows") for a in answers)


def test_read_scratch_is_kept_per_thread_within_its_limit(jar):
    [answer] = inspect(jar, [{"op": "scratch"}])
    assert answer == {
        "another_while_held": True,
        "the_same_after_give_back": True,
        "its_vectors_kept": True,
        "its_buffer_kept": True,
        "a_buffer_grows": True,
        "new_vectors_for_other_columns": True,
        "large_vectors_dropped": True,
        "the_other_kept_when_free": True,
    }
