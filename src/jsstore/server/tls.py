"""TLS on client connections, as nats-server does it: the settings of its ``tls {}`` block
(and the --tls* flags), the server's SSLContext, and the handshake on one connection.

By default the server writes its INFO in plain text and the client then starts the TLS
handshake (INFO says ``tls_required``); with ``handshake_first`` the handshake comes
first and INFO follows over TLS.  A handshake that fails or does not finish within
``timeout`` seconds (nats-server's default: 2) closes the connection without a word: a
client that answers INFO in plain text sees the connection close.  With ``verify``
(``tls_verify`` in INFO) a client must present a certificate signed by ``ca_file`` (the
system's CAs when there is none); ``verify_and_map`` also names the user the client is
(jsstore.server.certmap)."""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass

from jsstore.gocompat.durations import SECOND, parse_go_duration
from jsstore.server.config import ConfigError

DEFAULT_TIMEOUT = 2.0       # seconds: nats-server's TLS handshake timeout


@dataclass
class TLSSettings:
    """What a ``tls {}`` block (or the --tls* flags) asks for."""

    cert_file: str
    key_file: str
    ca_file: str | None = None
    verify: bool = False
    verify_and_map: bool = False
    timeout: float = DEFAULT_TIMEOUT
    handshake_first: bool = False

    @property
    def verify_clients(self) -> bool:
        """Whether clients must present a certificate the server trusts (INFO's
        tls_verify)."""
        return self.verify or self.verify_and_map

    def context(self) -> ssl.SSLContext:
        """The server side's SSLContext (TLS 1.2 at least, as nats-server's default);
        raises OSError or ssl.SSLError when a file cannot be read."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.cert_file, self.key_file)
        if self.verify_clients:
            context.verify_mode = ssl.CERT_REQUIRED
            if self.ca_file:
                context.load_verify_locations(cafile=self.ca_file)
            else:
                context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
        return context


# tls {} keys nats-server knows that jsstore does not do: refused rather than ignored
_TLS_UNSUPPORTED = ("cipher_suites", "curve_preferences", "pinned_certs", "insecure",
                    "cert_store", "cert_match", "cert_match_by", "cert_match_skip_invalid",
                    "ca_certs_match", "ocsp_peer", "certs", "min_version", "connection_rate_limit")
_TLS_KEYS = ("cert_file", "key_file", "ca_file", "verify", "verify_and_map", "map_and_verify",
             "timeout", "handshake_first", "first", "immediate", "verify_cert_and_check_known_urls")


def _tls_bool(key: str, value) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"error parsing tls config, expected '{key}' to be a boolean")
    return value


def settings_from_config(raw) -> TLSSettings:
    """The ``tls {}`` block, read as nats-server reads it (the keys jsstore supports)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"tls: expected a map, got {raw!r}")
    for key in raw:
        if key.lower() in _TLS_UNSUPPORTED:
            raise ConfigError(f"tls: {key!r} is not supported by jsstore")
        if key.lower() not in _TLS_KEYS:
            raise ConfigError(f'error parsing tls config, unknown field "{key}"')
    values = {key.lower(): value for key, value in raw.items()}
    if values.get("verify_cert_and_check_known_urls"):
        raise ConfigError("tls: 'verify_cert_and_check_known_urls' is not supported by jsstore")
    if "cert_file" not in values:
        raise ConfigError("missing 'cert_file' in TLS configuration")
    if "key_file" not in values:
        raise ConfigError("missing 'key_file' in TLS configuration")
    settings = TLSSettings(str(values["cert_file"]), str(values["key_file"]))
    if "ca_file" in values:
        settings.ca_file = str(values["ca_file"])
    if "verify" in values:
        settings.verify = _tls_bool("verify", values["verify"])
    for key in ("verify_and_map", "map_and_verify"):
        if key in values:
            settings.verify_and_map = _tls_bool(key, values[key])
    if "timeout" in values:
        settings.timeout = _tls_timeout(values["timeout"])
    for key in ("handshake_first", "first", "immediate"):
        if key in values:
            settings.handshake_first = _handshake_first(values[key])
    return settings


def _tls_timeout(value) -> float:
    """tls timeout: seconds (a number) or a Go duration string."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        return parse_go_duration(str(value)) / SECOND
    except ValueError:
        raise ConfigError(f"error parsing tls config, 'timeout' wrong type {value!r}") from None


def _handshake_first(value) -> bool:
    """handshake_first: a boolean (or "true"/"on"/"false"/"off"); nats-server's fallback
    forms ("auto" or a delay) are not supported."""
    if isinstance(value, bool):
        return value
    word = str(value).lower()
    if word in ("true", "on"):
        return True
    if word in ("false", "off"):
        return False
    raise ConfigError(f"tls: handshake_first {value!r}: jsstore supports true or false "
                      f"only (not nats-server's fallback to a plain INFO)")


class PeerCertificate:
    """The certificate a client presented: its DER bytes and, as the ssl module decoded
    it, its subjectAltName entries ((kind, value) pairs in the certificate's order)."""

    __slots__ = ("der", "alt_names")

    def __init__(self, der: bytes, alt_names: tuple):
        self.der = der
        self.alt_names = alt_names

    @classmethod
    def of(cls, transport) -> PeerCertificate | None:
        """The client certificate of a TLS transport, None when it presented none."""
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is None:
            return None
        der = ssl_object.getpeercert(binary_form=True)
        if not der:
            return None
        decoded = ssl_object.getpeercert() or {}
        return cls(der, tuple(decoded.get("subjectAltName", ())))



class TLSTransport:
    """A client connection's TLS, over its plain asyncio transport: what the client sends
    goes in through feed(), what the server writes is encrypted on its way out.  Until
    the handshake is done nothing is written but the handshake's own records; when it
    fails (or times out) the TLS alert, if there is one, is sent and the connection
    closed, as Go's crypto/tls does for nats-server.  `ready` is called once the
    handshake is done."""

    def __init__(self, raw, context: ssl.SSLContext, timeout: float, ready):
        self.raw = raw
        self._in, self._out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._ssl = context.wrap_bio(self._in, self._out, server_side=True)
        self._ready = ready
        self.done = False           # handshake finished
        self.failed = False
        self._timer = asyncio.get_running_loop().call_later(timeout, self._timed_out)

    def feed(self, data: bytes) -> bytes:
        """Take bytes the client sent; the application data they complete."""
        if self.failed:
            return b""
        self._in.write(data)
        if not self.done:
            try:
                self._ssl.do_handshake()
            except ssl.SSLWantReadError:
                self._send()
                return b""
            except (ssl.SSLError, OSError, ValueError):
                self._fail()
                return b""
            self.done = True
            self._timer.cancel()
            self._send()
            self._ready()
        chunks = []
        while True:
            try:
                chunk = self._ssl.read(65536)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                self.close()
                break
            except (ssl.SSLError, OSError, ValueError):
                self._fail()
                break
            if not chunk:                           # the client's close_notify: ours
                self.close()
                break
            chunks.append(chunk)
        self._send()                                # post-handshake messages, if any
        return b"".join(chunks)

    def _send(self) -> None:
        pending = self._out.read()
        if pending and not self.raw.is_closing():
            self.raw.write(pending)

    def _fail(self) -> None:
        self.failed = True
        self._timer.cancel()
        self._send()                                # the alert
        self.raw.close()

    def _timed_out(self) -> None:
        if not self.done and not self.failed:
            self.failed = True
            self.raw.close()

    # -- the transport the client writes to ----------------------------------------------------
    def write(self, data) -> None:
        if not self.done or self.failed or self.raw.is_closing():
            return
        view = memoryview(data)
        while view:
            written = self._ssl.write(view)
            view = view[written:]
        self._send()

    def close(self) -> None:
        self._timer.cancel()
        if self.done and not self.failed and not self.raw.is_closing():
            try:
                self._ssl.unwrap()                  # close_notify
            except (ssl.SSLError, OSError, ValueError):
                pass
            self._send()
        self.raw.close()

    def abort(self) -> None:
        self._timer.cancel()
        self.raw.abort()

    def is_closing(self) -> bool:
        return self.raw.is_closing()

    def get_write_buffer_size(self) -> int:
        return self.raw.get_write_buffer_size()

    def get_extra_info(self, name: str, default=None):
        if name == "ssl_object":
            return self._ssl if self.done else default
        return self.raw.get_extra_info(name, default)
