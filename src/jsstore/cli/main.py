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

Every failure is one line on stderr (a configuration file's errors: a line each) and a
non-zero exit status (``--trace`` adds the
traceback).  ``--json`` prints what the JetStream API answered.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from jsstore.cli.errors import CliError
from jsstore.version import __version__
from jsstore.wire.api import SERVER_VERSION

__all__ = ["main", "reporting_failures"]


def version_line() -> str:
    return f"jsstore {__version__} (nats-server {SERVER_VERSION} API)"


def run(command: str, argv: list[str]) -> int:
    """Run one command, importing only its own module: ``serve`` (a test harness starts
    one per test; it loads the server, not the verbs' parsers, their remote back end or
    the asyncio API beneath them), ``export`` (pyspark), or the verbs (jsstore.cli.verbs)."""
    if command == "serve":
        from jsstore.cli.serve import serve_main
        return serve_main(argv[1:])
    if command == "export":
        from jsstore.spark.export import main as export_main  # optional: pyspark
        return export_main(argv[1:])
    from jsstore.cli.verbs import run_verb
    return run_verb(argv)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        from jsstore.cli.verbs import parser
        parser().print_help()
        return 0
    command = argv[0]
    if command in ("-v", "--version", "version"):
        print(version_line())
        return 0
    return reporting_failures(lambda: run(command, argv), trace="--trace" in argv)


def reporting_failures(command: Callable[[], int], *, trace: bool = False) -> int:
    """`command()`'s exit status, every failure of it made one line on stderr (a
    configuration file's errors: a line each) and a non-zero status; `trace` adds the
    traceback.  (The test zygote runs the servers it forks through this too.)"""
    try:
        return command()
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - every failure is one line (--trace: all of it)
        if trace:
            import traceback    # (only here: it loads linecache, tokenize and textwrap)
            traceback.print_exc()
        status = exc.status if isinstance(exc, CliError) else 1
        lines = str(exc).splitlines() or [type(exc).__name__]
        if not isinstance(exc, CliError):
            # (not one of ours: its first line, named; a CliError's lines are each a
            # failure, such as the errors of a configuration file)
            lines = [f"{type(exc).__name__}: {lines[0]}"]
        for line in lines:
            print(f"jsstore: {line}", file=sys.stderr)
        return status


if __name__ == "__main__":
    sys.exit(main())
