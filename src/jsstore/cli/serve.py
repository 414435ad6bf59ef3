"""``jsstore serve``: a NATS server with JetStream on jsstore, started as nats-server is.

    jsstore serve [-p PORT] [-a HOST] [-js] [-sd DIR] [-n NAME] [-P PIDFILE] [-l LOGFILE]
                  [-c FILE [-t]] [-m HTTP_PORT] [--user U --pass P | --auth TOKEN] [-T] [-v]
                  [--sync_interval always|DURATION] [--store-factory MODULE:CALLABLE]
                  [--tls|--tlsverify --tlscert FILE --tlskey FILE [--tlscacert FILE]]
    jsstore serve --signal ldm|stop|quit|term|reopen|reload=<pid or pid file>

Flags are read as nats-server reads them (Go's flag package): ``-x`` and ``--x`` alike,
``-x=v`` or ``-x v``.  ``-p -1`` picks a free port.  Without ``-sd`` the store lives in a
``jsstore`` folder under the system temp dir (nats-server keeps its own in ``nats``
there).  Logs go to stderr in nats-server's format; after ``Server is ready`` nothing is
written there that could block.  SIGTERM and SIGINT stop it cleanly (streams flushed and
closed); SIGUSR2 (``--signal ldm=<pid>``) enters lame duck mode as nats-server does
(``lame_duck_duration`` and ``lame_duck_grace_period`` from the config file).  ``-m``
serves /varz, /connz, /jsz and /healthz; ``-c`` reads the nats-server configuration
subset described in jsstore.server.options (flags win over the file).
``--sync_interval always`` (the configuration's ``jetstream { sync_interval: always }``)
answers a PubAck only once its message is on disk; the publishes of one event-loop
iteration share one fsync per file (jsstore.server.durable).  A duration sets how often the
stores fsync in the background (nats-server's default: 2 minutes).
``--store-factory pkg.mod:callable`` makes every file stream's store with that callable
(``jsstore.store.contract.StreamStoreFactory``; jsstore.cli.storefactory resolves it).
``--tls`` with ``--tlscert`` and ``--tlskey`` makes every client connection TLS;
``--tlsverify`` also requires client certificates signed by ``--tlscacert`` (the
configuration's ``tls {}`` block does the same and more: docs/security.md).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable

from jsstore._core.heap import keep_heap
from jsstore.cli.errors import CliError, UsageError
from jsstore.cli.storefactory import FactorySpecError, load_store_factory
from jsstore.deferred import deferred
from jsstore.jetstream import account as jetstream
from jsstore.jetstream.info import AccountLimits
from jsstore.jetstream.limits import ServerResources
from jsstore.server import Server
from jsstore.server import config as server_config
from jsstore.server.defaults import DEFAULT_MAX_PENDING, DEFAULT_SYNC_INTERVAL
from jsstore.server.eventloop import Loop
from jsstore.server.limits import Limits
from jsstore.server.listen import host_port
from jsstore.store.config import StoreOptions
from jsstore.version import __version__
from jsstore.wire.api import SERVER_VERSION

tempfile = deferred("tempfile")     # for the default store directory only
syncgroup = deferred("jsstore.store.syncgroup")    # with sync always only
# a configuration file's meaning (-c, or a duration for --sync_interval) and TLS settings
server_options = deferred("jsstore.server.options")
tlsconfig = deferred("jsstore.server.tlsconfig")

# flag -> (canonical name, takes a value)
FLAGS = {
    "p": ("port", True), "port": ("port", True),
    "a": ("host", True), "addr": ("host", True), "net": ("host", True),
    "js": ("jetstream", False), "jetstream": ("jetstream", False),
    "sd": ("store_dir", True), "store_dir": ("store_dir", True),
    "n": ("server_name", True), "server_name": ("server_name", True),
    "name": ("server_name", True),
    "P": ("pid", True), "pid": ("pid", True),
    "l": ("log", True), "log": ("log", True),
    "T": ("logtime", False), "logtime": ("logtime", False),
    "logtime_utc": ("logtime_utc", False),
    "t": ("test_config", False),
    "h": ("help", False), "help": ("help", False),
    "v": ("version", False), "version": ("version", False),
    "max_payload": ("max_payload", True),
    "c": ("config", True), "config": ("config", True),
    "m": ("http_port", True), "http_port": ("http_port", True),
    "user": ("user", True), "pass": ("password", True), "auth": ("token", True),
    "sl": ("signal", True), "signal": ("signal", True),
    "sync": ("sync_interval", True), "sync_interval": ("sync_interval", True),
    "store-factory": ("store_factory", True), "store_factory": ("store_factory", True),
    "tls": ("tls_flag", False), "tlsverify": ("tlsverify", False),
    "tlscert": ("tlscert", True), "tlskey": ("tlskey", True), "tlscacert": ("tlscacert", True),
}
TLS_FLAGS = ("tls_flag", "tlsverify", "tlscert", "tlskey", "tlscacert")
# flags that take a number: nats-server's words for one that is not
NUMBERS = ("port", "http_port", "max_payload")
# nats-server's flags that jsstore does not do, refused with the reason (never ignored)
NO_TRACE = "jsstore has no debug or trace log"
CLUSTERING = "clustering is nats-server's: jsstore runs alone"
REFUSED_FLAGS = {
    **dict.fromkeys(("D", "debug", "V", "trace", "VV", "DV", "DVV", "max_traced_msg_len"),
                    NO_TRACE),
    **dict.fromkeys(("s", "syslog", "r", "remote_syslog", "log_size_limit"),
                    "jsstore logs to stderr or to -l FILE only"),
    **dict.fromkeys(("routes", "cluster", "cluster_name", "no_advertise",
                     "cluster_advertise", "connect_retries", "cluster_listen",
                     "client_advertise"), CLUSTERING),
    **dict.fromkeys(("ms", "https_port"), "the monitoring port serves plain HTTP"),
    "ports_file_dir": "a setting of nats-server's own process that jsstore does not have",
    "profile": "a setting of nats-server's own process that jsstore does not have",
    "help_tls": "TLS settings are in docs/security.md",
}

USAGE = """Usage: jsstore serve [options]

Server Options:
    -a, --addr, --net <host>         Bind to host address (default: 0.0.0.0)
    -p, --port <port>                Use port for clients (default: 4222; -1: a free one)
    -n, --name
        --server_name <server_name>  Server name (default: none)
    -P, --pid <file>                 File to store PID
    -m, --http_port <port>           Use port for http monitoring (/varz, /connz, /jsz, /healthz)
    -c, --config <file>              Configuration file (nats-server's format)
    -t                               Test configuration and exit
    -sl,--signal <signal>=<pid>      Send signal to jsstore process (ldm, stop, quit, term, reopen, reload)
                                     <pid> can be either a PID or the path to a PID file
        --max_payload <bytes>        Largest message a client may publish (default: 1048576)

Logging Options:
    -l, --log <file>                 File to redirect log output (default: stderr)
    -T, --logtime                    Timestamp log entries (default: true)
        --logtime_utc                Timestamps in UTC instead of local timezone (default: false)

JetStream Options:
    -js, --jetstream                 Enable JetStream functionality
    -sd, --store_dir <dir>           Set the storage directory (default: <temp dir>/jsstore)
        --sync_interval, --sync <interval>
                                     "always" (fsync before each PubAck) or a duration
                                     between background fsyncs (default: 2m)
        --store-factory <mod:func>   Make every file stream's store with this callable

Authorization Options:
        --user <user>                User required for connections
        --pass <password>            Password required for connections
        --auth <token>               Authorization token required for connections

TLS Options:
        --tls                        Enable TLS, do not verify clients (default: false)
        --tlscert <file>             Server certificate file
        --tlskey <file>              Private key for server certificate
        --tlsverify                  Enable TLS, verify client certificates
        --tlscacert <file>           Client certificate CA for verification

Common Options:
    -h, --help                       Show this message
    -v, --version                    Show version

nats-server's -D, -V, -s, -r, -ms and cluster flags are refused: jsstore does not do them.
"""

# --signal <command>=<pid>: what each command sends, as nats-server maps them
SIGNALS = {"ldm": signal.SIGUSR2, "stop": signal.SIGKILL, "quit": signal.SIGINT,
           "term": signal.SIGTERM, "reopen": signal.SIGUSR1, "reload": signal.SIGHUP}
TRAPPED = {signal.SIGTERM: "terminated", signal.SIGINT: "interrupt",
           signal.SIGUSR2: "user defined signal 2"}


def parse_flags(argv: list[str]) -> dict:
    """Go-style flags into a dict of canonical names."""
    out: dict = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-") or arg in ("-", "--"):
            raise UsageError(f"unexpected argument {arg!r}")
        name = arg.lstrip("-")
        value = None
        if "=" in name:
            name, value = name.split("=", 1)
        if name in REFUSED_FLAGS:
            raise UsageError(f"-{name} is not supported by jsstore: {REFUSED_FLAGS[name]}")
        if name not in FLAGS:
            raise UsageError(f"flag provided but not defined: -{name} "
                             f"(jsstore serve -h lists the flags)")
        key, takes = FLAGS[name]
        if takes:
            if value is None:
                i += 1
                if i >= len(argv):
                    raise UsageError(f"flag needs an argument: -{name}")
                value = argv[i]
            if key in NUMBERS:
                try:
                    int(value)
                except ValueError:
                    raise UsageError(f'invalid value "{value}" for flag -{name}: '
                                     f"parse error") from None
            out[key] = value
        else:
            out[key] = value not in ("false", "0") if value is not None else True
        i += 1
    return out


class Log:
    """nats-server's log line: [pid] yyyy/mm/dd hh:mm:ss.uuuuuu [INF] text."""

    def __init__(self, path: str | None, times: bool = True, utc: bool = False):
        self.path = path
        self.stream = open(path, "a", buffering=1) if path else sys.stderr
        self.pid = os.getpid()
        self.times = times      # logtime: false leaves the date and time out
        self.clock = time.gmtime if utc else time.localtime     # logtime_utc

    def reopen(self) -> None:
        """SIGUSR1 (--signal reopen): the log file opened again by its name (after a
        rotation moved it away), as nats-server does."""
        if self.path:
            stream, self.stream = self.stream, open(self.path, "a", buffering=1)
            stream.close()
            self.info("File log re-opened")

    def info(self, text: str) -> None:
        self.line("INF", text)

    def error(self, text: str) -> None:
        self.line("ERR", text)

    def line(self, level: str, text: str) -> None:
        now = time.time()
        stamp = time.strftime("%Y/%m/%d %H:%M:%S", self.clock(now)) + \
            f".{int(now % 1 * 1e6):06d} " if self.times else ""
        try:
            self.stream.write(f"[{self.pid}] {stamp}[{level}] {text}\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass


def default_store_dir() -> str:
    return os.path.join(tempfile.gettempdir(), "jsstore")


def sync_setting(options: dict):
    """The sync_interval option: "always" or nanoseconds (the default when not given)."""
    value = options.get("sync_interval", DEFAULT_SYNC_INTERVAL)
    if isinstance(value, str) and not value.isdigit():
        try:
            return server_options.sync_interval("sync_interval", value)
        except server_config.ConfigError as exc:
            raise UsageError(str(exc)) from None
    return int(value) if not isinstance(value, str) else int(value) * 1_000_000_000


def store_options(options: dict) -> StoreOptions:
    """One JetStream's store options: with sync always its own SyncGroup (the server runs
    the fsyncs), else the background fsync interval (nats-server's default when <= 0)."""
    setting = sync_setting(options)
    if setting == "always":
        return StoreOptions(sync="always", group=syncgroup.SyncGroup())
    interval = setting if setting > 0 else DEFAULT_SYNC_INTERVAL
    return StoreOptions(sync_interval=interval / 1e9)


def open_jetstreams(options: dict) -> tuple:
    """(the global account's JetStream, {account: its JetStream or None}) as the options
    ask: with configured accounts, those whose configuration turns JetStream on have it
    (with their limits) and the global account has none; without, the global account
    has it."""
    enabled = options.get("jetstream")     # (False: a configuration turned it off)
    if not (enabled or (enabled is None and options.get("store_dir"))):
        return None, {}
    store_dir = options.get("store_dir") or default_store_dir()
    domain = options.get("domain")
    resources = ServerResources.of_machine(
        store_dir, int(options.get("max_memory_store", options.get("max_mem", -1))),
        int(options.get("max_file_store", options.get("max_file", -1))))
    factory = None
    if options.get("store_factory"):
        try:
            factory = load_store_factory(options["store_factory"])
        except FactorySpecError as exc:
            raise UsageError(str(exc)) from None
    configured = options.get("accounts") or {}
    if not configured:
        return jetstream.open(store_dir, store_options(options), domain=domain,
                              resources=resources, store_factory=factory), {}
    accounts = {}
    for name, limits in configured.items():
        accounts[name] = None if limits is None else jetstream.open(
            store_dir, store_options(options), account=name, limits=AccountLimits(**limits), domain=domain,
            resources=resources, store_factory=factory)
    return None, accounts


LIMIT_OPTIONS = ("max_connections", "max_subscriptions", "max_control_line", "ping_interval",
                 "ping_max", "auth_timeout")


def not_enabled(subject: str, send) -> bool:
    """The answer of an account without JetStream to a ``$JS.API`` request (10039, "JetStream
    not enabled for account"): jsstore.api.disabled, imported with the first such request."""
    from jsstore.api.disabled import not_enabled as answer
    return answer(subject, send)


def tls_from_flags(options: dict) -> tlsconfig.TLSSettings:
    """The TLS settings of the command line (which replace a configuration's tls block):
    --tls, --tlsverify (clients' certificates verified), --tlscert, --tlskey, --tlscacert."""
    if not options.get("tlscert"):
        raise UsageError("TLS Server certificate must be present and valid")
    if not options.get("tlskey"):
        raise UsageError("TLS Server private key must be present and valid")
    return tlsconfig.TLSSettings(options["tlscert"], options["tlskey"],
                                 ca_file=options.get("tlscacert"),
                                 verify=bool(options.get("tlsverify")))


def file_options(path: str) -> dict:
    """The options of configuration file `path`; CliError (exit status 1, as nats-server's
    for a file it refuses) listing every error, a line each, as nats-server lists them."""
    try:
        return server_options.server_options(server_config.load(path))
    except (OSError, server_config.ConfigError) as exc:
        raise CliError(f"configuration: {exc}") from None


def test_config(options: dict) -> int:
    """-t: the configuration file read and checked, nothing started (nats-server's words)."""
    if not options.get("config"):
        raise UsageError("must specify [-c, --config] option to check configuration file "
                         "syntax")
    file_options(options["config"])
    print(f"jsstore: configuration file {options['config']} is valid")
    return 0


def serve(options: dict, on_ready: Callable[[Server], None] | None = None) -> int:
    """Run the server the options describe until a signal stops it; the exit status.
    `on_ready(server)` is called once ``Server is ready`` is logged."""
    if options.get("config"):
        from_file = file_options(options["config"])
        options = {**from_file, **{k: v for k, v in options.items() if k != "config"}}
    if any(options.get(flag) for flag in TLS_FLAGS):
        options["tls"] = tls_from_flags(options)
    if options.get("tls") is not None:
        try:
            options["tls"].context()        # the certificate and key files, read now
        except OSError as exc:          # (ssl.SSLError is one)
            raise UsageError(f"TLS: {exc}") from None
    log = Log(options.get("log"), options.get("logtime", True), options.get("logtime_utc", False))
    js, accounts = open_jetstreams(options)
    sync = sync_setting(options)
    try:
        port = int(options.get("port", 4222))
        max_payload = int(options.get("max_payload", 1024 * 1024))
        limits = Limits(**{key: options[key] for key in LIMIT_OPTIONS if key in options})
        max_pending = int(options.get("max_pending", DEFAULT_MAX_PENDING))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    server = Server(js, host=options.get("host", "0.0.0.0"), port=port,
                    server_name=options.get("server_name", ""), max_payload=max_payload,
                    token=options.get("token"), user=options.get("user"),
                    password=options.get("password"), users=options.get("users"),
                    accounts=accounts, no_auth_user=options.get("no_auth_user"),
                    not_enabled=not_enabled, sync_always=sync == "always",
                    sync_interval=DEFAULT_SYNC_INTERVAL if sync == "always" else sync,
                    max_pending=max_pending, limits=limits,
                    account_limits=options.get("account_limits"), tls=options.get("tls"))
    for key in ("lame_duck_duration", "lame_duck_grace_period"):
        if key in options:
            setattr(server, key, float(options[key]))
    if options.get("http_port") is not None:
        try:
            server.http_port = int(options["http_port"])
            server.http_host = options.get("http_host")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    log.info(f"Starting jsstore {__version__} (nats-server {SERVER_VERSION} API)")
    if server.js is not None:
        log.info("Starting JetStream")
        log.info(f"    Store Directory: \"{server.js.directory}\"")
        if options.get("domain"):
            log.info(f"    Domain:          {options['domain']}")

    def ready(srv) -> None:
        if srv.monitor is not None:
            log.info(f"Starting http monitor on {host_port(srv.monitor.host, srv.monitor.port)}")
        log.info(f"Listening for client connections on {host_port(srv.host, srv.port)}")
        if srv.tls is not None:
            log.info("TLS required for client connections")
        if options.get("pid"):
            with open(options["pid"], "w") as f:
                f.write(str(os.getpid()))
        log.info("Server is ready")
        if on_ready is not None:
            on_ready(srv)

    keep_heap()         # (the process is the server's: its buffers reused, not given back)
    loop = Loop()

    def stop(sig) -> None:
        log.info(f'Trapped "{TRAPPED[sig]}" signal')
        loop.stop()

    def lame_duck() -> None:
        log.info(f'Trapped "{TRAPPED[signal.SIGUSR2]}" signal')
        server.lame_duck(log.info, loop.stop)

    def reload() -> None:
        # (the default action of SIGHUP would end the server without a word)
        log.error("Configuration reload is not supported by jsstore: the configuration "
                  "in use is unchanged; restart the server to apply a new one")

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop, sig)
    loop.add_signal_handler(signal.SIGUSR2, lame_duck)
    loop.add_signal_handler(signal.SIGHUP, reload)
    loop.add_signal_handler(signal.SIGUSR1, log.reopen)
    server.run(ready, loop)
    log.info("Server Exiting..")
    return 0


def send_signal(spec: str) -> int:
    """--signal <command>=<pid or pid file>: signal a running server (nats-server's
    commands: ldm, stop, quit, term, reopen, reload)."""
    command, _, target = spec.partition("=")
    if command not in SIGNALS:
        raise UsageError(f"unknown signal {command!r}")
    if not target:
        raise UsageError(f"--signal {command} needs the server's pid: {command}=<pid>")
    if not target.isdigit():
        try:
            with open(target) as f:
                target = f.read().strip()
        except OSError as exc:
            raise UsageError(f"could not read pid file {target!r}: {exc}") from None
    try:
        os.kill(int(target), SIGNALS[command])
    except (ValueError, ProcessLookupError, PermissionError) as exc:
        raise UsageError(f"signal {command} to {target}: {exc}") from None
    return 0


def serve_main(argv: list[str], on_ready: Callable[[Server], None] | None = None) -> int:
    """`jsstore serve ARGS`: the server with nats-server's flags (or --signal, -v);
    `on_ready(server)` is called once it is ready (jsstore.testing.zygote reports the
    port of a server it forked through it)."""
    options = parse_flags(argv)
    if options.get("help"):
        print(USAGE, end="")
        return 0
    if options.get("test_config"):
        return test_config(options)
    if options.get("version"):
        print(f"jsstore: v{__version__}")
        return 0
    if options.get("signal"):
        return send_signal(options["signal"])
    return serve(options, on_ready)
