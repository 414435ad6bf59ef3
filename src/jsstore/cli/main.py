"""The ``jsstore`` command: ``serve`` (nats-server's command line) and the nats CLI's
verbs on a store directory (``--store DIR``, in process) or a server (``--server URL``).

    jsstore --version
    jsstore serve -js -sd DIR [-p PORT] ...          (jsstore serve -h: jsstore.cli.serve)
    jsstore stream ls|info|add|edit|rm|purge|get|rmm|view ...
    jsstore consumer ls|info|add|rm|next ...
    jsstore pub|sub|req SUBJECT [BODY]
    jsstore kv ls|add|get|put|del|purge|history|watch ...
    jsstore obj add|ls|put|get|rm ...
    jsstore backup --stream S --to FILE;  jsstore restore FILE [--stream NAME]
    jsstore verify --store DIR
    jsstore bench SUBJECT [--msgs N] [--size BYTES] ...
    jsstore export --store DIR --stream S --to out.parquet [--subject F] [--since T] [--master URL]

Every failure is one line on stderr and a non-zero exit status (``--trace`` adds the
traceback).  ``--json`` prints what the JetStream API answered.
"""

from __future__ import annotations

import sys
import traceback

from jsstore.api.schemas import SERVER_VERSION
from jsstore.cli import backup, bench, consumers, kv, messaging, objects, streams, verify
from jsstore.cli.connection import Parser, connection_options, open_backend
from jsstore.cli.errors import CliError
from jsstore.cli.serve import UsageError, parse_flags, serve_main, store_options, sync_setting
from jsstore.version import __version__

__all__ = ["main", "parse_flags", "store_options", "sync_setting", "UsageError"]

FAMILIES = (streams, consumers, messaging, kv, objects, backup, verify, bench)


def version_line() -> str:
    return f"jsstore {__version__} (nats-server {SERVER_VERSION} API)"


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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        parser().print_help()
        return 0
    command, rest = argv[0], argv[1:]
    if command in ("-v", "--version", "version"):
        print(version_line())
        return 0
    trace = "--trace" in argv
    try:
        if command == "export":
            from jsstore.spark.export import main as export_main  # optional: pyspark
            return export_main(rest)
        if command == "serve":
            return serve_main(rest)
        return run_verb(argv)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - every failure is one line (--trace: all of it)
        if trace:
            traceback.print_exc()
        status = exc.status if isinstance(exc, CliError) else 1
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if not isinstance(exc, CliError):
            message = f"{type(exc).__name__}: {message}"
        print(f"jsstore: {message}", file=sys.stderr)
        return status


if __name__ == "__main__":
    sys.exit(main())
