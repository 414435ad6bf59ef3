"""The synchronous key-value and object store API (jsstore.buckets): ``js.create_key_value``,
``js.create_object_store``, ... on a ``jsstore.open()`` JetStream, answering as the
asyncio API does (it is the same implementation, driven on a private loop thread), with
watches as iterators, and a thread that closing the JetStream stops."""

from __future__ import annotations

import io
import json
import pathlib
import subprocess
import sys
import threading
import time

import pytest

import jsstore
from jsstore.aio import errors
from jsstore.buckets import KeyValueConfig, ObjectMeta
from jsstore.wire.apierrors import JSNoMessageFoundErr


def wait_until(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.02)


def last_headers(js, stream: str, subject: str) -> dict | None:
    """The headers of the last message on `subject`; None when there is none."""
    try:
        return js.get_msg(stream, last_by_subject=subject).headers or {}
    except JSNoMessageFoundErr:
        return None


def bucket_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "jsstore-buckets"]


def test_key_value_calls_return_plain_values(tmp_path):
    with jsstore.open(tmp_path) as js:
        kv = js.create_key_value(bucket="PROFILES", history=5)
        assert kv.bucket == "PROFILES"
        assert kv.put("alice", b"a1") == 1
        assert kv.put("bob", b"b1") == 2
        assert kv.put("alice", b"a2") == 3
        entry = kv.get("alice")
        assert (entry.key, entry.value, entry.revision) == ("alice", b"a2", 3)
        assert kv.get("alice", revision=1).value == b"a1"
        with pytest.raises(errors.KeyNotFoundError):
            kv.get("nobody")
        with pytest.raises(errors.InvalidKeyError):
            kv.get("bad key")
        with pytest.raises(errors.KeyWrongLastSequenceError):
            kv.create("alice", b"again")
        assert kv.create("carol", b"c1") == 4
        assert kv.update("carol", b"c2", last=4) == 5
        with pytest.raises(errors.KeyWrongLastSequenceError):
            kv.update("carol", b"c3", last=4)
        assert kv.delete("bob") is True
        with pytest.raises(errors.KeyNotFoundError):
            kv.get("bob")
        assert kv.create("bob", b"b2") == 7
        assert kv.purge("carol") is True
        assert sorted(kv.keys()) == ["alice", "bob"]
        assert kv.keys(filters=["ali"]) == ["alice"]
        assert [e.value for e in kv.history("alice")] == [b"a1", b"a2"]
        assert [e.operation for e in kv.history("carol")] == ["PURGE"]
        status = kv.status()
        assert (status.bucket, status.history, status.values) == ("PROFILES", 5, 6)
        assert js.key_value("PROFILES").get("bob").value == b"b2"
        with pytest.raises(errors.BucketNotFoundError):
            js.key_value("MISSING")
        assert js.delete_key_value("PROFILES") is True
        with pytest.raises(errors.BucketNotFoundError):
            js.key_value("PROFILES")


def test_a_watch_is_an_iterator_that_ends_after_its_timeout():
    with jsstore.open() as js:
        kv = js.create_key_value(KeyValueConfig(bucket="W", history=3))
        kv.put("a", b"1")
        kv.put("b", b"2")
        with kv.watchall(timeout=2) as watcher:
            kv.put("a", b"3")
            got = [None if e is None else (e.key, e.value) for e in watcher]
        assert got == [("a", b"1"), ("b", b"2"), None, ("a", b"3")]
        assert watcher.stopped
        watcher = kv.watch("a", include_history=True)
        assert [watcher.updates(timeout=5).value for _ in range(2)] == [b"1", b"3"]
        assert watcher.updates(timeout=5) is None
        with pytest.raises(errors.TimeoutError):
            watcher.updates(timeout=0.1)
        watcher.stop()
        assert list(watcher) == []          # stopped: the iteration is over at once


def test_per_key_ttls_and_limit_markers():
    with jsstore.open() as js:
        kv = js.create_key_value(bucket="T", ttl=60, limit_marker_ttl=5)
        assert kv.status().marker_ttl == 5
        assert js.stream_info("KV_T").config.allow_msg_ttl is True
        kv.create("short", b"x", msg_ttl=1)
        assert last_headers(js, "KV_T", "$KV.T.short")["Nats-TTL"] == "1"
        kv.put("kept", b"y")
        watcher = kv.watch("short", timeout=10)
        assert watcher.updates().value == b"x"
        assert watcher.updates() is None
        marker = watcher.updates(timeout=10)      # the server's marker when it expired
        watcher.stop()
        assert (marker.key, marker.operation) == ("short", "PURGE")
        assert last_headers(js, "KV_T", "$KV.T.short")["Nats-Marker-Reason"] == "MaxAge"
        assert kv.keys() == ["kept"]
        kv.purge("kept", msg_ttl=1)
        headers = last_headers(js, "KV_T", "$KV.T.kept")
        assert (headers["KV-Operation"], headers["Nats-TTL"]) == ("PURGE", "1")
        wait_until(lambda: last_headers(js, "KV_T", "$KV.T.kept") is None)   # it expired


def test_delete_warns_that_msg_ttl_is_ignored_and_purge_deletes_removes_markers():
    with jsstore.open() as js:
        kv = js.create_key_value(bucket="D", history=5)
        kv.put("a", b"1")
        kv.put("b", b"2")
        with pytest.warns(DeprecationWarning, match="msg_ttl on delete"):
            kv.delete("a", msg_ttl=5)
        assert "Nats-TTL" not in last_headers(js, "KV_D", "$KV.D.a")
        kv.purge_deletes(olderthan=3600)        # young markers stay, alone
        assert [e.operation for e in kv.history("a")] == ["DEL"]
        kv.purge_deletes(olderthan=-1)
        with pytest.raises(errors.NoKeysError):
            kv.history("a")
        assert kv.keys() == ["b"]


def test_a_multi_megabyte_object_in_chunks_from_and_into_files(tmp_path):
    content = bytes(range(256)) * (12 * 1024) + b"tail"      # 3 MiB and a bit
    source = tmp_path / "in.bin"
    source.write_bytes(content)
    with jsstore.open(tmp_path / "store") as js:
        store = js.create_object_store("FILES", description="files")
        with open(source, "rb") as f:
            info = store.put("big.bin", f)
        assert (info.size, info.chunks) == (len(content), 25)
        assert store.get("big.bin").data == content
        with open(tmp_path / "out.bin", "wb") as f:
            store.get("big.bin", writeinto=f)
        assert (tmp_path / "out.bin").read_bytes() == content
        small = store.put("note", b"hello", meta=ObjectMeta(
            description="a note", headers={"kind": "text"}))
        assert store.get_info("note").headers == {"kind": "text"}
        assert small.digest == store.get_info("note").digest
        assert sorted(i.name for i in store.list()) == ["big.bin", "note"]
        store.delete("note")
        with pytest.raises(errors.ObjectNotFoundError):
            store.get("note")
        assert store.get_info("note", show_deleted=True).deleted is True
        assert [i.name for i in store.list(ignore_deletes=True)] == ["big.bin"]
        assert store.status().sealed is False
    with jsstore.open(tmp_path / "store") as js:           # read back after a reopen
        assert js.object_store("FILES").get("big.bin").data == content
        assert js.delete_object_store("FILES") is True
        with pytest.raises(errors.BucketNotFoundError):
            js.object_store("FILES")


def test_a_chunk_that_does_not_match_the_digest_is_refused():
    with jsstore.open() as js:
        store = js.create_object_store("D")
        info = store.put("o", io.BytesIO(b"x" * 300_000))
        info.digest = "SHA-256=" + "A" * 43 + "="
        js.publish(f"$O.D.M.{'bw=='}", json.dumps(info.as_dict()).encode(),
                   headers={"Nats-Rollup": "sub"})
        with pytest.raises(errors.DigestMismatchError):
            store.get("o")


def test_links_to_an_object_and_to_a_store():
    with jsstore.open() as js:
        photos = js.create_object_store("PHOTOS")
        albums = js.create_object_store("ALBUMS")
        info = photos.put("cat.jpg", b"meow" * 100_000)
        link = albums.add_link("best", info)
        assert (link.options.link.bucket, link.options.link.name) == ("PHOTOS", "cat.jpg")
        assert albums.get_info("best").is_link()
        read = albums.get("best")
        assert (read.info.name, read.data) == ("cat.jpg", b"meow" * 100_000)
        assert albums.add_link("best", photos.put("dog.jpg", b"woof")).options.link.name \
            == "dog.jpg"                                       # a link replaces a link
        everything = albums.add_bucket_link("all", photos)
        assert (everything.options.link.bucket, everything.options.link.name) == (
            "PHOTOS", None)
        with pytest.raises(errors.LinkIsABucketError):
            albums.get("all")
        albums.put("plain", b"data")
        with pytest.raises(errors.ObjectAlreadyExists):
            albums.add_link("plain", info)
        with pytest.raises(errors.NoLinkToLinkError):
            albums.add_link("again", albums.get_info("best"))
        photos.delete("dog.jpg")
        with pytest.raises(errors.NoLinkToDeletedError):
            albums.add_link("gone", photos.get_info("dog.jpg", show_deleted=True))
        assert sorted(i.name for i in albums.list()) == ["all", "best", "plain"]


def test_an_object_store_watch():
    with jsstore.open() as js:
        store = js.create_object_store("W")
        store.put("a", b"1")
        with store.watch(timeout=2) as watcher:
            store.put("b", b"2")
            got = [None if i is None else i.name for i in watcher]
        assert got == ["a", None, "b"]


def test_blocking_calls_from_several_threads_at_once():
    with jsstore.open() as js:
        kv = js.create_key_value(bucket="MANY")
        revisions = []

        def writer(n: int) -> None:
            for i in range(30):
                revisions.append(kv.put(f"t{n}.k{i}", b"%d" % i))
        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(revisions) == list(range(1, 121))
        assert len(kv.keys()) == 120
        assert kv.get("t3.k29").value == b"29"


def test_closing_the_jetstream_stops_the_buckets_thread(tmp_path):
    before = len(bucket_threads())
    js = jsstore.open(tmp_path)
    kv = js.create_key_value(bucket="C")
    kv.put("k", b"v")
    watcher = kv.watchall(timeout=None)          # left running: the close stops it
    assert len(bucket_threads()) == before + 1
    js.close()
    assert len(bucket_threads()) == before
    with pytest.raises(errors.ConnectionClosedError):
        kv.get("k")
    with pytest.raises(errors.ConnectionClosedError):
        next(watcher)
    with pytest.raises(jsstore.errors.StoreClosed):
        js.key_value("C")
    with jsstore.open(tmp_path) as again:          # the directory is free again
        assert again.key_value("C").get("k").value == b"v"


def test_import_jsstore_loads_neither_the_buckets_nor_the_asyncio_layer():
    code = ("import sys, jsstore; print('jsstore.buckets' in sys.modules, "
            "'jsstore.aio' in sys.modules); js = jsstore.open(); "
            "js.create_key_value(bucket='B'); print('jsstore.buckets' in sys.modules); "
            "js.close()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": jsstore.__path__[0].rsplit("/", 1)[0]})
    assert out.stdout.split() == ["False", "False", "True"]


def test_the_readme_examples_run(tmp_path, monkeypatch):
    """The section's two examples, as written (their asserts included), one after the
    other in a directory of the test's own: the asyncio one reads what the synchronous one
    made."""
    readme = (pathlib.Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme[readme.index("## Key-value and object stores"):]
    section = section[:section.index("\n## ", 1)]
    blocks = section.split("```python\n")[1:]
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    threads = len(bucket_threads())
    for name, block in zip(("sync", "asyncio"), blocks):
        code = block[:block.index("\n```")]
        exec(compile(code, f"README.md (key-value, {name})", "exec"), {"__name__": "readme"})
    assert (tmp_path / "report-copy.bin").read_bytes() == bytes(range(256)) * 12288
    assert len(bucket_threads()) == threads        # the with block stopped its thread
