"""The options every verb takes -- where the streams are (``--store DIR`` or ``--server
URL`` with the nats CLI's credentials and TLS flags) and ``--json`` -- and the back end
they name."""

from __future__ import annotations

import argparse
import os

from jsstore.cli.errors import UsageError
from jsstore.deferred import deferred

# one back end is used: --store's (over the asyncio API, in process) or --server's
local = deferred("jsstore.cli.local")
remote = deferred("jsstore.cli.remote")


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line (UsageError) instead of usage and exit, and
    whose verbs take their arguments in any order (``pub SUBJ --store DIR BODY`` as the
    nats CLI takes them): a parser without sub-commands parses intermixed."""

    _intermixing = False

    def parse_known_args(self, args=None, namespace=None):
        if self._subparsers is None and not self._intermixing:
            self._intermixing = True        # (the intermixed parse calls this again)
            try:
                return self.parse_known_intermixed_args(args, namespace)
            finally:
                self._intermixing = False
        return super().parse_known_args(args, namespace)

    def error(self, message: str):
        raise UsageError(f"{message} (see {self.prog} --help)")


def connection_options() -> argparse.ArgumentParser:
    """The parent parser of every verb's options."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("where the streams are")
    group.add_argument("--store", metavar="DIR", help="a store directory, opened in process")
    group.add_argument("-s", "--server", metavar="URL",
                       help="a NATS server (nats://host:port), default $NATS_URL")
    group.add_argument("--user", help="username")
    group.add_argument("--password", help="password")
    group.add_argument("--token", help="authentication token")
    group.add_argument("--creds", metavar="FILE", help="user credentials file")
    group.add_argument("--tlscert", metavar="FILE", help="TLS client certificate")
    group.add_argument("--tlskey", metavar="FILE", help="TLS client key")
    group.add_argument("--tlsca", metavar="FILE", help="TLS CA certificates")
    group.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS",
                       help="time to wait for a server's answer (default 5)")
    parent.add_argument("-j", "--json", action="store_true",
                        help="print the API's JSON answer")
    parent.add_argument("--trace", action="store_true", help="show tracebacks of failures")
    return parent


def open_backend(args: argparse.Namespace):
    """The back end the options name: --store (in process) or --server (nats-py)."""
    server = args.server or (None if args.store else os.environ.get("NATS_URL"))
    if args.store and server:
        raise UsageError("give --store or --server, not both")
    if args.store:
        return local.LocalBackend(args.store)
    if not server:
        raise UsageError("where are the streams? give --store DIR or --server URL")
    return remote.RemoteBackend(server, user=args.user, password=args.password,
                                token=args.token, creds=args.creds,
                                tls=remote.tls_context(args.tlscert, args.tlskey, args.tlsca),
                                timeout=args.timeout)
