"""NKey users against the real nats-server and `jsstore serve` started with the same
configuration file: the nonce in INFO, nats-py clients with the right seed, another seed
or none, raw CONNECTs without a signature or with a bad one, the nkey user's account
and permissions, an nkey no_auth_user, and the configuration errors."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import subprocess
import sys

import pytest

from jsstoreserver import SRC
from natsserver import nats_server_binary, require_nats_server
from tlsboth import KINDS, running_both

nats = pytest.importorskip("nats")
nkeys = pytest.importorskip("nkeys")

pytestmark = pytest.mark.natsserver



def new_seed() -> str:
    return nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER).decode()


def public_key(seed: str) -> str:
    return nkeys.from_seed(bytearray(seed.encode())).public_key.decode()


SEEDS = {name: new_seed() for name in ("a", "b", "guest", "stranger")}
KEYS = {name: public_key(seed) for name, seed in SEEDS.items()}

CONFIG = f"""
accounts {{
  A: {{ users: [
    {{ nkey: {KEYS["a"]}, permissions: {{ publish: "a.>", subscribe: "_INBOX.>" }} }}
    {{ user: pw, password: secret }}
  ] }}
  B: {{ users: [ {{ nkey: {KEYS["b"]} }}, {{ nkey: {KEYS["guest"]} }} ] }}
}}
"""
NO_AUTH = CONFIG + f"no_auth_user: {KEYS['guest']}\n"


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """{(configuration, kind): running server} for CONFIG and NO_AUTH on both."""
    require_nats_server()
    yield from running_both(tmp_path_factory, {"plain": CONFIG, "no_auth": NO_AUTH})


async def outcome(port: int, **options) -> tuple:
    """("connected",) or ("-ERR", text) for a nats-py client."""
    try:
        nc = await nats.connect(f"nats://127.0.0.1:{port}", allow_reconnect=False,
                                max_reconnect_attempts=0, connect_timeout=5, **options)
    except nats.errors.Error as exc:
        return ("-ERR", str(exc).split("'")[1] if "'" in str(exc) else str(exc))
    try:
        await nc.flush()
        return ("connected",)
    finally:
        await nc.close()


CASES = [   # (configuration, nats-py options, expected)
    ("plain", {"nkeys_seed_str": SEEDS["a"]}, ("connected",)),
    ("plain", {"nkeys_seed_str": SEEDS["b"]}, ("connected",)),
    ("plain", {"nkeys_seed_str": SEEDS["stranger"]}, ("-ERR", "Authorization Violation")),
    ("plain", {}, ("-ERR", "Authorization Violation")),
    ("plain", {"user": "pw", "password": "secret"}, ("connected",)),
    ("no_auth", {}, ("connected",)),
    ("no_auth", {"nkeys_seed_str": SEEDS["a"]}, ("connected",)),
    ("no_auth", {"user": "pw", "password": "secret"}, ("connected",)),
    ("no_auth", {"nkeys_seed_str": SEEDS["stranger"]}, ("-ERR", "Authorization Violation")),
]


@pytest.mark.parametrize("config,options,expected", CASES)
def test_client_outcome(servers, config, options, expected):
    async def main():
        return {kind: await outcome(servers[config, kind].port, **options) for kind in KINDS}

    got = asyncio.run(main())
    assert got["jsstore"] == got["nats-server"] == expected


class Raw:
    """A plain socket: INFO read, one CONNECT (built from INFO) sent with a PING."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""
        self.info = json.loads(self.line()[5:])

    def line(self) -> bytes:
        """The next line (b"<closed>" once the server has closed the connection)."""
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                return b"<closed>"
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def connect(self, options: dict) -> bytes:
        """The lines that come back up to the PONG or the connection's end."""
        self.sock.sendall(b"CONNECT " + json.dumps({"verbose": False, **options}).encode()
                          + b"\r\nPING\r\n")
        lines = []
        while lines[-1:] not in ([b"PONG"], [b"<closed>"]):
            lines.append(self.line())
        return b"\r\n".join(lines)

    def account(self, options: dict) -> str | bytes:
        """The account a CONNECT (protocol 1) puts the client in, as the INFO after the
        PONG names it; what came back instead when it was refused."""
        answer = self.connect({"protocol": 1, **options})
        if answer != b"PONG":
            return answer
        return json.loads(self.line()[5:])["remote_account"]

    def close(self):
        self.sock.close()


def _sign(seed: str, data: bytes, urlsafe: bool = False) -> str:
    signature = nkeys.from_seed(bytearray(seed.encode())).sign(data)
    if urlsafe:
        return base64.urlsafe_b64encode(signature).rstrip(b"=").decode()
    return base64.b64encode(signature).decode()


RAW_CASES = {   # name -> CONNECT options from the INFO's nonce
    "signed": lambda n: {"nkey": KEYS["a"], "sig": _sign(SEEDS["a"], n)},
    "signed-urlsafe": lambda n: {"nkey": KEYS["a"], "sig": _sign(SEEDS["a"], n, True)},
    "no-sig": lambda n: {"nkey": KEYS["a"]},
    "sig-not-base64": lambda n: {"nkey": KEYS["a"], "sig": "not base64!"},
    "other-bytes-signed": lambda n: {"nkey": KEYS["a"], "sig": _sign(SEEDS["a"], n + b"x")},
    "other-seed-signed": lambda n: {"nkey": KEYS["a"], "sig": _sign(SEEDS["b"], n)},
    "unknown-key": lambda n: {"nkey": KEYS["stranger"], "sig": _sign(SEEDS["stranger"], n)},
    "key-as-user": lambda n: {"user": KEYS["a"]},
    "unknown-key-with-password": lambda n: {"nkey": KEYS["stranger"], "user": "pw",
                                            "pass": "secret"},
}


@pytest.mark.parametrize("case", list(RAW_CASES))
def test_raw_connect(servers, case):
    got = {}
    for kind in KINDS:
        raw = Raw(servers["plain", kind].port)
        try:
            got[kind] = raw.connect(RAW_CASES[case](raw.info["nonce"].encode()))
        finally:
            raw.close()
    expected = (b"PONG" if case.startswith("signed")
                else b"-ERR 'Authorization Violation'\r\n<closed>")
    assert got["jsstore"] == got["nats-server"] == expected


ACCOUNT_CASES = [     # (configuration, CONNECT options from the nonce, account)
    ("plain", lambda n: {"nkey": KEYS["a"], "sig": _sign(SEEDS["a"], n)}, "A"),
    ("plain", lambda n: {"nkey": KEYS["b"], "sig": _sign(SEEDS["b"], n)}, "B"),
    ("plain", lambda n: {"user": "pw", "pass": "secret"}, "A"),
    ("no_auth", lambda n: {}, "B"),
    ("no_auth", lambda n: {"nkey": KEYS["a"], "sig": _sign(SEEDS["a"], n)}, "A"),
    # the no_auth_user's key named in CONNECT needs no signature (nor a right one)
    ("no_auth", lambda n: {"nkey": KEYS["guest"]}, "B"),
    ("no_auth", lambda n: {"nkey": KEYS["guest"], "sig": _sign(SEEDS["a"], n)}, "B"),
    # a client that gives a password or a token is no longer one that gives nothing
    ("no_auth", lambda n: {"pass": "secret"}, b"-ERR 'Authorization Violation'\r\n<closed>"),
    ("no_auth", lambda n: {"auth_token": "x"}, b"-ERR 'Authorization Violation'\r\n<closed>"),
]


@pytest.mark.parametrize("config,options,account", ACCOUNT_CASES)
def test_account_of_nkey_user(servers, config, options, account):
    got = {}
    for kind in KINDS:
        raw = Raw(servers[config, kind].port)
        try:
            got[kind] = raw.account(options(raw.info["nonce"].encode()))
        finally:
            raw.close()
    assert got["jsstore"] == got["nats-server"] == account


def test_info_nonce(servers):
    """INFO carries a fresh nonce per connection (15 URL-safe base64 characters, after
    client_ip), and auth_required."""
    infos = {}
    for kind in KINDS:
        raws = [Raw(servers["plain", kind].port) for _ in range(2)]
        for raw in raws:
            raw.close()
        first, second = (raw.info for raw in raws)
        assert first["nonce"] != second["nonce"]
        keys = list(first)
        infos[kind] = (first["auth_required"], len(first["nonce"]),
                       set(first["nonce"]) <= set(
                           "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
                       keys.index("nonce") == keys.index("client_ip") + 1)
    assert infos["jsstore"] == infos["nats-server"] == (True, 15, True, True)


def test_nkey_permissions(servers):
    """The nkey user's permissions apply: a may publish on a.> only."""
    async def errors_of(port: int) -> list[str]:
        seen, failed = [], asyncio.Event()

        async def on_error(exc):
            seen.append(str(exc))
            failed.set()

        nc = await nats.connect(f"nats://127.0.0.1:{port}", nkeys_seed_str=SEEDS["a"],
                                allow_reconnect=False, error_cb=on_error)
        await nc.publish("a.ok", b"1")
        await nc.publish("b.no", b"2")
        await nc.flush()
        await asyncio.wait_for(failed.wait(), 5)
        await nc.close()
        return seen

    async def main():
        return {kind: await errors_of(servers["plain", kind].port) for kind in KINDS}

    got = asyncio.run(main())
    assert got["jsstore"] == got["nats-server"] == [
        'nats: permissions violation for publish to "b.no"']


BAD_CONFIGS = {
    "not-a-key": "authorization { users: [ { nkey: UNOTAKEY } ] }\n",
    "account-key": "authorization { users: [ { nkey: %s } ] }\n" % (
        "A" + KEYS["a"][1:]),
    "with-user": "authorization { users: [ { nkey: %s, user: x } ] }\n" % KEYS["a"],
    "with-password": "authorization { users: [ { nkey: %s, password: x } ] }\n" % KEYS["a"],
    "no-auth-unknown": CONFIG + f"no_auth_user: {KEYS['stranger']}\n",
}


@pytest.mark.parametrize("case", list(BAD_CONFIGS))
def test_configuration_errors(tmp_path, case):
    """Both refuse to start, with nats-server's words for what is wrong."""
    binary = nats_server_binary() or require_nats_server()
    path = tmp_path / "server.conf"
    path.write_text(BAD_CONFIGS[case])
    env = {**os.environ, "PYTHONPATH": SRC}
    runs = {
        "jsstore": subprocess.run([sys.executable, "-m", "jsstore", "serve", "-c", str(path),
                                   "-p", "-1", "-a", "127.0.0.1"], capture_output=True,
                                  text=True, timeout=60, env=env),
        "nats-server": subprocess.run([binary, "-c", str(path), "-p", "-1", "-a", "127.0.0.1"],
                                      capture_output=True, text=True, timeout=60),
    }
    for run in runs.values():
        assert run.returncode != 0
    nats_text = runs["nats-server"].stdout + runs["nats-server"].stderr
    jsstore_text = runs["jsstore"].stderr
    if case == "no-auth-unknown":
        phrase = "not present as user or nkey"
    elif case in ("not-a-key", "account-key"):
        phrase = "Not a valid public nkey for a user"
    else:
        phrase = "Nkey users do not take usernames or passwords"
    assert phrase in nats_text and phrase in jsstore_text
