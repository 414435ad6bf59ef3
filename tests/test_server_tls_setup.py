"""TLS settings against nats-server: the --tls* flags, configuration errors, the startup
and monitoring (/varz, /connz) views of TLS, and an nkey user over TLS-first."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import urllib.request

import pytest

from jsstoreserver import SRC, start_jsstore_server
from natsserver import free_port, nats_server_binary, require_nats_server, start_nats_server
from tlsboth import KINDS, SECURITY_KEYS, outcome, read_info, start
from tlscerts import make_certs

nats = pytest.importorskip("nats")

pytestmark = pytest.mark.natsserver


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    certs = make_certs(tmp_path_factory.mktemp("certs"))
    certs.alice = certs.client("alice", cn="alice", emails=("alice@example.com",))
    return certs


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
        infos = {kind: {k: v for k, v in read_info(srv.port).items() if k in SECURITY_KEYS}
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


def test_connz_tls_fields(certs, tmp_path):
    """/connz shows each TLS connection's version and cipher suite (which suite the two
    TLS libraries pick can differ: only its presence is compared) and TLS-first."""
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
