"""``jsstore verify --store DIR``: every file stream of every account checked read-only
(jsstore.store.check): the stream recovered in memory by the store's own recovery (what a
reopen computes), every block record verified, index.db against the blocks, the TTL and
schedule state, consumers' o.dat.  Prints each stream's state as a reopen finds it, or each
damaged file with what is lost; the exit status is 1 when anything is damaged or lost."""

from __future__ import annotations

import os

from jsstore.cli import output
from jsstore.cli.errors import CliError
from jsstore.jetstream.recovery import stream_directories
from jsstore.store.check import check_stream
from jsstore.store.files import lock_holder
from jsstore.stream.config import to_store_config
from jsstore.stream.schedules import ScheduleTable

# nats-server's schedule state (jsstore finds its schedules again in the stored schedule
# messages and writes none)
SCHEDULE_STATE = {"sched.db": (ScheduleTable.decode, "the stored schedule messages")}


def register(commands, parent) -> None:
    verify = commands.add_parser(
        "verify", help="check a store directory's files",
        description="Check every file stream of a store directory without changing it: "
                    "each stream is recovered in memory as a reopen recovers it, every "
                    "record of every block is verified, and index.db, thw.db, sched.db "
                    "and each consumer's o.dat are checked against the blocks. A healthy "
                    "stream prints the state a reopen finds (messages, sequences); a "
                    "damaged file prints what is wrong and what is lost. Exit status 1 "
                    "when any file is damaged, stale or wrong. A store a jsstore process "
                    "has open is refused; stop a nats-server serving it first (it leaves "
                    "no sign a check could see).")
    verify.add_argument("--store", required=True, metavar="DIR")
    verify.add_argument("-j", "--json", action="store_true", help="the findings as JSON")
    verify.add_argument("--trace", action="store_true", help="show tracebacks of failures")
    verify.set_defaults(run=verify_run, local_only=True)


def accounts(store: str) -> list[str]:
    root = os.path.join(store, "jetstream")
    if not os.path.isdir(root):
        raise CliError(f"{store}: not a store directory (no jetstream folder)")
    return sorted(n for n in os.listdir(root) if os.path.isdir(os.path.join(root, n, "streams")))


def ranges(pairs: list[tuple[int, int]]) -> str:
    return ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in pairs)


def verify_run(args) -> int:
    report, bad = [], False
    for account in accounts(args.store):
        for found in stream_directories(args.store, account):
            if found.reason:
                report.append({"account": account, "stream": found.name, "messages": 0,
                               "notes": [],
                               "findings": [{"path": os.path.relpath(found.directory, args.store),
                                             "problem": found.reason,
                                             "lost_bytes": 0, "lost_seqs": [],
                                             "lost_unknown": False}]})
                bad = True
                continue
            holder = lock_holder(found.directory)
            if holder:
                # its files change while they are read: what looks torn may be a write
                raise CliError(f"{os.path.relpath(found.directory, args.store)} is in use by "
                               f"{holder}: verify a store no process has open (stop it, or "
                               "verify a copy)")
            result = check_stream(found.name, found.directory, to_store_config(found.config),
                                  SCHEDULE_STATE)
            bad = bad or bool(result.findings)
            report.append({"account": account, "stream": found.name,
                           "messages": result.messages, "bytes": result.bytes,
                           "first_seq": result.first_seq, "last_seq": result.last_seq,
                           "notes": [{"path": os.path.relpath(path, args.store), "note": note}
                                     for path, note in result.notes],
                           "findings": [{"path": os.path.relpath(f.path, args.store),
                                         "problem": f.problem, "lost_bytes": f.lost_bytes,
                                         "lost_seqs": [list(r) for r in f.lost_seqs],
                                         "lost_unknown": f.lost_unknown}
                                        for f in result.findings]})
    if args.json:
        output.print_json({"ok": not bad, "streams": report})
        return 1 if bad else 0
    for stream in report:
        where = f"{stream['account']} > {stream['stream']}"
        if not stream["findings"]:
            span = (f"first sequence {stream['first_seq']}, last {stream['last_seq']}"
                    if stream["messages"]
                    else f"last sequence {stream['last_seq']}")
            print(f"OK       {where}: {output.count(stream['messages'])} messages ({span})")
            for note in stream["notes"]:
                print(f"  note: {note['path']}: {note['note']}")
            continue
        print(output.bold(f"DAMAGED  {where}"))
        for f in stream["findings"]:
            print(f"  {f['path']}: {f['problem']}")
            lost = []
            if f["lost_seqs"]:
                lost.append(f"messages {ranges([tuple(r) for r in f['lost_seqs']])}")
            if f["lost_unknown"]:
                lost.append("data whose sequences cannot be known")
            if f["lost_bytes"]:
                lost.append(f"{output.count(f['lost_bytes'])} bytes")
            print(f"    lost: {', '.join(lost) if lost else 'nothing'}")
    if not report:
        print("No streams in this store directory")
    print("damaged" if bad else "ok")
    return 1 if bad else 0
