"""TLS on client connections, against the real nats-server and `jsstore serve` started
with the same configuration file (certificates made by tests/tlscerts.py): what INFO
says, and what nats-py clients get -- connected, an -ERR, or the connection closed during
or right after the handshake -- with and without a client certificate, with one from
another CA, with TLS-first, and with verify_and_map naming users (with permissions)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from natsserver import require_nats_server
from tlsboth import KINDS, SECURITY_KEYS, outcome, read_info, running_both
from tlscerts import make_certs

nats = pytest.importorskip("nats")

pytestmark = pytest.mark.natsserver


def _configs(certs) -> dict[str, str]:
    files = f'cert_file: "{certs.server_cert}", key_file: "{certs.server_key}"'
    verify = f'{files}, ca_file: "{certs.ca}"'
    return {
        "tls": f"tls {{ {files} }}\n",
        "verify": f"tls {{ {verify}, verify: true }}\n",
        "map": (f"tls {{ {verify}, verify_and_map: true }}\n"
                "authorization { users: [\n"
                '  {user: "alice@example.com"}\n'
                '  {user: "CN=bob,OU=dev,O=jsstore tests",'
                ' permissions: {publish: "bob.>", subscribe: "_INBOX.>"}}\n'
                '  {user: "carol.example.com"}\n'
                '  {user: "spiffe://example.org/dave"}\n'
                '  {user: "O=jsstore tests, OU=ops, CN=erin"}\n'
                '  {user: "CN=grace,DC=org,DC=example"}\n'
                '  {user: "CN=heidi,DC=example,DC=org"}\n'
                '  {user: "CN=Doe\\\\, Judy,O=jsstore tests"}\n'
                "] }\n"),
        "first": f"tls {{ {files}, handshake_first: true }}\n",
        "auto": f"tls {{ {files}, handshake_first: auto }}\n",
        "timeout": f"tls {{ {files}, timeout: 0.5 }}\n",
    }


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    certs = make_certs(tmp_path_factory.mktemp("certs"))
    certs.alice = certs.client("alice", cn="alice", emails=("alice@example.com",))
    certs.bob = certs.client("bob", cn="bob", ou="dev", dns=("bob.example.com",))
    certs.carol = certs.client("carol", cn="carol", dns=("carol.example.com",))
    certs.dave = certs.client("dave", cn="dave", uris=("spiffe://example.org/dave",))
    certs.erin = certs.client("erin", cn="erin", ou="ops")
    certs.grace = certs.client("grace", subject={"DC": "org", "DC2": "example",
                                                 "E": "grace@example.org", "CN": "grace"})
    certs.heidi = certs.client("heidi", subject={"DC": "org", "DC2": "example",
                                                 "CN": "heidi"})
    certs.ivan = certs.client("ivan", subject={"DC": "org", "DC2": "example",
                                               "E": "ivan@example.org", "CN": "heidi"})
    certs.judy = certs.client("judy", subject={"E": "judy@example.org", "O": "jsstore tests",
                                               "CN": "Doe, Judy"})
    certs.nobody = certs.client("nobody", cn="nobody", emails=("nobody@example.com",))
    certs.stranger = certs.client("stranger", cn="alice", emails=("alice@example.com",),
                                  other_ca=True)
    return certs


@pytest.fixture(scope="module")
def servers(certs, tmp_path_factory):
    """{(configuration name, kind): running server}: each configuration on both."""
    require_nats_server()
    yield from running_both(tmp_path_factory, _configs(certs))


CASES = [   # (configuration, client certificate, nats-py options, expected)
    ("tls", None, {}, ("connected",)),
    ("verify", "alice", {}, ("connected",)),
    ("verify", None, {}, ("closed",)),                    # no certificate
    ("verify", "stranger", {}, ("closed",)),              # signed by another CA
    ("map", "alice", {}, ("connected",)),                 # email SAN
    ("map", "bob", {}, ("connected",)),                   # subject DN
    ("map", "carol", {}, ("connected",)),                 # DNS SAN
    ("map", "dave", {}, ("connected",)),                  # URI SAN
    ("map", "erin", {}, ("connected",)),                  # the same RDNs, reordered
    ("map", "grace", {}, ("connected",)),                 # subject string with its DCs
    ("map", "heidi", {}, ("connected",)),                 # subject as a DN, with DCs
    ("map", "ivan", {}, ("-ERR", "Authorization Violation")),   # heidi's DN with an E=
    ("map", "judy", {}, ("connected",)),                  # Go's escaping of the subject
    ("map", "nobody", {}, ("-ERR", "Authorization Violation")),
    ("map", None, {}, ("closed",)),
    ("map", "stranger", {}, ("closed",)),
    ("first", None, {"tls_handshake_first": True}, ("connected",)),
    ("first", None, {}, ("closed",)),                     # waits for an INFO never sent
    ("tls", None, {"tls_handshake_first": True}, ("closed",)),
    ("auto", None, {"tls_handshake_first": True}, ("connected",)),
    ("auto", None, {}, ("connected",)),                   # INFO after the fallback delay
]


@pytest.mark.parametrize("config,cert,options,expected", CASES,
                         ids=[f"{c[0]}-{c[1]}-{'first' if c[2] else 'info'}" for c in CASES])
def test_client_outcome(servers, certs, config, cert, options, expected):
    context = certs.client_context(getattr(certs, cert) if cert else None)

    async def main():
        return {kind: await outcome(f"tls://127.0.0.1:{servers[config, kind].port}",
                                    tls=context, **options) for kind in KINDS}

    got = asyncio.run(main())
    assert got["jsstore"] == got["nats-server"] == expected


@pytest.mark.parametrize("config", ["tls", "verify", "map"])
def test_info_tls_fields(servers, config):
    """INFO (in plain text, before the handshake) has nats-server's TLS fields, in its
    order around max_payload."""
    infos = {kind: read_info(servers[config, kind].port) for kind in KINDS}
    for kind, info in infos.items():
        keys = [k for k in info if k in SECURITY_KEYS or k == "max_payload"]
        infos[kind] = ({k: info[k] for k in SECURITY_KEYS if k in info}, keys)
    assert infos["jsstore"] == infos["nats-server"]
    assert infos["jsstore"][0]["tls_required"] is True
    assert infos["jsstore"][0].get("tls_verify") is (config != "tls" or None)


@pytest.mark.parametrize("config", ["first", "auto"])
def test_info_after_tls_first_handshake(servers, certs, config):
    context = certs.client_context()
    infos = {}
    for kind in KINDS:
        info = read_info(servers[config, kind].port,
                     lambda sock: context.wrap_socket(sock, server_hostname="127.0.0.1"))
        infos[kind] = {k: info[k] for k in SECURITY_KEYS if k in info}
    assert infos["jsstore"] == infos["nats-server"] == {"tls_required": True}


def test_tls_first_fallback_toread_info(servers):
    """handshake_first: auto -- a client that says nothing gets INFO in plain text."""
    infos = {kind: {k: v for k, v in read_info(servers["auto", kind].port).items()
                    if k in SECURITY_KEYS} for kind in KINDS}
    assert infos["jsstore"] == infos["nats-server"] == {"tls_required": True}


def _afterread_info(port: int, send: bytes | None) -> bytes:
    """What a plain-text client gets after INFO (having sent `send`) until the server
    closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        data = b""
        while b"\r\n" not in data:
            data += sock.recv(4096)
        rest = data[data.index(b"\r\n") + 2:]
        if send:
            sock.sendall(send)
        while chunk := sock.recv(4096):
            rest += chunk
        return rest


@pytest.mark.parametrize("send", [b"CONNECT {}\r\nPING\r\n", None],
                         ids=["plain-connect", "silent"])
def test_plain_text_client_is_closed(servers, send):
    """A client that answers INFO in plain text, or says nothing until the handshake
    times out (0.5 s here), is closed without a word."""
    got = {kind: _afterread_info(servers["timeout", kind].port, send) for kind in KINDS}
    assert got["jsstore"] == got["nats-server"] == b""


def test_mapped_user_permissions(servers, certs):
    """The user a certificate maps to brings its permissions: bob may publish on bob.>
    only; alice (no permissions) anywhere."""
    async def errors_of(port: int, cert) -> list[str]:
        seen, failed = [], asyncio.Event()

        async def on_error(exc):
            seen.append(str(exc))
            failed.set()

        nc = await nats.connect(f"tls://127.0.0.1:{port}", tls=certs.client_context(cert),
                                allow_reconnect=False, error_cb=on_error)
        await nc.publish("bob.ok", b"1")
        await nc.publish("elsewhere", b"2")
        await nc.flush()
        if cert is certs.bob:
            await asyncio.wait_for(failed.wait(), 5)
        await nc.close()
        return seen

    async def main():
        return {(kind, who): await errors_of(servers["map", kind].port, getattr(certs, who))
                for kind in KINDS for who in ("alice", "bob")}

    got = asyncio.run(main())
    for who in ("alice", "bob"):
        assert got["jsstore", who] == got["nats-server", who]
    assert got["jsstore", "alice"] == []
    assert got["jsstore", "bob"] == ['nats: permissions violation for publish to "elsewhere"']


def test_startup_log_line(servers):
    for kind in KINDS:
        assert "TLS required for client connections" in servers["tls", kind].log_text()
