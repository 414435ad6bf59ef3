"""KV buckets and object stores through nats-py, against `jsstore serve` and nats-server
alike."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os

import pytest

from bothservers import run, server  # noqa: F401  (the fixture)

nats = pytest.importorskip("nats")
from nats.js import api  # noqa: E402
from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError  # noqa: E402

pytestmark = pytest.mark.natsserver


def test_kv_revisions_history_delete_and_purge(server):
    async def main():
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        kv = await js.create_key_value(bucket="cfg", history=5)
        out = {}
        out["create"] = await kv.create("color", b"red")
        with pytest.raises(KeyWrongLastSequenceError):
            await kv.create("color", b"again")
        out["update"] = await kv.update("color", b"blue", last=1)
        with pytest.raises(KeyWrongLastSequenceError):
            await kv.update("color", b"green", last=1)
        await kv.put("size", b"L")
        await kv.put("size", b"XL")
        entry = await kv.get("color")
        out["get"] = (entry.key, entry.value, entry.revision, entry.operation)
        out["by_revision"] = (await kv.get("color", revision=1)).value
        out["history"] = [(e.value, e.revision) for e in await kv.history("size")]
        out["keys"] = sorted(await kv.keys())
        await kv.delete("color")
        with pytest.raises(KeyNotFoundError):
            await kv.get("color")
        out["after_delete"] = [(e.value, e.operation) for e in await kv.history("color")]
        await kv.purge("size")
        out["after_purge"] = [(e.value, e.operation) for e in await kv.history("size")]
        out["keys_after"] = await kv.keys() if await _has_keys(kv) else []
        status = await kv.status()
        out["status"] = (status.bucket, status.history, status.values)
        await nc.close()
        return out
    out = run(main())
    assert out["create"] == 1 and out["update"] == 2
    assert out["get"] == ("color", b"blue", 2, None)
    assert out["by_revision"] == b"red"
    assert out["history"] == [(b"L", 3), (b"XL", 4)]
    assert out["keys"] == ["color", "size"]
    assert out["after_delete"] == [(b"red", None), (b"blue", None), (b"", "DEL")]
    assert out["after_purge"] == [(b"", "PURGE")]
    assert out["keys_after"] == []
    assert out["status"] == ("cfg", 5, 4)     # red, blue, DEL of color; L, XL gone; PURGE


async def _has_keys(kv) -> bool:
    try:
        await kv.keys()
    except nats.js.errors.NoKeysError:
        return False
    return True


def test_kv_watch(server):
    async def main():
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        kv = await js.create_key_value(bucket="w")
        await kv.put("a", b"1")
        watcher = await kv.watchall()
        seen = []
        async def take():
            entry = await watcher.updates(timeout=2)
            return None if entry is None else (entry.key, entry.value, entry.operation)
        seen.append(await take())                     # the current value
        seen.append(await take())                     # None: initial values done
        await kv.put("b", b"2")
        await kv.delete("a")
        seen.append(await take())
        seen.append(await take())
        await watcher.stop()
        only_b = await kv.watch("b", include_history=True)
        first = await only_b.updates(timeout=2)
        await only_b.stop()
        await nc.close()
        return seen, (first.key, first.value)
    seen, first = run(main())
    assert seen == [("a", b"1", None), None, ("b", b"2", None), ("a", b"", "DEL")]
    assert first == ("b", b"2")


def test_kv_ttl_and_limit_markers(server):
    async def main():
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        kv = await js.create_key_value(config=api.KeyValueConfig(
            bucket="t", ttl=0.4, limit_marker_ttl=1.0))
        info = await js.stream_info("KV_t")
        await kv.put("gone", b"soon")
        await kv.create("short", b"x", msg_ttl=1.0)
        headers = (await js.get_last_msg("KV_t", "$KV.t.short")).headers
        await asyncio.sleep(1.6)
        results = {}
        for key in ("gone", "short"):
            try:
                results[key] = (await kv.get(key)).value
            except KeyNotFoundError:
                results[key] = None
        await nc.close()
        return info.config, headers, results
    config, headers, results = run(main())
    assert config.allow_msg_ttl is True
    assert config.subject_delete_marker_ttl == 1.0
    assert headers["Nats-TTL"] == "1"
    assert results == {"gone": None, "short": None}


def test_object_store(server):
    async def main():
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        obs = await js.create_object_store("files")
        big = os.urandom(3 * 1024 * 1024 + 17)
        info = await obs.put("big.bin", big)
        await obs.put("small.txt", b"hello")
        got = await obs.get("big.bin")
        listed = sorted((o.name, o.size) for o in await obs.list())
        # a link, as clients write one: a meta entry pointing at another object
        target = await obs.get_info("small.txt")
        link = api.ObjectInfo(name="alias.txt", bucket="files", nuid=target.nuid,
                              options=api.ObjectMetaOptions(
                                  link=api.ObjectLink(bucket="files", name="small.txt")))
        await js.publish("$O.files.M.YWxpYXMudHh0", json.dumps(link.as_dict()).encode(),
                         headers={"Nats-Rollup": "sub"})
        via_link = await obs.get("alias.txt")
        await obs.delete("small.txt")
        after = sorted(o.name for o in await obs.list(ignore_deletes=True))
        status = await obs.status()
        await nc.close()
        return big, info, got, listed, via_link, after, status
    big, info, got, listed, via_link, after, status = run(main(), timeout=60)
    assert info.size == len(big) and info.chunks == 25
    assert got.data == big and got.info.digest == info.digest
    assert hashlib.sha256(got.data).digest() == hashlib.sha256(big).digest()
    assert listed == [("big.bin", len(big)), ("small.txt", 5)]
    assert via_link.data == b"hello"
    assert after == ["alias.txt", "big.bin"]
    assert status.bucket == "files"
