"""The nats CLI's verbs of the ``jsstore`` command (everything but ``serve`` and
``export``): one argparse parser over the verb families (streams, consumers, messaging, kv,
objects, backup, verify, bench), run on a store directory or against a server.
``jsstore.cli.main`` imports this module only when a verb (or ``--help``) runs."""

from __future__ import annotations

from jsstore.cli import backup, bench, consumers, kv, messaging, objects, streams, verify
from jsstore.cli.connection import Parser, connection_options, open_backend
from jsstore.cli.main import version_line

FAMILIES = (streams, consumers, messaging, kv, objects, backup, verify, bench)


def parser() -> Parser:
    top = Parser(prog="jsstore", description="A JetStream-compatible message store.",
                 epilog="jsstore serve takes nats-server's flags (-p, -a, -js, -sd, -c, ...).")
    top.add_argument("--version", action="store_true", help="print the version and exit")
    commands = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    parent = connection_options()
    commands.add_parser("serve", help="run a NATS server with JetStream (nats-server's flags)")
    commands.add_parser("export", help="write a stream to Parquet (needs jsstore[spark])")
    for family in FAMILIES:
        family.register(commands, parent)
    return top


def run_verb(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.version:
        print(version_line())
        return 0
    if getattr(args, "run", None) is None:
        parser().print_help()
        return 0 if not args.command else 2
    if getattr(args, "local_only", False):
        return args.run(args)
    backend = open_backend(args)
    try:
        return args.run(backend, args)
    finally:
        backend.close()
