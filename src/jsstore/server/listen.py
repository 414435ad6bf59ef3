"""The client port's listening socket, bound here rather than by the event loop.

``loop.create_server(factory, host, port)`` resolves `host` on the loop's resolver: on
uvloop that starts libuv's thread pool (four threads, about 0.6 MiB resident) for one
look-up of what is nearly always a numeric address (``-a 127.0.0.1``, the default
``0.0.0.0``).  When `host` names exactly one address, the socket is made and bound here as
asyncio would (SO_REUSEADDR, IPV6_V6ONLY for IPv6) and handed to ``create_server(sock=)``;
when it names several (``localhost``, or ``""``: every interface, IPv4 and IPv6), the
loop binds them all as before.
"""

from __future__ import annotations

import socket


def bound_socket(host: str | None, port: int) -> socket.socket | None:
    """A socket bound to the one address `host`:`port` names (not yet listening), or None
    when `host` names several.  OSError (as asyncio words it) when the bind fails."""
    infos = socket.getaddrinfo(_numeric(host) or host or None, port,
                               type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    if len({(family, address) for family, _, _, _, address in infos}) != 1:
        return None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, True)
        try:
            sock.bind(address)
        except OSError as exc:
            raise OSError(exc.errno, f"error while attempting to bind on address "
                                     f"{address!r}: {(exc.strerror or '').lower()}") from None
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


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
