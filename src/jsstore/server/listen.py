"""The client port's listening socket, bound here rather than by the event loop.

``loop.create_server(factory, host, port)`` resolves `host` on the loop's resolver: on
uvloop that starts libuv's thread pool (four threads, about 0.6 MiB resident) for one
look-up of what is nearly always a numeric address (``-a 127.0.0.1``, the default
``0.0.0.0``).  When `host` names exactly one address, the socket is made and bound here as
asyncio would (SO_REUSEADDR, IPV6_V6ONLY for IPv6) and handed to ``create_server(sock=)``;
when it names several (``localhost``, or ``""``: every interface, IPv4 and IPv6), the
loop binds them all as before.

The unspecified addresses (``0.0.0.0``, the default, and ``::``) are every interface in
both families, as Go's listener makes them for nats-server: one IPv6 socket that also
takes IPv4 (IPV6_V6ONLY off), so that ``nats://[::1]:4222`` reaches a server on
``-a 0.0.0.0``; IPv4 alone where the machine has no IPv6.
"""

from __future__ import annotations

import errno
import socket


UNSPECIFIED = ("0.0.0.0", "::")


def bound_socket(host: str | None, port: int) -> socket.socket | None:
    """A socket bound to the one address `host`:`port` names (not yet listening; both
    families for an unspecified address), or None when `host` names several.  OSError (as
    asyncio words it) when the bind fails."""
    if host in UNSPECIFIED and socket.has_ipv6:
        try:
            return _bound(socket.AF_INET6, socket.SOCK_STREAM, 0, ("::", port), False,
                          (host, port))
        except OSError as exc:
            if exc.errno not in (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL):
                raise
            # (no IPv6 here: IPv4 alone)
    infos = socket.getaddrinfo(_numeric(host) or host or None, port,
                               type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    if len({(family, address) for family, _, _, _, address in infos}) != 1:
        return None
    family, kind, proto, _, address = infos[0]
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
