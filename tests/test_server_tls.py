"""TLS on client connections, against the real nats-server and `jsstore serve` started
with the same configuration file (certificates made by tests/tlscerts.py): what INFO
says, and what nats-py clients get -- connected, an -ERR, or the connection closed during
or right after the handshake -- with and without a client certificate, with one from
another CA, with TLS-first, and with verify_and_map naming users (with permissions)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import ssl
import subprocess
import sys

import pytest

from jsstoreserver import SRC, start_jsstore_server
from natsserver import nats_server_binary, require_nats_server, start_nats_server
from tlscerts import make_certs

nats = pytest.importorskip("nats")

pytestmark = pytest.mark.natsserver

KINDS = ("jsstore", "nats-server")


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


def start(kind: str, directory, config_path: str, extra=()):
    if kind == "jsstore":
        return start_jsstore_server(directory / "store", ["-c", config_path, *extra])
    return start_nats_server(None, ["-c", config_path, *extra], jetstream=False)


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
    running = {}
    try:
        for name, text in _configs(certs).items():
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


def _info(port: int, wrap=None) -> dict:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        stream = wrap(sock) if wrap else sock
        data = b""
        while b"\r\n" not in data:
            chunk = stream.recv(4096)
            assert chunk, "closed before INFO"
            data += chunk
    assert data.startswith(b"INFO ")
    return json.loads(data[5:data.index(b"\r\n")])


SECURITY_KEYS = ("auth_required", "tls_required", "tls_verify", "tls_available", "nonce")


@pytest.mark.parametrize("config", ["tls", "verify", "map"])
def test_info_tls_fields(servers, config):
    """INFO (in plain text, before the handshake) has nats-server's TLS fields, in its
    order around max_payload."""
    infos = {kind: _info(servers[config, kind].port) for kind in KINDS}
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
        info = _info(servers[config, kind].port,
                     lambda sock: context.wrap_socket(sock, server_hostname="127.0.0.1"))
        infos[kind] = {k: info[k] for k in SECURITY_KEYS if k in info}
    assert infos["jsstore"] == infos["nats-server"] == {"tls_required": True}


def test_tls_first_fallback_to_info(servers):
    """handshake_first: auto -- a client that says nothing gets INFO in plain text."""
    infos = {kind: {k: v for k, v in _info(servers["auto", kind].port).items()
                    if k in SECURITY_KEYS} for kind in KINDS}
    assert infos["jsstore"] == infos["nats-server"] == {"tls_required": True}


def _after_info(port: int, send: bytes | None) -> bytes:
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
    got = {kind: _after_info(servers["timeout", kind].port, send) for kind in KINDS}
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


def test_command_line_flags(certs, tmp_path):
    """--tlsverify --tlscert --tlskey --tlscacert: the same INFO and the same outcomes."""
    require_nats_server()
    flags = ["--tlsverify", "--tlscert", certs.server_cert, "--tlskey", certs.server_key,
             "--tlscacert", certs.ca]
    running = {}
    try:
        for kind in KINDS:
            if kind == "jsstore":
                running[kind] = start_jsstore_server(tmp_path / "store", flags)
            else:
                running[kind] = start_nats_server(None, flags, jetstream=False)
        infos = {kind: {k: v for k, v in _info(srv.port).items() if k in SECURITY_KEYS}
                 for kind, srv in running.items()}
        assert infos["jsstore"] == infos["nats-server"] == {"tls_required": True,
                                                            "tls_verify": True}

        async def main():
            return {(kind, cert): await outcome(
                        f"tls://127.0.0.1:{srv.port}",
                        tls=certs.client_context(getattr(certs, cert) if cert else None))
                    for kind, srv in running.items() for cert in ("alice", None)}

        got = asyncio.run(main())
        assert got["jsstore", "alice"] == got["nats-server", "alice"] == ("connected",)
        assert got["jsstore", None] == got["nats-server", None] == ("closed",)
    finally:
        for server in running.values():
            server.stop()


BAD_CONFIGS = {    # tls block -> what both servers say (None: jsstore's own words)
    'key_file: "{key}"': "missing 'cert_file' in TLS configuration",
    'cert_file: "{cert}"': "missing 'key_file' in TLS configuration",
    'cert_file: "{cert}", key_file: "{key}", bogus: 1': 'unknown field "bogus"',
    'cert_file: "{cert}", key_file: "{key}", verify: "yes"':
        "expected 'verify' to be a boolean",
    'cert_file: "{cert}", key_file: "{key}", cipher_suites: ["x"]': None,
    'cert_file: "{cert}", key_file: "{key}", handshake_first: 0':
        'field "handshake_first" should be a boolean or a string, got int64',
    'cert_file: "{cert}", key_file: "{key}", handshake_first: "soon"':
        'field "handshake_first"\'s value "soon" is invalid',
    'cert_file: "{cert}.missing", key_file: "{key}"': None,
}


@pytest.mark.parametrize("block", list(BAD_CONFIGS))
def test_configuration_errors(certs, tmp_path, block):
    """A tls block nats-server refuses is refused by jsstore with the same words; one
    asking for what jsstore does not do is refused too, never ignored."""
    binary = nats_server_binary() or require_nats_server()
    path = tmp_path / "server.conf"
    path.write_text("tls { " + block.format(cert=certs.server_cert, key=certs.server_key)
                    + " }\n")
    jsstore = subprocess.run([sys.executable, "-m", "jsstore", "serve", "-c", str(path),
                              "-p", "-1", "-a", "127.0.0.1"], capture_output=True, text=True,
                             timeout=60, env={**os.environ, "PYTHONPATH": SRC})
    assert jsstore.returncode != 0
    phrase = BAD_CONFIGS[block]
    if phrase is None:
        return
    nats_run = subprocess.run([binary, "-c", str(path), "-p", "-1", "-a", "127.0.0.1"],
                              capture_output=True, text=True, timeout=60)
    assert nats_run.returncode != 0
    assert phrase in nats_run.stdout + nats_run.stderr
    assert phrase in jsstore.stderr


def test_varz_tls_fields(certs, tmp_path):
    """/varz says what INFO says, and the handshake timeout."""
    import urllib.request

    from natsserver import free_port

    require_nats_server()
    path = tmp_path / "server.conf"
    path.write_text(f'tls {{ cert_file: "{certs.server_cert}", key_file: "{certs.server_key}",'
                    f' ca_file: "{certs.ca}", verify: true, timeout: 3 }}\n')
    pages = {}
    for kind in KINDS:
        http = free_port()
        server = start(kind, tmp_path / kind, str(path), ["-m", str(http)])
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{http}/varz", timeout=10) as page:
                varz = json.loads(page.read())
        finally:
            server.stop()
        pages[kind] = {k: varz.get(k) for k in ("tls_required", "tls_verify", "tls_timeout",
                                                "auth_timeout")}
    assert pages["jsstore"] == pages["nats-server"] == {"tls_required": True,
                                                        "tls_verify": True, "tls_timeout": 3,
                                                        "auth_timeout": 4}


@pytest.mark.parametrize("flags,phrase", [
    (["--tls"], "TLS Server certificate must be present and valid"),
    (["--tlsverify", "--tlscert", "{cert}"], "TLS Server private key must be present and valid"),
])
def test_command_line_flag_errors(certs, flags, phrase):
    binary = nats_server_binary() or require_nats_server()
    flags = [flag.format(cert=certs.server_cert) for flag in flags]
    runs = [subprocess.run([sys.executable, "-m", "jsstore", "serve", "-p", "-1", *flags],
                           capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PYTHONPATH": SRC}),
            subprocess.run([binary, "-p", "-1", *flags], capture_output=True, text=True,
                           timeout=60)]
    for run in runs:
        assert phrase in run.stdout + run.stderr


def test_startup_log_line(servers):
    for kind in KINDS:
        assert "TLS required for client connections" in servers["tls", kind].log_text()


def test_connz_tls_fields(certs, tmp_path):
    """/connz shows each TLS connection's version and cipher suite (which suite the two
    TLS libraries pick can differ: only its presence is compared) and TLS-first."""
    import urllib.request

    from natsserver import free_port

    require_nats_server()
    path = tmp_path / "server.conf"
    path.write_text(f'tls {{ cert_file: "{certs.server_cert}", key_file: "{certs.server_key}",'
                    f' handshake_first: auto }}\n')
    got = {}
    for kind in KINDS:
        http = free_port()
        server = start(kind, tmp_path / kind, str(path), ["-m", str(http)])

        async def connz():
            url = f"tls://127.0.0.1:{server.port}"
            first = await nats.connect(url, tls=certs.client_context(), tls_handshake_first=True)
            later = await nats.connect(url, tls=certs.client_context())
            with urllib.request.urlopen(f"http://127.0.0.1:{http}/connz", timeout=10) as page:
                found = json.loads(page.read())["connections"]
            await first.close()
            await later.close()
            return found

        try:
            connections = asyncio.run(connz())
        finally:
            server.stop()
        got[kind] = [(c.get("tls_version"), "tls_cipher_suite" in c, c.get("tls_first"))
                     for c in sorted(connections, key=lambda c: c["cid"])]
    assert got["jsstore"] == got["nats-server"] == [("1.3", True, True), ("1.3", True, None)]


def test_nkey_user_over_tls_first(certs, tmp_path):
    """An nkey user over TLS-first: the nonce comes in the INFO after the handshake."""
    nkeys = pytest.importorskip("nkeys")
    require_nats_server()
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER).decode()
    key = nkeys.from_seed(bytearray(seed.encode())).public_key.decode()
    path = tmp_path / "server.conf"
    path.write_text(f'tls {{ cert_file: "{certs.server_cert}", key_file: "{certs.server_key}",'
                    f' handshake_first: true }}\n'
                    f'authorization {{ users: [ {{ nkey: {key} }} ] }}\n')
    got = {}
    for kind in KINDS:
        server = start(kind, tmp_path / kind, str(path))
        try:
            url = f"tls://127.0.0.1:{server.port}"
            got[kind] = [asyncio.run(outcome(url, tls=certs.client_context(),
                                             tls_handshake_first=True, nkeys_seed_str=s))
                         for s in (seed, nkeys.encode_seed(os.urandom(32),
                                                           nkeys.PREFIX_BYTE_USER).decode())]
        finally:
            server.stop()
    assert got["jsstore"] == got["nats-server"] == [("connected",),
                                                    ("-ERR", "Authorization Violation")]
