"""Mirrors and sources between streams of one store, through the embedded API."""

from __future__ import annotations

import asyncio
import base64
import json
import time

import pytest

import jsstore
from jsstore.wire import headers as header_block
from jsstore.wire import apierrors as api_errors
from jsstore.stream.sources import index_name, parse_source_header, strip_source_headers
from jsstore.stream.config import StreamSource, SubjectTransform

SOURCE = "Nats-Stream-Source"


@pytest.fixture(params=["memory", "file"])
def js(request, tmp_path):
    handle = jsstore.open() if request.param == "memory" else jsstore.open(tmp_path / "store")
    yield handle
    handle.close()


def messages(js, name):
    """(seq, subject, payload, header block) of every message of a stream."""
    state = js.stream_info(name).state
    out = []
    for seq in range(max(state.first_seq, 1), state.last_seq + 1):
        try:
            msg = js.get_msg(name, seq)
        except api_errors.JSNoMessageFoundErr:
            continue
        out.append((msg.seq, msg.subject, msg.data, msg.hdr))
    return out


def source_fields(hdr):
    return header_block.get_str(hdr, SOURCE).split(" ")


# -- pure helpers ---------------------------------------------------------------------------

def test_index_names_as_nats_server_composes_them():
    assert index_name(StreamSource(name="O")) == "O > >"
    assert index_name(StreamSource(name="O", filter_subject="o.b")) == "O o.b >"
    transforms = [SubjectTransform(src="o.*", dest="t.$1"), SubjectTransform(src="p.>", dest="")]
    assert index_name(StreamSource(name="O", subject_transforms=transforms)) == "O o.*\fp.> t.$1\f>"
    assert parse_source_header("O 12 o.* t.$1 o.a abcdefgh") == ("O o.* t.$1", 12)
    assert parse_source_header("$JS.ACK.O.c.1.2.3.4.5") is None


def test_strip_source_headers_drops_origin_header_and_expected_ones():
    hdr = header_block.build([("A", "1"), (SOURCE, "X 1 > > x id"),
                              ("Nats-Expected-Last-Sequence", "3"),
                              ("Nats-Expected-Stream", "S"), ("B", "2")])
    assert header_block.parse(strip_source_headers(hdr)).fields == [("A", "1"), ("B", "2")]
    only = header_block.build([(SOURCE, "X 1 > > x id")])
    assert strip_source_headers(only) is None


# -- mirrors --------------------------------------------------------------------------------

def test_mirror_copies_sequences_and_timestamps_then_follows(js):
    js.add_stream(name="O", subjects=["o.>"])
    for i in range(4):
        js.publish("o.a" if i % 2 else "o.b", b"m%d" % i, headers={"K": str(i)})
    js.delete_msg("O", 2)
    js.add_stream(name="M", mirror=StreamSource(name="O"))
    js.publish("o.c", b"live")
    origin, mirror = messages(js, "O"), messages(js, "M")
    assert mirror == origin and [m[0] for m in mirror] == [1, 3, 4, 5]
    for seq in (1, 3, 4, 5):
        assert js.get_msg("M", seq).time == js.get_msg("O", seq).time
    state = js.stream_info("M").state
    assert (state.first_seq, state.last_seq, state.messages, state.num_deleted) == (1, 5, 4, 1)
    info = js._sources.mirror_info("M")
    assert info == {"name": "O", "lag": 0, "active": 0}
    assert js._sources.sources_info("M") == []


def test_mirror_rejects_direct_publish_to_its_subjects(js):
    js.add_stream(name="O", subjects=["o.>"])
    js.add_stream(name="M", mirror=StreamSource(name="O"))
    js.publish("o.x", b"1")
    assert js.stream_info("M").state.messages == 1    # the publish went to the origin only


def test_filtered_mirror_starts_at_first_match_and_skips_gaps(js):
    # nats-server 2.15.1: first_seq 2, last_seq 4, one deleted (3)
    js.add_stream(name="O", subjects=["o.>"])
    js.publish("o.a", b"1")
    js.add_stream(name="M", mirror=StreamSource(name="O", filter_subject="o.b"))
    js.publish("o.b", b"2")
    js.publish("o.a", b"3")
    js.publish("o.b", b"4")
    state = js.stream_info("M").state
    assert (state.first_seq, state.last_seq, state.messages, state.num_deleted) == (2, 4, 2, 1)
    assert [m[:3] for m in messages(js, "M")] == [(2, "o.b", b"2"), (4, "o.b", b"4")]
    assert js._sources.mirror_info("M")["filter_subject"] == "o.b"


def test_mirror_start_sequence_time_and_transforms(js):
    js.add_stream(name="O", subjects=["o.>"])
    for i in range(1, 6):
        js.publish(f"o.{i}", b"%d" % i)
    js.add_stream(name="M1", mirror=StreamSource(name="O", opt_start_seq=3))
    state = js.stream_info("M1").state
    assert (state.first_seq, state.last_seq, state.messages, state.num_deleted) == (3, 5, 3, 0)
    third = js.get_msg("O", 4).time
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(third // 10**9)) + \
        ".%09dZ" % (third % 10**9)
    js.add_stream(name="M2", mirror=StreamSource(name="O", opt_start_time=start))
    assert [m[0] for m in messages(js, "M2")] == [4, 5]
    js.add_stream(name="M3", mirror=StreamSource(name="O", subject_transforms=[
        SubjectTransform(src="o.*", dest="m.$1")]))
    assert [m[1] for m in messages(js, "M3")] == [f"m.{i}" for i in range(1, 6)]
    assert js._sources.mirror_info("M3")["subject_transforms"] == [{"src": "o.*", "dest": "m.$1"}]


def test_mirror_waits_for_its_origin_and_keeps_data_when_it_goes(js):
    js.add_stream(name="M", mirror=StreamSource(name="O"))
    info = js._sources.mirror_info("M")
    assert info == {"name": "O", "lag": 0, "active": -1,
                    "error": {"code": 404, "err_code": 10059, "description": "stream not found"}}
    js.add_stream(name="O", subjects=["o.>"])
    js.publish("o.a", b"1")
    js.publish("o.a", b"2")
    assert [m[0] for m in messages(js, "M")] == [1, 2]
    assert "error" not in js._sources.mirror_info("M")
    js.delete_stream("O")
    info = js._sources.mirror_info("M")
    assert info["error"]["err_code"] == 10059 and info["active"] >= 0
    assert js.stream_info("M").state.messages == 2


def test_active_counts_from_the_last_contact_once_the_origin_is_gone():
    now = [1_000_000_000_000]
    with jsstore.open(clock=lambda: now[0]) as js:
        js.add_stream(name="O", subjects=["o.>"])
        js.add_stream(name="S", sources=[StreamSource(name="O")])
        js.publish("o.a", b"1")
        now[0] += 5_000
        js.delete_stream("O")
        now[0] += 7_000
        info = js._sources.sources_info("S")[0]
        assert (info["active"], info["seq"], info["lag"]) == (7_000, 1, 0)
        assert info["error"]["description"] == "stream not found"


def test_source_start_time_takes_messages_from_then():
    now = [1_700_000_000_000_000_000]
    with jsstore.open(clock=lambda: now[0]) as js:
        js.add_stream(name="O", subjects=["o.>"])
        for i in range(4):
            js.publish("o.a", b"%d" % i)
            now[0] += 1_000_000_000
        start = js.get_msg("O", 3).time
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start // 10**9)) + "Z"
        js.add_stream(name="S", sources=[StreamSource(name="O", opt_start_time=text)])
        assert [m[2] for m in messages(js, "S")] == [b"2", b"3"]
        assert js._sources.sources_info("S")[0]["seq"] == 4


def test_mirror_limits_apply_to_mirrored_messages():
    now = [10**18]
    with jsstore.open(clock=lambda: now[0]) as js:
        js.add_stream(name="O", subjects=["o.>"])
        js.add_stream(name="M", mirror=StreamSource(name="O"), max_age=5_000_000_000)
        js.add_stream(name="N", mirror=StreamSource(name="O"), max_msgs=2)
        js.publish("o.a", b"1")
        now[0] += 3_000_000_000
        js.publish("o.a", b"2")
        js.publish("o.a", b"3")
        now[0] += 3_000_000_000
        js.tick()
        assert [m[0] for m in messages(js, "M")] == [2, 3]   # the first aged out
        assert [m[0] for m in messages(js, "N")] == [2, 3]
        assert js.stream_info("O").state.messages == 3


def test_deleting_the_mirror_stops_following(js):
    js.add_stream(name="O", subjects=["o.>"])
    js.add_stream(name="M", mirror=StreamSource(name="O"))
    js.publish("o.a", b"1")
    js.delete_stream("M")
    assert js.publish("o.a", b"2").seq == 2
    assert js._sources.mirror_info("M") is None
    js.add_stream(name="M", mirror=StreamSource(name="O"))
    assert [m[0] for m in messages(js, "M")] == [1, 2]


def test_mirror_of_a_mirror(js):
    js.add_stream(name="O", subjects=["o.>"])
    js.add_stream(name="M", mirror=StreamSource(name="O"))
    js.add_stream(name="MM", mirror=StreamSource(name="M"))
    js.publish("o.a", b"1")
    js.publish("o.b", b"2")
    assert messages(js, "MM") == messages(js, "O")


# -- sources --------------------------------------------------------------------------------

def test_source_header_filters_transforms_and_several_sources(js):
    js.add_stream(name="O", subjects=["o.>"])
    js.add_stream(name="P", subjects=["p.>"])
    js.publish("o.a", b"1", headers={"Foo": "bar"})
    js.publish("p.a", b"2")
    js.add_stream(name="S", subjects=["s.>"], sources=[
        StreamSource(name="O"), StreamSource(name="P", filter_subject="p.b"),
        StreamSource(name="P", subject_transforms=[SubjectTransform(src="p.*", dest="t.$1")])])
    js.publish("p.b", b"3")
    got = messages(js, "S")
    assert [(m[1], m[2]) for m in got] == [("o.a", b"1"), ("t.a", b"2"), ("p.b", b"3"),
                                          ("t.b", b"3")]
    first = header_block.parse(got[0][3]).fields
    assert first[0] == ("Foo", "bar") and first[1][0] == SOURCE
    fields = [source_fields(m[3]) for m in got]
    assert [f[:5] for f in fields] == [["O", "1", ">", ">", "o.a"],
                                       ["P", "1", "p.*", "t.$1", "p.a"],
                                       ["P", "2", "p.b", ">", "p.b"],
                                       ["P", "2", "p.*", "t.$1", "p.b"]]
    assert len(fields[0][5]) == 8 and fields[1][5] == fields[2][5] != fields[0][5]
    infos = js._sources.sources_info("S")
    assert [(i["name"], i["seq"], i["lag"], i["active"]) for i in infos] == \
        [("O", 1, 0, 0), ("P", 2, 0, 0), ("P", 2, 0, 0)]
    assert infos[1]["filter_subject"] == "p.b"
    assert infos[2]["subject_transforms"] == [{"src": "p.*", "dest": "t.$1"}]


def test_source_dedupes_by_msg_id_and_drops_expected_headers(js):
    js.add_stream(name="A", subjects=["a.>"])
    js.add_stream(name="B", subjects=["b.>"])
    # a sourcing stream has no duplicate window unless it asks for one (nats-server 2.12+)
    js.add_stream(name="S", sources=[StreamSource(name="A"), StreamSource(name="B")],
                  duplicate_window=120 * 1_000_000_000)
    js.publish("a.x", b"1", headers={"Nats-Msg-Id": "same"})
    js.publish("b.x", b"2", headers={"Nats-Msg-Id": "same"})
    js.publish("b.x", b"3", headers={"Nats-Expected-Last-Sequence": "1"})
    got = messages(js, "S")
    assert [(m[1], m[2]) for m in got] == [("a.x", b"1"), ("b.x", b"3")]
    assert header_block.get(got[1][3], "Nats-Expected-Last-Sequence") is None


def test_source_without_duplicate_window_keeps_every_msg_id(js):
    js.add_stream(name="A", subjects=["a.>"])
    js.add_stream(name="B", subjects=["b.>"])
    info = js.add_stream(name="S", sources=[StreamSource(name="A"), StreamSource(name="B")])
    assert info.config.duplicate_window == 0
    js.publish("a.x", b"1", headers={"Nats-Msg-Id": "same"})
    js.publish("b.x", b"2", headers={"Nats-Msg-Id": "same"})
    assert [(m[1], m[2]) for m in messages(js, "S")] == [("a.x", b"1"), ("b.x", b"2")]


def test_source_start_sequence_and_chained_header(js):
    js.add_stream(name="O", subjects=["o.>"])
    for i in range(1, 5):
        js.publish("o.a", b"%d" % i)
    js.add_stream(name="S1", sources=[StreamSource(name="O", opt_start_seq=3)])
    assert [m[2] for m in messages(js, "S1")] == [b"3", b"4"]
    js.add_stream(name="S2", sources=[StreamSource(name="S1")])
    hdr = messages(js, "S2")[0][3]
    assert header_block.parse(hdr).fields == [(SOURCE, header_block.get_str(hdr, SOURCE))]
    assert source_fields(hdr)[:5] == ["S1", "1", ">", ">", "o.a"]


def test_source_update_rewires_and_resumes_without_duplicates(js):
    js.add_stream(name="O", subjects=["o.>"])
    js.add_stream(name="P", subjects=["p.>"])
    js.add_stream(name="S", subjects=["s.>"], sources=[StreamSource(name="O")])
    js.publish("o.a", b"1")
    js.update_stream(name="S", subjects=["s.>"], sources=[StreamSource(name="P")])
    js.publish("o.a", b"2")                 # not sourced while O is not a source
    js.publish("p.a", b"3")
    assert [m[2] for m in messages(js, "S")] == [b"1", b"3"]
    js.update_stream(name="S", subjects=["s.>"],
                     sources=[StreamSource(name="P"), StreamSource(name="O")])
    js.publish("o.a", b"4")
    # O again: resumes after the last O sequence found in the headers (1)
    assert [m[2] for m in messages(js, "S")] == [b"1", b"3", b"2", b"4"]


def test_source_counters_add_up_deltas():
    with jsstore.open() as js:
        js.add_stream(name="C1", subjects=["c1.*"], allow_msg_counter=True)
        js.add_stream(name="C2", subjects=["c2.*"], allow_msg_counter=True)
        js.add_stream(name="T", allow_msg_counter=True, sources=[
            StreamSource(name="C1", subject_transforms=[SubjectTransform(src="c1.*", dest="t.$1")]),
            StreamSource(name="C2", subject_transforms=[SubjectTransform(src="c2.*", dest="t.$1")])])
        for subject, incr in (("c1.x", "5"), ("c2.x", "3"), ("c1.x", "-2"), ("c2.y", "1")):
            js.publish(subject, b"", headers={"Nats-Incr": incr})
        assert js.get_msg("T", last_by_subject="t.x").data == b'{"val":"6"}'
        assert js.get_msg("T", last_by_subject="t.y").data == b'{"val":"1"}'
        hdr = js.get_msg("T", last_by_subject="t.x").hdr
        assert json.loads(header_block.get(hdr, "Nats-Counter-Sources")) == \
            {"C1": {"c1.x": "3"}, "C2": {"c2.x": "3"}}


# -- reopen ---------------------------------------------------------------------------------

def test_reopen_resumes_mirrors_and_sources(tmp_path):
    directory = tmp_path / "store"
    with jsstore.open(directory) as js:
        js.add_stream(name="O", subjects=["o.>"])
        js.add_stream(name="S", sources=[StreamSource(name="O")])
        js.add_stream(name="M", mirror=StreamSource(name="O"))
        for i in range(3):
            js.publish("o.a", b"%d" % i)
        js.delete_msg("O", 1)
    with jsstore.open(directory) as js:
        assert [m[2] for m in messages(js, "S")] == [b"0", b"1", b"2"]
        assert [m[0] for m in messages(js, "M")] == [1, 2, 3]   # copied before the delete
        js.publish("o.a", b"3")
        assert [m[2] for m in messages(js, "S")] == [b"0", b"1", b"2", b"3"]
        assert [m[0] for m in messages(js, "M")] == [1, 2, 3, 4]
        assert js._sources.sources_info("S")[0]["seq"] == 4


# -- the real server ------------------------------------------------------------------------

@pytest.mark.natsserver
def test_mirrored_and_sourced_messages_match_nats_server(tmp_path):
    natsserver = pytest.importorskip("natsserver")
    nats = pytest.importorskip("nats")
    natsserver.require_nats_server()

    creates = [
        {"name": "O", "subjects": ["o.>"]},
        {"name": "P", "subjects": ["p.>"]},
        {"name": "M", "mirror": {"name": "O", "filter_subject": "o.b"}},
        {"name": "S", "subjects": ["s.>"], "sources": [
            {"name": "O"}, {"name": "P", "filter_subject": "p.b"},
            {"name": "P", "subject_transforms": [{"src": "p.*", "dest": "t.$1"}]}]},
        {"name": "W", "mirror": {"name": "NOPE"}},
    ]
    before = [("o.a", b"1", {"Nats-Msg-Id": "x"}), ("p.a", b"2", None), ("o.b", b"3", None)]
    after = [("o.a", b"4", {"Nats-Msg-Id": "x"}), ("p.b", b"5", {"Foo": "bar"}),
             ("o.b", b"6", {"Nats-Expected-Last-Sequence": "2"}), ("o.a", b"7", None),
             ("o.b", b"8", None)]

    def normalize(hdr):
        if not hdr:
            return None
        fields = header_block.parse(hdr).fields
        return [(k, " ".join(v.split(" ")[:5]) if k == SOURCE else v) for k, v in fields]

    async def run(url):
        nc = await nats.connect(url)
        out = {}
        try:
            async def req(subject, body=None):
                raw = json.dumps(body).encode() if body is not None else b""
                return json.loads((await nc.request(subject, raw, timeout=5)).data)
            await req("$JS.API.STREAM.CREATE.O", creates[0])
            await req("$JS.API.STREAM.CREATE.P", creates[1])
            for subject, data, hdrs in before:
                await nc.request(subject, data, headers=hdrs, timeout=5)
            for config in creates[2:]:
                await req(f"$JS.API.STREAM.CREATE.{config['name']}", config)
            for subject, data, hdrs in after:
                await nc.request(subject, data, headers=hdrs, timeout=5)
            want = {"M": 3, "S": 8}
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                infos = {n: await req(f"$JS.API.STREAM.INFO.{n}") for n in ("M", "S", "W")}
                if all(infos[n]["state"]["messages"] == want[n] for n in want) and \
                        "error" in infos["W"]["mirror"]:
                    break
                await asyncio.sleep(0.2)
            for name in ("M", "S"):
                state = infos[name]["state"]
                msgs = []
                for seq in range(state["first_seq"], state["last_seq"] + 1):
                    got = await req(f"$JS.API.STREAM.MSG.GET.{name}", {"seq": seq})
                    if "message" in got:
                        m = got["message"]
                        hdr = base64.b64decode(m["hdrs"]) if m.get("hdrs") else None
                        msgs.append((seq, m["subject"], base64.b64decode(m.get("data", "")),
                                     normalize(hdr)))
                out[name] = (state["first_seq"], state["last_seq"], state.get("num_deleted", 0),
                             msgs)
            out["W"] = infos["W"]["mirror"]
            out["S.sources"] = sorted((i["name"], i.get("seq"), i.get("filter_subject", ""))
                                      for i in infos["S"]["sources"])
        finally:
            await nc.close()
        return out

    with natsserver.nats_server(tmp_path / "server") as server:
        expected = asyncio.run(run(server.url))

    with jsstore.open() as js:
        for config in creates[:2]:
            js.add_stream(**config)
        for subject, data, hdrs in before:
            js.publish(subject, data, headers=hdrs)
        for config in creates[2:]:
            js.add_stream(**config)
        for subject, data, hdrs in after:
            js.publish(subject, data, headers=hdrs)
        ours = {}
        for name in ("M", "S"):
            state = js.stream_info(name).state
            ours[name] = (state.first_seq, state.last_seq, state.num_deleted,
                          [(m[0], m[1], m[2], normalize(m[3])) for m in messages(js, name)])
        ours["W"] = js._sources.mirror_info("W")
        ours["S.sources"] = sorted((i["name"], i.get("seq"), i.get("filter_subject", ""))
                                   for i in js._sources.sources_info("S"))
    assert ours["M"] == expected["M"]
    # the real server's sources deliver concurrently: the interleaving of sources differs,
    # the set of stored messages and the order within each source do not
    assert ours["S"][:3] == expected["S"][:3]
    assert sorted(m[1:] for m in ours["S"][3]) == sorted(m[1:] for m in expected["S"][3])
    for got in (ours["S"][3], expected["S"][3]):
        by_source: dict = {}
        for _, _, _, hdr in got:
            origin = dict(hdr)[SOURCE].split(" ")
            by_source.setdefault((origin[0], origin[2], origin[3]), []).append(int(origin[1]))
        assert all(seqs == sorted(seqs) for seqs in by_source.values())
    assert ours["S.sources"] == expected["S.sources"]
    assert ours["W"] == expected["W"]
