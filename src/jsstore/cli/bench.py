"""``jsstore bench SUBJECT``: a JetStream publish then consume benchmark, in process or
against a server, printing ``nats bench``'s summary lines (``Pub stats: N msgs/sec ~ X
MB/sec``).  Messages are published one PubAck at a time into the stream capturing SUBJECT
(``--stream``, created when missing) and read back by a pull consumer in batches."""

from __future__ import annotations

import sys
import time

from jsstore.cli import output
from jsstore.cli.errors import ApiError, CliError, UsageError
from jsstore.cli.wireapi import call

CONSUMER = "jsstore-bench"


def register(commands, parent) -> None:
    bench = commands.add_parser("bench", parents=[parent],
                                help="publish and consume benchmark (nats bench's summary)")
    bench.add_argument("subject")
    bench.add_argument("--msgs", type=int, default=100_000, help="messages to publish")
    bench.add_argument("--size", type=int, default=128, help="bytes per message")
    bench.add_argument("--stream", default="benchstream", help="the stream (made if missing)")
    bench.add_argument("--storage", choices=["file", "memory"], default="file")
    bench.add_argument("--batch", type=int, default=500, help="messages per pull request")
    bench.add_argument("--no-consume", dest="consume", action="store_false",
                       help="only publish")
    bench.set_defaults(run=bench_run)


def rate(count: int, size: int, seconds: float) -> str:
    seconds = max(seconds, 1e-9)
    return (f"{output.count(int(count / seconds))} msgs/sec ~ "
            f"{count * size / seconds / 1024 / 1024:.2f} MB/sec")


def ensure_stream(backend, args) -> None:
    try:
        call(backend, f"STREAM.INFO.{args.stream}")
    except ApiError as exc:
        if exc.err_code != 10059:       # stream not found
            raise
        call(backend, f"STREAM.CREATE.{args.stream}",
             {"name": args.stream, "subjects": [args.subject], "storage": args.storage})


def bench_run(backend, args) -> int:
    if args.msgs < 1 or args.size < 0 or args.batch < 1:
        raise UsageError("--msgs and --batch must be at least 1, --size at least 0")
    ensure_stream(backend, args)
    payload = b"x" * args.size
    print(f"Starting JetStream benchmark [subject={args.subject}, stream={args.stream}, "
          f"msgs={output.count(args.msgs)}, msgsize={output.size(args.size)}, "
          f"storage={args.storage}]")
    shown = output.on_terminal(sys.stderr)
    start = time.perf_counter()
    for n in range(args.msgs):
        ack = backend.request(args.subject, payload).json()
        if "stream" not in ack:
            raise CliError(f"publish {n + 1}: no PubAck: {ack}")
        if shown and n % 1000 == 0:
            sys.stderr.write(f"\rpublished {output.count(n)}")
    published = time.perf_counter() - start
    if shown:
        sys.stderr.write("\r" + " " * 30 + "\r")
    print(f"Pub stats: {rate(args.msgs, args.size, published)}")
    if not args.consume:
        return 0
    call(backend, f"CONSUMER.CREATE.{args.stream}.{CONSUMER}",
         {"stream_name": args.stream, "config": {"durable_name": CONSUMER, "ack_policy": "none",
                                                 "deliver_policy": "all",
                                                 "filter_subject": args.subject}})
    try:
        received = 0
        start = time.perf_counter()
        while received < args.msgs:
            got = backend.fetch(args.stream, CONSUMER, min(args.batch, args.msgs - received),
                                args.timeout)
            if not got:
                raise CliError(f"consumed {received} of {args.msgs} messages, then nothing")
            received += len(got)
        consumed = time.perf_counter() - start
    finally:
        call(backend, f"CONSUMER.DELETE.{args.stream}.{CONSUMER}")
    print(f"Sub stats: {rate(received, args.size, consumed)}")
    return 0
