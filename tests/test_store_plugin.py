"""The store plug-in point: a JetStream's store factory makes its file streams' stores, the
JetStream keeps their meta.inf/meta.sum (found again on reopen), memory streams keep
MemStore, snapshots restore through the factory; and `jsstore serve --store-factory`."""

from __future__ import annotations

import os

import pytest
from test_api_snapshot import fill, messages, restore, take_snapshot

import jsstore
from jsstore.cli.main import main as jsstore_main
from jsstore.cli.storefactory import FactorySpecError, load_store_factory
from jsstore.jetstream import recovery
from jsstore.store.config import StoreConfig


class Factory:
    """A plug-in that is not the JetStream's FileStore: a FileStore in a folder of the
    stream's directory (it writes no meta.inf where recovery looks). Records its calls."""

    def __init__(self, fail: bool = False):
        self.calls: list[tuple[str, StoreConfig]] = []
        self.fail = fail

    def __call__(self, directory, config, options):
        assert isinstance(config, StoreConfig)
        self.calls.append((directory, config))
        if self.fail:
            raise RuntimeError("no store today")
        return jsstore.FileStore(os.path.join(directory, "inner"), config, options)


def stream_path(tmp_path, name="S"):
    return jsstore.stream_dir(str(tmp_path), name)


def test_file_streams_come_from_the_factory_and_come_back(tmp_path):
    factory = Factory()
    js = jsstore.open(tmp_path, store_factory=factory)
    js.add_stream(name="S", subjects=["s.>"], max_msgs=100, allow_direct=True)
    assert [(d, c.name, c.max_msgs) for d, c in factory.calls] == [(stream_path(tmp_path), "S", 100)]
    for i in range(5):
        js.publish(f"s.{i}", b"m%d" % i)
    found = recovery.read_stream_meta("S", stream_path(tmp_path))
    assert found.reason == "" and found.config.allow_direct is True   # the stream layer's JSON
    js.close()

    again = jsstore.open(tmp_path, store_factory=factory)
    assert factory.calls[-1][0] == stream_path(tmp_path)
    assert again.stream_info("S").state.messages == 5
    assert again.get_msg("S", 3).data == b"m2"
    assert again.stream_info("S").config.allow_direct is True
    again.close()


def test_update_rewrites_meta_for_the_plugin(tmp_path):
    js = jsstore.open(tmp_path, store_factory=Factory())
    js.add_stream(name="S", subjects=["s.>"])
    for i in range(6):
        js.publish("s.x", b"%d" % i)
    js.update_stream(name="S", subjects=["s.>", "t.>"], max_msgs=4)
    found = recovery.read_stream_meta("S", stream_path(tmp_path))
    assert found.reason == ""
    assert (found.config.subjects, found.config.max_msgs) == (["s.>", "t.>"], 4)
    js.close()
    again = jsstore.open(tmp_path, store_factory=Factory())
    info = again.stream_info("S")
    assert (info.config.max_msgs, info.state.messages, info.state.first_seq) == (4, 4, 3)
    again.close()


def test_memory_streams_keep_memstore(tmp_path):
    factory = Factory()
    js = jsstore.open(tmp_path, store_factory=factory)
    js.add_stream(name="M", subjects=["m"], storage="memory")
    js.publish("m", b"x")
    assert factory.calls == []
    assert js.stream_info("M").state.messages == 1
    js.close()


def test_delete_removes_the_stream_directory(tmp_path):
    js = jsstore.open(tmp_path, store_factory=Factory())
    js.add_stream(name="S", subjects=["s"])
    js.publish("s", b"x")
    js.delete_stream("S")
    assert not os.path.exists(stream_path(tmp_path))
    js.close()
    again = jsstore.open(tmp_path, store_factory=Factory())
    assert again.stream_names() == []
    again.close()


def test_a_failing_factory_leaves_no_stream(tmp_path):
    js = jsstore.open(tmp_path, store_factory=Factory(fail=True))
    with pytest.raises(RuntimeError):
        js.add_stream(name="S", subjects=["s"])
    assert js.stream_names() == []
    assert not os.path.exists(stream_path(tmp_path))
    js.close()


def test_what_the_factory_makes_must_be_a_stream_store(tmp_path):
    class Half:
        def store_msg(self, subject, hdr, msg, ttl=0):
            return 1, 1

    js = jsstore.open(tmp_path, store_factory=lambda d, c, o: Half())
    with pytest.raises(TypeError) as info:
        js.add_stream(name="S", subjects=["s"])
    assert "Half, not a StreamStore" in str(info.value)
    assert "load_msg" in str(info.value) and "last_seq" in str(info.value)
    assert "store_msg," not in str(info.value)
    assert not os.path.exists(stream_path(tmp_path))
    js.close()


def test_a_factory_needs_a_directory():
    with pytest.raises(ValueError):
        jsstore.open(None, store_factory=Factory())


def test_snapshot_restore_through_the_factory(tmp_path):
    source = jsstore.open(tmp_path / "source")
    fill(source, count=40)
    source.delete_msg("S", 7)
    expected = messages(source, "S")
    _, receiver = take_snapshot(source)
    factory = Factory()
    target = jsstore.open(tmp_path / "target", store_factory=factory)
    result = restore(target, "S", receiver.data(), {"name": "S", "subjects": ["s.>"]})
    assert result["state"]["messages"] == 39
    assert [c.name for _, c in factory.calls] == ["S"]
    assert messages(target, "S") == expected
    # and a snapshot of the plug-in store restores into a plain JetStream
    _, again = take_snapshot(target)
    plain = jsstore.open(tmp_path / "plain")
    restore(plain, "S", again.data(), {"name": "S", "subjects": ["s.>"]})
    assert messages(plain, "S") == expected
    target.close()
    reopened = jsstore.open(tmp_path / "target", store_factory=factory)
    assert messages(reopened, "S") == expected
    for js in (source, plain, reopened):
        js.close()


def test_factory_spec_resolution(tmp_path, monkeypatch):
    (tmp_path / "broken_factory_mod.py").write_text("raise RuntimeError('half\\nway')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_store_factory("os.path:join") is os.path.join
    for spec, words in [("nojoin", "module:callable"), (":x", "module:callable"),
                        ("no_such_module_here:f", "cannot import"),
                        ("os.path:nope", "has no nope"), ("os:sep", "not callable"),
                        ("broken_factory_mod:f", "cannot import broken_factory_mod: "
                                                 "RuntimeError: half")]:
        with pytest.raises(FactorySpecError) as info:
            load_store_factory(spec)
        assert words in str(info.value) and "\n" not in str(info.value)


def test_serve_refuses_a_bad_factory_in_one_line(tmp_path, capsys):
    code = jsstore_main(["serve", "-p", "-1", "-sd", str(tmp_path), "--store-factory", "os:sep"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.strip() == "jsstore: --store-factory 'os:sep': sep is not callable"
