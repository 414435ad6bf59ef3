"""The listening sockets of the client and monitoring ports, made as Go's listener makes
them for nats-server.

A numeric address (``-a 127.0.0.1``) is bound as it is (resolved without the IDNA codec),
with SO_REUSEADDR, and IPV6_V6ONLY on for an IPv6 address.  A name is resolved once and
bound on its first IPv4 address, else its first address (``-a localhost`` listens on
127.0.0.1 alone, as nats-server does).  The unspecified addresses (``0.0.0.0``, the
default, ``::`` and the empty host) are every interface in both families: one IPv6
socket that also takes IPv4 (IPV6_V6ONLY off), so that ``nats://[::1]:4222`` reaches a
server on ``-a 0.0.0.0``; IPv4 alone where the machine has no IPv6.
"""

from __future__ import annotations

import errno
import socket


UNSPECIFIED = ("0.0.0.0", "::", "")


def bound_socket(host: str | None, port: int) -> socket.socket:
    """A socket bound to `host`:`port` (not yet listening).  OSError, naming the address,
    when the bind fails."""
    if host in UNSPECIFIED and socket.has_ipv6:
        try:
            return _bound(socket.AF_INET6, socket.SOCK_STREAM, 0, ("::", port), False,
                          (host or "", port))
        except OSError as exc:
            if exc.errno not in (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL):
                raise
            # (no IPv6 here: IPv4 alone)
    infos = socket.getaddrinfo(_numeric(host) or host or None, port,
                               type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    # as Go listens on a name: on its first IPv4 address, else its first address
    family, kind, proto, _, address = next(
        (info for info in infos if info[0] == socket.AF_INET), infos[0])
    return _bound(family, kind, proto, address, True, address)


def _bound(family: int, kind: int, proto: int, address: tuple, v6_only: bool,
           named: tuple) -> socket.socket:
    """A socket of `family` bound to `address` (errors name the address as `named`)."""
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, v6_only)
        try:
            sock.bind(address)
        except OSError as exc:
            raise OSError(exc.errno, f"error while attempting to bind on address "
                                     f"{named!r}: {(exc.strerror or '').lower()}") from None
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def host_port(host: str, port: int) -> str:
    """`host`:`port` as Go's net.JoinHostPort writes it (an IPv6 host in brackets), as
    nats-server's log lines name its listeners."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _numeric(host: str | None) -> bytes | None:
    """`host` as bytes when it is a numeric IPv4 or IPv6 address: getaddrinfo then skips
    the IDNA codec a str host goes through (it imports encodings.idna and stringprep)."""
    if not host:
        return None
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except (OSError, ValueError):
            continue
        return host.encode("ascii")
    return None
