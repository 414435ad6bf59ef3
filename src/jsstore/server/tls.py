"""TLS on a client connection, as nats-server does it.  By default the server writes its
INFO in plain text and the client then starts the TLS handshake (INFO says
``tls_required``); with ``handshake_first`` the handshake comes first and INFO follows
over TLS, unless the client has said nothing after the settings' ``fallback_delay``
(``handshake_first: auto``), when INFO goes out in plain text after all and the
handshake follows as by default.  A handshake that fails or does not finish within the
settings' ``timeout`` (nats-server's default: 2 seconds) closes the connection, with the
TLS alert when there is one and nothing else: a client that answers INFO in plain text
sees the connection close.  With ``verify`` (``tls_verify`` in INFO) a client must
present a certificate signed by ``ca_file``; ``verify_and_map`` also names the user the
client is (jsstore.server.certmap).  The settings are jsstore.server.tlsconfig."""

from __future__ import annotations

import ssl


# OpenSSL's names of TLS 1.2 suites -> Go's (TLS 1.3 suites have one name in both)
_GO_SUITES = {
    "ECDHE-ECDSA-AES128-GCM-SHA256": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    "ECDHE-RSA-CHACHA20-POLY1305": "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
}


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
    """A client connection's TLS, over its plain transport: what the client sends
    goes in through feed(), what the server writes is encrypted on its way out.  Until
    the handshake is done nothing is written but the handshake's own records; when it
    fails (or times out) the TLS alert, if there is one, is sent and the connection
    closed, as Go's crypto/tls does for nats-server.  `ready` is called once the
    handshake is done."""

    def __init__(self, raw, context: ssl.SSLContext, timeout: float, ready, loop):
        self.raw = raw
        self._loop = loop
        self._in, self._out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._ssl = context.wrap_bio(self._in, self._out, server_side=True)
        self._ready = ready
        self.done = False           # handshake finished
        self.failed = False
        self._timeout = timeout
        self._timer = self._loop.call_later(timeout, self._timed_out)

    def restart_timer(self) -> None:
        """The handshake's time limit counts from now (after a TLS-first fallback)."""
        self._timer.cancel()
        self._timer = self._loop.call_later(self._timeout, self._timed_out)

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

    def connz_fields(self) -> dict:
        """/connz's tls_version and tls_cipher_suite (Go's names for the suite) once the
        handshake is done."""
        if not self.done:
            return {}
        version = self._ssl.version() or ""
        suite = (self._ssl.cipher() or ("",))[0]
        return {"tls_version": version.replace("TLSv", ""),
                "tls_cipher_suite": _GO_SUITES.get(suite, suite)}

    def get_extra_info(self, name: str, default=None):
        if name == "ssl_object":
            return self._ssl if self.done else default
        return self.raw.get_extra_info(name, default)
