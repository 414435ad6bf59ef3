"""A server's TLS settings, as nats-server takes them: its configuration's ``tls {}`` block
(cert_file, key_file, ca_file, verify, verify_and_map, timeout, handshake_first; the keys
jsstore does not do are refused by jsstore.server.configkeys, never ignored) or the --tls* flags, and the SSLContext
they make.  What TLS does on a connection is jsstore.server.tls."""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from jsstore.gocompat.durations import SECOND, parse_go_duration
from jsstore.server.config import ConfigError

DEFAULT_TIMEOUT = 2.0       # seconds: nats-server's TLS handshake timeout
FALLBACK_DELAY = 0.05       # seconds: handshake_first "auto"'s wait for a handshake


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
    fallback_delay: float = 0.0     # with handshake_first: INFO first after this long
    #                                 without a word from the client (0: never)

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


def _tls_bool(key: str, value) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"error parsing tls config, expected '{key}' to be a boolean")
    return value


def settings_from_config(raw) -> TLSSettings:
    """The ``tls {}`` block, read as nats-server reads it (which keys it may have:
    jsstore.server.configkeys)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"tls: expected a map, got {raw!r}")
    values = {key.lower(): value for key, value in raw.items()}
    if "cert_file" not in values:
        raise ConfigError("missing 'cert_file' in TLS configuration")
    if "key_file" not in values:
        raise ConfigError("missing 'key_file' in TLS configuration")
    settings = TLSSettings(str(values["cert_file"]), str(values["key_file"]))
    if "ca_file" in values:
        settings.ca_file = str(values["ca_file"])
    if "verify" in values:
        settings.verify = _tls_bool("verify", values["verify"])
    if "verify_and_map" in values:
        settings.verify_and_map = _tls_bool("verify_and_map", values["verify_and_map"])
    if "timeout" in values:
        settings.timeout = _tls_timeout(values["timeout"])
    for key in ("handshake_first", "first", "immediate"):
        if key in values:
            settings.handshake_first, settings.fallback_delay = _handshake_first(values[key])
    return settings


def _tls_timeout(value) -> float:
    """tls timeout: seconds (a number) or a Go duration string."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        return parse_go_duration(str(value)) / SECOND
    except ValueError:
        raise ConfigError(f"error parsing tls config, 'timeout' time: invalid duration "
                          f'"{value}"') from None


def _handshake_first(value) -> tuple[bool, float]:
    """handshake_first: a boolean, "true"/"on"/"false"/"off", or a fallback -- "auto"
    (50 ms) or a Go duration: how long to wait for the client's handshake before
    sending INFO in plain text after all.  (handshake_first, fallback delay)."""
    if isinstance(value, bool):
        return value, 0.0
    if not isinstance(value, str):
        gotype = {int: "int64", float: "float64", list: "[]interface {}",
                  dict: "map[string]interface {}"}.get(type(value), type(value).__name__)
        raise ConfigError(f'field "handshake_first" should be a boolean or a string, '
                          f'got {gotype}')
    word = value.lower()
    if word in ("true", "on"):
        return True, 0.0
    if word in ("false", "off"):
        return False, 0.0
    if word in ("auto", "auto_fallback"):
        return True, FALLBACK_DELAY
    try:
        return True, parse_go_duration(value) / SECOND
    except ValueError:
        raise ConfigError(f'field "handshake_first"\'s value "{value}" is invalid') from None
