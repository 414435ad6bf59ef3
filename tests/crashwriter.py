"""Child programs for the crash tests.

    python crashwriter.py write  <stream dir> <seed>   # store/remove until killed
    python crashwriter.py verify <stream dir> <ledger.json> <clean|abandon>

Every message's subject, headers and payload are a pure function of its sequence
(`expected_message`), so any reader can check a message without knowing how it got there.

`write` opens a FileStore with small blocks and runs a seeded mix of store_msg,
store_batch, remove_msg and erase_msg.  It prints one line per operation, flushed:

    I <seq>            about to remove / erase <seq> (intent: may or may not happen)
    S <first> <last>   stored [first, last] and the call returned (acknowledged)
    R <seq>            removed / erased <seq> and the call returned (acknowledged)

and never stops by itself: the parent SIGKILLs it.  `verify` reopens the store (the
recovery path under test), checks it against the ledger the parent kept, and prints
one JSON line: {"errors": [...], "state": {...}}.  It runs in its own process so that
a crash or a hang in recovery fails the test instead of taking the runner down.
"""

from __future__ import annotations

import json
import os
import random
import sys

import jsstore
from jsstore import StoreOptions, StreamConfig
from jsstore.errors import MsgNotFound, StoreError

STREAM = "CRASH"
BLOCK_SIZE = 64 * 1024
SUBJECTS = 13


def stream_config() -> StreamConfig:
    return StreamConfig(name=STREAM, subjects=["crash.>"])


def store_options() -> StoreOptions:
    # no background fsync thread: a crash test must not depend on when it runs
    return StoreOptions(block_size=BLOCK_SIZE, sync_interval=0)


def expected_message(seq: int) -> tuple[str, bytes | None, bytes]:
    """The (subject, headers, payload) every writer stores at `seq`."""
    subject = f"crash.{seq % SUBJECTS}"
    hdr = f"NATS/1.0\r\nSeq: {seq}\r\n\r\n".encode() if seq % 5 == 0 else None
    length = (seq * 7919) % 700
    unit = f"<{seq}>".encode()
    payload = (unit * (length // len(unit) + 1))[:length]
    return subject, hdr, payload


def open_store(directory: str):
    return jsstore.FileStore(directory, stream_config(), store_options())


def emit(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def run_writer(directory: str, seed: int) -> None:
    rng = random.Random(seed)
    fs = open_store(directory)
    # the weights of store_msg / store_batch / remove_msg / erase_msg vary with the seed
    weights = [rng.randint(4, 10), rng.randint(1, 4), rng.randint(0, 3), rng.randint(0, 1)]
    ops = ["store", "batch", "remove", "erase"]
    while True:
        op = rng.choices(ops, weights)[0]
        if op == "store":
            seq = fs.last_seq + 1
            subject, hdr, payload = expected_message(seq)
            got, _ts = fs.store_msg(subject, hdr, payload)
            if got != seq:
                raise SystemExit(f"store_msg returned seq {got}, expected {seq}")
            emit(f"S {seq} {seq}")
        elif op == "batch":
            first = fs.last_seq + 1
            count = rng.randint(2, 40)
            batch = [expected_message(seq) for seq in range(first, first + count)]
            got_first, got_last = fs.store_batch(batch)
            if (got_first, got_last) != (first, first + count - 1):
                raise SystemExit(f"store_batch returned {got_first}..{got_last}, expected {first}..")
            emit(f"S {first} {got_last}")
        else:
            if fs.msgs == 0:
                continue
            seq = rng.randint(fs.first_seq, fs.last_seq)
            emit(f"I {seq}")
            removed = fs.remove_msg(seq) if op == "remove" else fs.erase_msg(seq)
            if removed:
                emit(f"R {seq}")


def check_message(fs, seq: int) -> str | None:
    """None when `seq` holds exactly the expected message, else what is wrong."""
    try:
        sm = fs.load_msg(seq)
    except MsgNotFound:
        return f"seq {seq}: missing"
    subject, hdr, payload = expected_message(seq)
    if sm.seq != seq or sm.subject != subject or bytes(sm.msg) != payload or \
            (bytes(sm.hdr) if sm.hdr else None) != hdr:
        return f"seq {seq}: wrong content (subject {sm.subject!r}, seq {sm.seq})"
    return None


def run_verify(directory: str, ledger_path: str, mode: str) -> None:
    with open(ledger_path) as f:
        ledger = json.load(f)
    acked = ledger["acked"]              # [first, last] ranges, acknowledged stores
    removed = set(ledger["removed"])     # acknowledged removals
    maybe_removed = set(ledger["maybe_removed"])
    errors: list[str] = []
    fs = open_store(directory)
    acked_max = 0
    for first, last in acked:
        acked_max = max(acked_max, last)
        for seq in range(first, last + 1):
            if seq in removed:
                continue
            problem = check_message(fs, seq)
            if problem is not None and not (seq in maybe_removed and problem.endswith("missing")):
                errors.append(problem)
    for seq in sorted(removed):
        try:
            fs.load_msg(seq)
            errors.append(f"seq {seq}: removed but loadable")
        except MsgNotFound:
            pass
    st = fs.state()
    if st.last_seq < acked_max:
        errors.append(f"last_seq {st.last_seq} below the highest acknowledged {acked_max}")
    # whatever else is there (unacknowledged writes that made it) must be intact too
    live = 0
    seq = st.first_seq
    while True:
        try:
            sm, seq = fs.load_next_msg(">", seq)
        except StoreError:
            break
        problem = check_message(fs, seq)
        if problem is not None:
            errors.append("unacknowledged " + problem)
        live += 1
        seq += 1
    if live != st.messages:
        errors.append(f"state says {st.messages} messages, a walk finds {live}")
    if st.lost is not None:
        errors.append(f"lost data reported after a crash: {st.lost}")
    state = {"messages": st.messages, "first_seq": st.first_seq, "last_seq": st.last_seq,
             "num_deleted": st.num_deleted}
    if mode == "clean":
        fs.stop()
    # "abandon": exit without stop(), like a crash right after recovery
    emit(json.dumps({"errors": errors[:50], "state": state}))
    sys.stdout.flush()
    os._exit(0)


def main(argv: list[str]) -> None:
    if len(argv) >= 3 and argv[0] == "write":
        run_writer(argv[1], int(argv[2]))
    elif len(argv) >= 4 and argv[0] == "verify":
        run_verify(argv[1], argv[2], argv[3])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
