"""Both servers on one configuration file, for the TLS and nkey tests: start `jsstore serve` or nats-server on one
configuration file, what a nats-py client gets, and the INFO a raw socket reads."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl

from jsstoreserver import start_jsstore_server
from natsserver import start_nats_server

KINDS = ("jsstore", "nats-server")
SECURITY_KEYS = ("auth_required", "tls_required", "tls_verify", "tls_available", "nonce")


def start(kind: str, directory, config_path: str, extra=()):
    if kind == "jsstore":
        return start_jsstore_server(directory / "store", ["-c", config_path, *extra])
    return start_nats_server(None, ["-c", config_path, *extra], jetstream=False)


def running_both(tmp_path_factory, configs: dict[str, str]):
    """For a module fixture: {(configuration name, kind): running server}, each named
    configuration written to its own file and both servers started on it; stopped after."""
    running = {}
    try:
        for name, text in configs.items():
            directory = tmp_path_factory.mktemp(name)
            path = directory / "server.conf"
            path.write_text(text)
            for kind in KINDS:
                running[name, kind] = start(kind, directory / kind, str(path))
        yield running
    finally:
        for server in running.values():
            server.stop()


async def outcome(url: str, **options) -> tuple:
    """What a nats-py client gets: ("connected",), ("-ERR", text) or ("closed",) for a
    connection closed without a word during or right after the TLS handshake."""
    import nats

    try:
        nc = await nats.connect(url, allow_reconnect=False, max_reconnect_attempts=0,
                                connect_timeout=5, **options)
    except nats.errors.Error as exc:
        if "'" in str(exc):                     # an -ERR: nats: 'Authorization Violation'
            return ("-ERR", str(exc).split("'")[1])
        return ("closed",)
    except (ssl.SSLError, OSError, asyncio.TimeoutError):
        return ("closed",)
    try:
        await nc.flush(timeout=5)
    except (nats.errors.Error, ssl.SSLError, OSError, asyncio.TimeoutError):
        return ("closed",)
    finally:
        await nc.close()
    return ("connected",)


def read_info(port: int, wrap=None) -> dict:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        stream = wrap(sock) if wrap else sock
        data = b""
        while b"\r\n" not in data:
            chunk = stream.recv(4096)
            assert chunk, "closed before INFO"
            data += chunk
    assert data.startswith(b"INFO ")
    return json.loads(data[5:data.index(b"\r\n")])

