"""The README's TLS and nkey configurations work as written: each fenced block is given,
unchanged, to `jsstore serve` and to nats-server (started in a directory where the
certificates it names were made), and a client connects as the README says."""

from __future__ import annotations

import asyncio
import os
import re

import pytest

from jsstoreserver import start_jsstore_server
from natsserver import require_nats_server, start_nats_server
from tlscerts import make_certs

nats = pytest.importorskip("nats")

pytestmark = pytest.mark.natsserver

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")
KINDS = ("jsstore", "nats-server")


def _readme() -> str:
    with open(README) as f:
        return f.read()


def _block(marker: str) -> str:
    """The README's fenced block that contains `marker`."""
    blocks = re.findall(r"```[a-z]*\n(.*?)```", _readme(), re.S)
    found = [block for block in blocks if marker in block]
    assert len(found) == 1, f"one README block with {marker!r} expected"
    return found[0]


def _run(tmp_path, monkeypatch, config: str, check) -> dict:
    """Start both servers on `config` (in tmp_path) and run `check(url)` against each."""
    require_nats_server()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "server.conf").write_text(config)
    got = {}
    for kind in KINDS:
        if kind == "jsstore":
            server = start_jsstore_server(tmp_path / "store", ["-c", "server.conf"])
        else:
            server = start_nats_server(None, ["-c", "server.conf"], jetstream=False)
        try:
            got[kind] = asyncio.run(check(f"tls://127.0.0.1:{server.port}"
                                          if "tls {" in config else server.url))
        finally:
            server.stop()
    return got


async def _publish_twice(url: str, **options) -> list[str]:
    """Publish on orders.new (allowed) and elsewhere (not): the errors the client gets."""
    seen, failed = [], asyncio.Event()

    async def on_error(exc):
        seen.append(str(exc))
        failed.set()

    nc = await nats.connect(url, allow_reconnect=False, error_cb=on_error, **options)
    await nc.publish("orders.new", b"1")
    await nc.publish("elsewhere", b"2")
    await nc.flush()
    await asyncio.wait_for(failed.wait(), 5)
    await nc.close()
    return seen


EXPECTED = ['nats: permissions violation for publish to "elsewhere"']


def test_readme_tls_configuration(tmp_path, monkeypatch):
    certs = make_certs(tmp_path / "certs")
    alice = certs.client("alice", cn="alice", emails=("alice@example.com",))
    context = certs.client_context(alice)
    got = _run(tmp_path, monkeypatch, _block("verify_and_map"),
               lambda url: _publish_twice(url, tls=context))
    assert got["jsstore"] == got["nats-server"] == EXPECTED


def test_readme_nkey_configuration(tmp_path, monkeypatch):
    pytest.importorskip("nkeys")
    seed = re.search(r"`(SU[A-Z2-7]{56})`", _readme()).group(1)
    got = _run(tmp_path, monkeypatch, _block("nkey:"),
               lambda url: _publish_twice(url, nkeys_seed_str=seed))
    assert got["jsstore"] == got["nats-server"] == EXPECTED
