"""Buckets across the three ways in: a key-value bucket and object stores (a chunked
multi-megabyte object, a link to it and a link to its store) made in process — with the
synchronous API and with the asyncio one — are read by nats-py through `jsstore serve` on
the same directory; made by nats-py through `jsstore serve`, they are read in process once
the server has stopped (a store directory is locked by one process).  The same body also
runs against nats-server, and what nats-py sees there is what it sees here."""

from __future__ import annotations

import base64
import json
import random

import nats
import pytest
from bothservers import run
from jsstoreserver import jsstore_server
from threeways import NATS_ERRORS, assert_same, outcome, plain, three_ways

import jsstore

BIG = random.Random(7).randbytes(3 * 1024 * 1024 + 17)    # 3 MiB and a bit: 25 chunks


def link_meta(bucket: str, name: str, to_bucket: str, to_name: str | None) -> tuple:
    """The subject and JSON of a link's meta entry, as the Go client's AddLink and
    AddBucketLink write it (for nats-py, which has no call to make one)."""
    token = base64.urlsafe_b64encode(name.encode()).decode()
    link = {"bucket": to_bucket} if to_name is None else {"bucket": to_bucket, "name": to_name}
    info = {"name": name, "bucket": bucket, "nuid": "L" * 22, "options": {"link": link}}
    return f"$O.{bucket}.M.{token}", json.dumps(info).encode()


async def write(js) -> None:
    """The buckets, made through an asyncio JetStream context (jsstore.aio's or nats-py's)."""
    kv = await js.create_key_value(bucket="CFG", history=5, limit_marker_ttl=5)
    await kv.put("color", b"red")
    await kv.put("color", b"blue")
    await kv.put("size", b"L")
    await kv.delete("size")
    await kv.create("token", b"t", msg_ttl=3600)
    files = await js.create_object_store("FILES", description="files")
    await files.put("big.bin", BIG)
    await files.put("note.txt", b"hello")
    links = await js.create_object_store("LINKS")
    if hasattr(links, "add_link"):
        await links.add_link("big-link", await files.get_info("big.bin"))
        await links.add_bucket_link("all", files)
    else:
        for name, to_name in (("big-link", "big.bin"), ("all", None)):
            await js.publish(*link_meta("LINKS", name, "FILES", to_name),
                             headers={"Nats-Rollup": "sub"})


def write_sync(js) -> None:
    """The same buckets, made through the synchronous API."""
    kv = js.create_key_value(bucket="CFG", history=5, limit_marker_ttl=5)
    kv.put("color", b"red")
    kv.put("color", b"blue")
    kv.put("size", b"L")
    kv.delete("size")
    kv.create("token", b"t", msg_ttl=3600)
    files = js.create_object_store("FILES", description="files")
    files.put("big.bin", BIG)
    files.put("note.txt", b"hello")
    links = js.create_object_store("LINKS")
    links.add_link("big-link", files.get_info("big.bin"))
    links.add_bucket_link("all", files)


async def read(js, errors) -> list:
    """What an asyncio JetStream context reads of the buckets, as plain records."""
    out = []
    kv = await js.key_value("CFG")
    out.append(await outcome(kv.get("color")))
    out.append(await outcome(kv.get("size")))
    out.append(await outcome(kv.history("color")))
    out.append(await outcome(kv.keys()))
    status = await kv.status()
    out.append((status.bucket, status.values, status.history, status.marker_ttl))
    out.append((await js.get_last_msg("KV_CFG", "$KV.CFG.token")).headers["Nats-TTL"])
    files = await js.object_store("FILES")
    big = await files.get("big.bin")
    out.append((plain(big.info), big.data == BIG))
    out.append(await outcome(files.get("note.txt")))
    out.append(sorted((i.name, i.size, i.chunks) for i in await files.list()))
    links = await js.object_store("LINKS")
    through = await links.get("big-link")
    out.append((through.info.name, through.info.bucket, through.data == BIG))
    out.append(await outcome(links.get_info("all")))
    out.append(await outcome(links.get("all")))
    out.append((await files.status()).description)
    return out


def read_sync(js) -> list:
    """The same records, read through the synchronous API."""
    out = []
    kv = js.key_value("CFG")
    out.append(plain(kv.get("color")))
    try:
        kv.get("size")
    except Exception as exc:
        out.append(plain(exc))
    out.append(plain(kv.history("color")))
    out.append(plain(kv.keys()))
    status = kv.status()
    out.append((status.bucket, status.values, status.history, status.marker_ttl))
    out.append(js.get_msg("KV_CFG", last_by_subject="$KV.CFG.token").headers["Nats-TTL"])
    files = js.object_store("FILES")
    big = files.get("big.bin")
    out.append((plain(big.info), big.data == BIG))
    out.append(plain(files.get("note.txt")))
    out.append(sorted((i.name, i.size, i.chunks) for i in files.list()))
    links = js.object_store("LINKS")
    through = links.get("big-link")
    out.append((through.info.name, through.info.bucket, through.data == BIG))
    out.append(plain(links.get_info("all")))
    try:
        links.get("all")
    except Exception as exc:
        out.append(plain(exc))
    out.append(files.status().description)
    return out


def check(records: list) -> None:
    """What every way must read back (beyond reading the same each way)."""
    color, size, history, keys, status, ttl, big, note, listed, through, all_link, \
        all_get, description = records
    assert color["value"] == b"blue" and color["revision"] == 2
    assert size[:2] == ("raised", "KeyNotFoundError")
    assert [e["value"] for e in history] == [b"red", b"blue"]
    assert sorted(keys) == ["color", "token"]
    assert status == ("CFG", 5, 5, 5.0)
    assert ttl == "3600"
    assert big[1] is True and big[0]["size"] == len(BIG) and big[0]["chunks"] == 25
    assert note["data"] == b"hello"
    assert listed == [("big.bin", len(BIG), 25), ("note.txt", 5, 1)]
    assert through == ("big.bin", "FILES", True)
    assert all_link["options"]["link"] == {"type": "ObjectLink", "bucket": "FILES",
                                           "name": None}
    assert all_get[:2] == ("raised", "LinkIsABucketError")
    assert description == "files"


async def read_over_nats(url) -> list:
    nc = await nats.connect(url)
    try:
        return await read(nc.jetstream(), NATS_ERRORS)
    finally:
        await nc.close()


async def write_over_nats(url) -> None:
    nc = await nats.connect(url)
    try:
        await write(nc.jetstream())
    finally:
        await nc.close()


async def write_in_process(directory) -> None:
    async with jsstore.aio.open(directory) as js:
        await write(js)


async def read_in_process(directory) -> list:
    async with jsstore.aio.open(directory) as js:
        return await read(js, jsstore.aio.errors)


def test_made_with_the_sync_api_read_by_nats_py_through_jsstore_serve(tmp_path):
    with jsstore.open(tmp_path) as js:
        write_sync(js)
        in_process = read_sync(js)
    with jsstore_server(tmp_path) as server:
        over_nats = run(read_over_nats(server.url), timeout=60)
    check(over_nats)
    assert in_process == over_nats


def test_made_with_the_aio_api_read_by_nats_py_through_jsstore_serve(tmp_path):
    run(write_in_process(tmp_path), timeout=60)
    with jsstore_server(tmp_path) as server:
        over_nats = run(read_over_nats(server.url), timeout=60)
    check(over_nats)


def test_made_by_nats_py_through_jsstore_serve_read_in_process(tmp_path):
    with jsstore_server(tmp_path) as server:
        run(write_over_nats(server.url), timeout=60)
        over_nats = run(read_over_nats(server.url), timeout=60)
    check(over_nats)
    with jsstore.open(tmp_path) as js:
        assert read_sync(js) == over_nats
    assert run(read_in_process(tmp_path), timeout=60) == over_nats


async def write_and_read(js, errors) -> list:
    await write(js)
    return await read(js, errors)


@pytest.mark.natsserver
def test_nats_py_reads_the_same_from_nats_server(tmp_path):
    results = three_ways(tmp_path, write_and_read)
    assert_same(results)
    check(results["nats-server"])
