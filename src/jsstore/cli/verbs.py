"""The nats CLI's verbs of the ``jsstore`` command (everything but ``serve`` and
``export``): one argparse parser over the verb families (streams, consumers, messaging, kv,
objects, backup, verify, bench), run on a store directory or against a server.
``jsstore.cli.main`` imports this module only when a verb (or ``--help``) runs, and a verb
imports only its own family: ``jsstore stream ls`` does not load the key-value, backup,
verify or bench modules (``--help`` and an unknown command load them all)."""

from __future__ import annotations

from jsstore.cli.connection import Parser, connection_options, open_backend
from jsstore.cli.main import version_line
from jsstore.deferred import deferred

# the verb families, in the order --help lists them
FAMILY_NAMES = ("streams", "consumers", "messaging", "kv", "objects", "backup", "verify",
                "bench")
FAMILIES = {name: deferred(f"jsstore.cli.{name}") for name in FAMILY_NAMES}
# each command (and alias) -> the family that registers it (tests/test_startup_imports.py
# checks this against what each family registers)
COMMANDS = {
    "stream": "streams", "str": "streams",
    "consumer": "consumers", "con": "consumers",
    "pub": "messaging", "req": "messaging", "request": "messaging", "sub": "messaging",
    "subscribe": "messaging",
    "kv": "kv",
    "obj": "objects", "object": "objects",
    "backup": "backup", "restore": "backup",
    "verify": "verify",
    "bench": "bench",
}


def parser(family: str | None = None) -> Parser:
    """The command's parser: every family's verbs, or only `family`'s."""
    top = Parser(prog="jsstore", description="A JetStream-compatible message store.",
                 epilog="jsstore serve takes nats-server's flags (-p, -a, -js, -sd, -c, ...).")
    top.add_argument("--version", action="store_true", help="print the version and exit")
    commands = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    parent = connection_options()
    commands.add_parser("serve", help="run a NATS server with JetStream (nats-server's flags)")
    commands.add_parser("export", help="write a stream to Parquet (needs jsstore[spark])")
    for name in FAMILY_NAMES if family is None else (family,):
        FAMILIES[name].register(commands, parent)
    return top


def run_verb(argv: list[str]) -> int:
    family = COMMANDS.get(argv[0]) if argv else None
    args = parser(family).parse_args(argv)
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
