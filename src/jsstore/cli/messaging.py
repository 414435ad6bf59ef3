"""``jsstore pub|req|sub``: messages sent and received as ``nats pub``, ``nats req`` and
``nats sub`` do (in a store directory a message sent is a JetStream publish: a stream
capturing its subject stores it)."""

from __future__ import annotations

import sys

from jsstore.cli import output
from jsstore.cli.errors import UsageError
from jsstore.cli.values import duration_ns, publish_subject, subscribe_subject


def register(commands, parent) -> None:
    pub = commands.add_parser("pub", parents=[parent], help="publish a message")
    pub.add_argument("subject", type=publish_subject)
    pub.add_argument("body", nargs="?", help="the payload (default: read from stdin)")
    pub.add_argument("-H", "--header", action="append", default=[], metavar="K:V")
    pub.add_argument("--count", type=int, default=1, help="publish it this many times")
    pub.add_argument("-J", "--jetstream", action="store_true",
                     help="wait for the stream's acknowledgement and print it")
    pub.set_defaults(run=pub_run)
    req = commands.add_parser("req", aliases=["request"], parents=[parent],
                              help="send a request and print its answer")
    req.add_argument("subject", type=publish_subject)
    req.add_argument("body", nargs="?", help="the payload (default: read from stdin)")
    req.add_argument("-H", "--header", action="append", default=[], metavar="K:V")
    req.add_argument("--raw", action="store_true", help="only the answer's data")
    req.set_defaults(run=req_run)
    sub = commands.add_parser("sub", aliases=["subscribe"], parents=[parent],
                              help="print the messages on a subject (needs --server)")
    sub.add_argument("subject", type=subscribe_subject)
    sub.add_argument("--count", type=int, default=0, help="stop after this many (0: never)")
    sub.add_argument("--wait", default="0", metavar="DURATION",
                     help="stop after this long (10s, 1m; 0: never)")
    sub.add_argument("--raw", action="store_true", help="only the messages' data")
    sub.set_defaults(run=sub_run)


def headers_of(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, colon, value = pair.partition(":")
        if not colon or not key.strip():
            raise UsageError(f"--header {pair!r}: expected KEY:VALUE")
        out[key.strip()] = value.strip()
    return out


def body_of(args) -> bytes:
    if args.body is not None:
        return args.body.encode()
    return sys.stdin.buffer.read() if not sys.stdin.isatty() else b""


def pub_run(backend, args) -> int:
    body, headers = body_of(args), headers_of(args.header)
    for _ in range(max(args.count, 1)):
        if args.jetstream:
            answer = backend.request(args.subject, body, headers)
            ack = answer.json()
            if args.json:
                output.print_json(answer.data)
            else:
                print(f"Stored in Stream: {ack['stream']} Sequence: {ack['seq']}"
                      + (" (duplicate)" if ack.get("duplicate") else ""))
        else:
            backend.publish(args.subject, body, headers)
    if not args.jetstream and not args.json:
        times = f"{args.count} messages" if args.count > 1 else f"{len(body)} bytes"
        print(f'Published {times} to "{args.subject}"')
    return 0


def req_run(backend, args) -> int:
    answer = backend.request(args.subject, body_of(args), headers_of(args.header))
    if answer.status and answer.status != "200":
        raise UsageError(f"{answer.status} {answer.description}".strip())
    if not args.raw:
        for key, value in answer.headers.items():
            print(f"{key}: {value}")
        if answer.headers:
            print()
    print(answer.data.decode("utf-8", "replace"))
    return 0


def sub_run(backend, args) -> int:
    seen = [0]

    def each(msg) -> None:
        seen[0] += 1
        if args.raw:
            print(msg.data.decode("utf-8", "replace"), flush=True)
            return
        print(output.bold(f'[#{seen[0]}] Received on "{msg.subject}"'
                          + (f' with reply "{msg.reply}"' if msg.reply else "")))
        for key, value in msg.headers.items():
            print(f"{key}: {value}")
        print(msg.data.decode("utf-8", "replace"))
        print(flush=True)
    backend.subscribe(args.subject, args.count, duration_ns(args.wait, "--wait") / 1e9, each)
    return 0
