"""The monitoring port (``-m``): ``/varz``, ``/connz``, ``/jsz``, ``/healthz`` with
nats-server's JSON keys, so its Prometheus exporter and surveyor-style tools can read
them.  A small HTTP/1.1 server on the same event loop: GET only, one JSON answer per
request, the connection closed after it.
"""

from __future__ import annotations

import os
import resource
import time

from jsstore.gocompat import json as gojson
from jsstore.gocompat.durations import SECOND
from jsstore.gocompat.times import rfc3339_nano
from jsstore.server.defaults import DEFAULT_MAX_PENDING, GO_VERSION
from jsstore.server.listen import bound_socket
from jsstore.server.tls import TLSTransport
from jsstore.server.tlsconfig import DEFAULT_TIMEOUT as DEFAULT_TLS_TIMEOUT
from jsstore.server.transport import Listener

MAX_REQUEST_HEAD = 64 * 1024     # bytes of request line and headers taken at most


def _rfc3339(seconds: float) -> str:
    """A time.time() value as Go's JSON writes a time.Time in UTC (RFC3339Nano)."""
    return rfc3339_nano(round(seconds * SECOND))


def _uptime(seconds: float) -> str:
    """nats-server's uptime text: 1d2h3m4s."""
    seconds = int(seconds)
    days, seconds = divmod(seconds, 86400)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    text = f"{days}d" if days else ""
    if days or hours:
        text += f"{hours}h"
    if days or hours or minutes:
        text += f"{minutes}m"
    return text + f"{seconds}s"


class Monitor:
    def __init__(self, server, host: str, port: int):
        self.server = server
        self.host = host
        self.port = port
        self.started = time.time()
        self.requests: dict[str, int] = {}
        self._listener = None

    def start(self) -> None:
        port = 0 if self.port in (-1, 0) else self.port
        sock = bound_socket(self.host, port)
        self._listener = Listener(self.server.loop, sock, lambda: _Exchange(self))
        self.port = sock.getsockname()[1]

    def stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def answer(self, request: bytes) -> bytes:
        """The HTTP answer to `request` (its head)."""
        line = request.split(b"\r\n", 1)[0].decode("latin-1").split()
        path = line[1].split("?", 1)[0].rstrip("/") if len(line) > 1 else "/"
        handler = {"/varz": self.varz, "/connz": self.connz, "/jsz": self.jsz,
                   "/healthz": self.healthz}.get(path)
        if handler is None:
            status, body = "404 Not Found", b"404 page not found\n"
            kind = "text/plain; charset=utf-8"
        else:
            self.requests[path] = self.requests.get(path, 0) + 1
            status, kind = "200 OK", "application/json"
            body = gojson.encode_indent(handler())
        return (f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)

    # -- the pages ------------------------------------------------------------------------
    def varz(self) -> dict:
        srv = self.server
        now = time.time()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        stats = srv.stats
        totals = srv.totals
        return {
            "server_id": srv.server_id, "server_name": srv.server_name,
            "version": srv.info_version, "proto": 1, "go": GO_VERSION,
            "host": srv.host, "port": srv.port,
            **({"auth_required": True} if srv.auth.required else {}),
            **({"tls_required": True} if srv.tls is not None else {}),
            **({"tls_verify": True} if srv.tls is not None and srv.tls.verify_clients else {}),
            "max_connections": srv.limits.max_connections,
            "ping_interval": int(srv.limits.ping_interval * SECOND),
            "ping_max": srv.limits.ping_max,
            "http_host": self.host, "http_port": self.port, "http_base_path": "",
            "https_port": 0,
            "auth_timeout": srv.limits.auth_timeout,
            "tls_timeout": srv.tls.timeout if srv.tls is not None else DEFAULT_TLS_TIMEOUT,
            "max_control_line": srv.limits.max_control_line, "max_payload": srv.max_payload,
            "max_pending": getattr(srv, "max_pending", DEFAULT_MAX_PENDING),
            "jetstream": self._jetstream_varz(),
            "start": _rfc3339(self.started), "now": _rfc3339(now),
            "uptime": _uptime(now - self.started),
            "mem": usage.ru_maxrss * 1024, "cores": os.cpu_count() or 1,
            "gomaxprocs": os.cpu_count() or 1,
            "cpu": round((usage.ru_utime + usage.ru_stime) * 100 / max(now - self.started,
                                                                       1e-9), 2),
            "connections": len(srv.clients), "total_connections": stats["total_connections"],
            "routes": 0, "remotes": 0, "leafnodes": 0,
            "in_msgs": totals.in_msgs, "in_bytes": totals.in_bytes,
            "in_client_msgs": totals.in_msgs, "in_client_bytes": totals.in_bytes,
            "out_msgs": totals.out_msgs, "out_bytes": totals.out_bytes,
            "out_client_msgs": totals.out_msgs, "out_client_bytes": totals.out_bytes,
            "slow_consumers": srv.slow_consumers, "stale_connections": 0,
            "stalled_clients": 0,
            "subscriptions": sum(a.table.count() for a in srv.accounts.values()),
            "http_req_stats": {f"{p}": n for p, n in self.requests.items()},
        }

    def _jetstream_varz(self) -> dict:
        js = self.server.js
        if js is None:
            return {}
        return {"config": self._js_config(), "stats": self._js_stats()}

    def _js_config(self) -> dict:
        js = self.server.js
        srv = self.server
        out = {"max_memory": -1, "max_storage": -1,
               "store_dir": os.path.join(js.directory, "jetstream") if js.directory else ""}
        if srv.sync_interval:                       # (omitted when zero, as Go's omitempty)
            out["sync_interval"] = srv.sync_interval
        if srv.durable is not None:
            out["sync_always"] = True
        out["strict"] = True
        return out

    def _js_stats(self) -> dict:
        """Usage summed over every account's JetStream."""
        totals = dict.fromkeys(("memory", "storage", "reserved_memory", "reserved_storage",
                                "total", "errors"), 0)
        jetstreams = self.server.jetstreams()
        for js in jetstreams:
            info = js.account_info()
            api = js.router().streams
            for key, value in (("memory", info.memory), ("storage", info.storage),
                               ("reserved_memory", info.reserved_memory),
                               ("reserved_storage", info.reserved_storage),
                               ("total", api.total), ("errors", api.errors)):
                totals[key] += value
        return {"memory": totals["memory"], "storage": totals["storage"],
                "reserved_memory": totals["reserved_memory"],
                "reserved_storage": totals["reserved_storage"], "accounts": len(jetstreams),
                "ha_assets": 0,
                "api": {"level": 5, "total": totals["total"], "errors": totals["errors"]}}

    def connz(self) -> dict:
        srv = self.server
        now = time.time()
        connections = []
        for client in sorted(srv.clients.values(), key=lambda c: c.cid):
            peer = client.peer
            connections.append({
                "cid": client.cid, "kind": "Client", "type": "nats",
                "ip": peer[0], "port": peer[1],
                "start": _rfc3339(client.started), "last_activity": _rfc3339(client.active),
                "uptime": _uptime(now - client.started), "idle": _uptime(now - client.active),
                "pending_bytes": (client.transport.get_write_buffer_size()
                                  if client.transport is not None else 0),
                "in_msgs": client.in_msgs, "out_msgs": client.out_msgs,
                "in_bytes": client.in_bytes, "out_bytes": client.out_bytes,
                "subscriptions": len(client.subs), "name": client.name,
                "lang": client.lang, "version": client.version,
                **(client.transport.connz_fields()
                   if isinstance(client.transport, TLSTransport) else {}),
                **({"tls_first": True} if client.tls_first else {})})
        return {"server_id": srv.server_id, "now": _rfc3339(now),
                "num_connections": len(connections), "total": len(connections),
                "offset": 0, "limit": 1024, "connections": connections}

    def jsz(self) -> dict:
        srv = self.server
        now = _rfc3339(time.time())
        if srv.js is None:
            return {"server_id": srv.server_id, "now": now, "disabled": True,
                    "config": {}, "streams": 0, "consumers": 0, "messages": 0, "bytes": 0}
        stats = self._js_stats()
        streams = consumers = messages = size = 0
        for js in srv.jetstreams():
            info = js.account_info()
            streams += info.streams
            consumers += info.consumers
            for name in js.stream_names():
                state = js.stream_info(name).state
                messages += state.messages
                size += state.bytes
        return {**stats, "server_id": srv.server_id, "now": now, "config": self._js_config(),
                "limits": {"default_max_consumers": 1000}, "streams": streams,
                "consumers": consumers, "messages": messages, "bytes": size,
                "total": stats["accounts"]}

    def healthz(self) -> dict:
        return {"status": "ok"}


class _Exchange:
    """One HTTP connection: the request's head read, the answer written, closed."""

    def __init__(self, monitor: Monitor):
        self.monitor = monitor
        self.transport = None
        self.head = b""

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.head += data
        if b"\r\n\r\n" in self.head:
            self.transport.write(self.monitor.answer(self.head))
            self.transport.close()
        elif len(self.head) > MAX_REQUEST_HEAD:
            self.transport.close()

    def eof_received(self) -> None:
        return None

    def connection_lost(self, exc) -> None:
        self.transport = None
