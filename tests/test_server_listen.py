"""Where the client port listens, against nats-server with the same command line: the
unspecified addresses (-a 0.0.0.0, the default, and -a ::) take IPv4 and IPv6 clients
alike, as Go's listener does; a loopback address only its own family, a name its first
IPv4 address; a port in use is
refused loudly, naming the address asked for.  (The monitoring port is bound by the same
`bound_socket`.)"""

from __future__ import annotations

import socket

import pytest

from jsstore.server.listen import bound_socket
from jsstoreserver import start_jsstore_server
from natsserver import start_nats_server


def _has_ipv6_loopback() -> bool:
    """Whether ::1 is configured (Linux lists its IPv6 addresses in /proc/net/if_inet6)."""
    try:
        with open("/proc/net/if_inet6") as f:
            return socket.has_ipv6 and any(line.startswith("0" * 31 + "1") for line in f)
    except OSError:
        return False


HAS_IPV6 = _has_ipv6_loopback()


def _greeting(family: int, host: str, port: int) -> bytes | None:
    """The first bytes a server sends on `host`:`port`, or None when it refuses."""
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect((host, port))
            return sock.recv(5)
    except OSError:
        return None


@pytest.mark.skipif(not HAS_IPV6, reason="the machine has no IPv6 loopback")
@pytest.mark.parametrize("address,v4,v6", [("0.0.0.0", True, True), ("::", True, True),
                                           ("127.0.0.1", True, False), ("::1", False, True),
                                           ("localhost", True, False)])
def test_the_families_a_listener_takes(tmp_path, address, v4, v6):
    seen = {}
    for kind, start in (("nats-server", start_nats_server), ("jsstore", start_jsstore_server)):
        server = start(str(tmp_path / kind), extra_args=["-a", address])
        try:
            seen[kind] = (_greeting(socket.AF_INET, "127.0.0.1", server.port) == b"INFO ",
                          _greeting(socket.AF_INET6, "::1", server.port) == b"INFO ")
        finally:
            server.stop()
    assert seen["jsstore"] == seen["nats-server"] == (v4, v6)


@pytest.mark.skipif(not HAS_IPV6, reason="the machine has no IPv6 loopback")
def test_the_unspecified_address_is_one_socket_of_both_families():
    sock = bound_socket("0.0.0.0", 0)
    try:
        assert sock.family == socket.AF_INET6
        assert sock.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY) == 0
    finally:
        sock.close()


def test_a_port_in_use_names_the_address_asked_for():
    taken = bound_socket("0.0.0.0", 0)
    taken.listen()
    port = taken.getsockname()[1]
    try:
        with pytest.raises(OSError) as caught:
            bound_socket("0.0.0.0", port)
        assert f"('0.0.0.0', {port})" in str(caught.value)
        assert "address already in use" in str(caught.value)
    finally:
        taken.close()
