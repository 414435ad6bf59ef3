"""The stream wire API: JetStream.request answers $JS.API.* subjects as nats-server does."""

from __future__ import annotations

import asyncio
import base64
import json
import re

import pytest

from jsstore.jetstream import account as jetstream
from jsstore.api import schemas

T = "io.nats.jetstream.api.v1."
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")
STATE_KEYS = ["messages", "bytes", "first_seq", "first_ts", "last_seq", "last_ts"]


@pytest.fixture(params=["memory", "file"])
def js(request, tmp_path):
    stream_js = jetstream.open(tmp_path if request.param == "file" else None)
    yield stream_js
    stream_js.close()


def call(js, subject: str, body=b""):
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    raw = js.request(subject, body)
    assert raw is not None
    return json.loads(raw)


def assert_error(answer: dict, response_type: str, code: int, err_code: int):
    assert list(answer)[:2] == ["type", "error"]
    assert answer["type"] == T + response_type
    assert answer["error"]["code"] == code
    assert answer["error"]["err_code"] == err_code
    assert answer["error"]["description"]


def create(js, name="S", subjects=("a.>",), **extra):
    return call(js, f"$JS.API.STREAM.CREATE.{name}",
                {"name": name, "subjects": list(subjects), **extra})


def fill(js):
    """S with a.b (headers), a.c (no data), a.b: three messages, two subjects."""
    create(js)
    js.publish("a.b", b"hi", headers={"X": "1"})
    js.publish("a.c", b"")
    js.publish("a.b", b"x")


# -- account and unknown subjects -----------------------------------------------------------
def test_account_info_shape_and_api_counts(js):
    answer = call(js, "$JS.API.INFO")
    assert list(answer) == ["type", "memory", "storage", "reserved_memory", "reserved_storage",
                            "streams", "consumers", "limits", "api"]
    assert answer["type"] == T + "account_info_response"
    assert answer["limits"]["max_streams"] == -1 and answer["limits"]["max_bytes_required"] is False
    assert answer["api"] == {"level": schemas.API_LEVEL, "total": 0, "errors": 0}
    fill(js)
    call(js, "$JS.API.STREAM.INFO.NOPE")
    answer = call(js, "$JS.API.INFO")
    assert answer["streams"] == 1
    # the first INFO, the create and the failed STREAM.INFO (an answer is counted after
    # it is made, as nats-server counts: the first INFO saw 0)
    assert answer["api"]["total"] == 3 and answer["api"]["errors"] == 1
    assert answer["storage"] + answer["memory"] > 0


@pytest.mark.parametrize("subject", ["$JS.API.STREAM.FOO", "$JS.API.STREAM.INFO.",
                                     "$JS.API.STREAM.INFO.a.b", "$JS.API.STREAM.INFO.*",
                                     "other.subject", "$JS.API.STREAM.NAMES.x"])
def test_unknown_subjects_get_no_answer(js, subject):
    assert js.request(subject, b"{}") is None


# -- create / update ------------------------------------------------------------------------
def test_create_response_shape(js):
    answer = create(js, description="d <&>")
    assert list(answer) == ["type", "config", "created", "state", "ts", "did_create"]
    assert answer["type"] == T + "stream_create_response"
    assert answer["did_create"] is True
    assert answer["config"]["name"] == "S" and answer["config"]["max_msgs"] == -1
    assert answer["state"] == {"messages": 0, "bytes": 0, "first_seq": 0,
                               "first_ts": "0001-01-01T00:00:00Z", "last_seq": 0,
                               "last_ts": "0001-01-01T00:00:00Z", "consumer_count": 0}
    assert TIME.match(answer["created"]) and TIME.match(answer["ts"])
    raw = js.request("$JS.API.STREAM.INFO.S", b"")
    assert b'"a.\\u003e"' in raw and b"d \\u003c\\u0026\\u003e" in raw   # Go's escapes


def test_create_errors(js):
    assert_error(call(js, "$JS.API.STREAM.CREATE.S", b"{bad"), "stream_create_response", 400, 10025)
    assert_error(call(js, "$JS.API.STREAM.CREATE.S", b""), "stream_create_response", 400, 10056)
    assert_error(call(js, "$JS.API.STREAM.CREATE.S", {"name": "T"}),
                 "stream_create_response", 400, 10056)
    create(js)
    assert_error(create(js, subjects=["q"]), "stream_create_response", 400, 10058)
    assert list(create(js))[-1] == "did_create"       # the same config again: its info


def test_update(js):
    fill(js)
    js.delete_msg("S", 2)
    answer = call(js, "$JS.API.STREAM.UPDATE.S", {"name": "S", "subjects": ["a.>", "b"]})
    assert list(answer) == ["type", "config", "created", "state", "ts"]
    assert answer["type"] == T + "stream_update_response"
    assert answer["config"]["subjects"] == ["a.>", "b"]
    assert answer["state"]["num_deleted"] == 1 and "deleted" not in answer["state"]
    update = "stream_update_response"
    assert_error(call(js, "$JS.API.STREAM.UPDATE.S", b"{bad"), update, 400, 10025)
    assert_error(call(js, "$JS.API.STREAM.UPDATE.S", {"name": "T"}), update, 400, 10056)
    assert_error(call(js, "$JS.API.STREAM.UPDATE.X", {"name": "X"}), update, 404, 10059)
    assert_error(call(js, "$JS.API.STREAM.UPDATE.S", {"name": "S", "storage": "memory"
                      if js.stream_info("S").config.storage == "file" else "file"}),
                 update, 500, 10052)


# -- info -----------------------------------------------------------------------------------
def test_info_shape_details_and_subject_paging(js):
    fill(js)
    answer = call(js, "$JS.API.STREAM.INFO.S")
    assert list(answer) == ["type", "total", "offset", "limit", "config", "created", "state", "ts"]
    assert (answer["total"], answer["offset"], answer["limit"]) == (0, 0, 0)
    assert list(answer["state"]) == STATE_KEYS + ["num_subjects", "consumer_count"]
    assert answer["state"]["messages"] == 3 and TIME.match(answer["state"]["first_ts"])
    js.delete_msg("S", 2)
    state = call(js, "$JS.API.STREAM.INFO.S", {"deleted_details": True})["state"]
    assert state["num_deleted"] == 1 and state["deleted"] == [2]
    assert "deleted" not in call(js, "$JS.API.STREAM.INFO.S", b"{}")["state"]
    js.publish("a.a", b"")
    js.publish("a.d", b"")
    answer = call(js, "$JS.API.STREAM.INFO.S", {"subjects_filter": "a.*"})
    assert (answer["total"], answer["offset"], answer["limit"]) == (3, 0, 100_000)
    assert list(answer["state"]["subjects"].items()) == [("a.a", 1), ("a.b", 2), ("a.d", 1)]
    answer = call(js, "$JS.API.STREAM.INFO.S", {"subjects_filter": ">", "offset": 1})
    assert (answer["total"], answer["offset"]) == (3, 1)
    assert answer["state"]["subjects"] == {"a.b": 2, "a.d": 1}
    answer = call(js, "$JS.API.STREAM.INFO.S", {"subjects_filter": ">", "offset": 9})
    assert answer["total"] == 3 and "subjects" not in answer["state"]
    answer = call(js, "$JS.API.STREAM.INFO.S", {"subjects_filter": "zz"})
    assert answer["total"] == 0 and answer["limit"] == 0


def test_info_errors_keep_paging_fields(js):
    answer = call(js, "$JS.API.STREAM.INFO.X")
    assert_error(answer, "stream_info_response", 404, 10059)
    assert list(answer) == ["type", "error", "total", "offset", "limit"]
    create(js)
    assert_error(call(js, "$JS.API.STREAM.INFO.S", b"{bad"), "stream_info_response", 400, 10025)


# -- delete / purge -------------------------------------------------------------------------
def test_delete(js):
    create(js)
    response_type = "stream_delete_response"
    assert_error(call(js, "$JS.API.STREAM.DELETE.S", {"x": 1}), response_type, 400, 10038)
    assert call(js, "$JS.API.STREAM.DELETE.S", b"{}") == {"type": T + response_type,
                                                          "success": True}
    assert js.stream_names() == []
    assert_error(call(js, "$JS.API.STREAM.DELETE.S"), response_type, 404, 10059)


def test_purge(js):
    fill(js)
    purge = T + "stream_purge_response"
    answer = call(js, "$JS.API.STREAM.PURGE.S", {"seq": 1, "keep": 1})
    assert_error(answer, "stream_purge_response", 400, 10003)
    assert list(answer) == ["type", "error", "purged"] and answer["purged"] == 0
    assert_error(call(js, "$JS.API.STREAM.PURGE.S", b"{bad"), "stream_purge_response", 400, 10025)
    assert_error(call(js, "$JS.API.STREAM.PURGE.X"), "stream_purge_response", 404, 10059)
    assert call(js, "$JS.API.STREAM.PURGE.S", {"filter": "a.b", "keep": 1}) == \
        {"type": purge, "success": True, "purged": 1}
    assert call(js, "$JS.API.STREAM.PURGE.S", {"seq": 3}) == \
        {"type": purge, "success": True, "purged": 1}
    assert call(js, "$JS.API.STREAM.PURGE.S") == {"type": purge, "success": True, "purged": 1}
    assert js.stream_info("S").state.messages == 0
    create(js, "D", ["d"], deny_purge=True)
    assert_error(call(js, "$JS.API.STREAM.PURGE.D"), "stream_purge_response", 500, 10110)


# -- names / list ---------------------------------------------------------------------------
def test_names_and_list_paging_and_filter(js):
    names = T + "stream_names_response"
    assert call(js, "$JS.API.STREAM.NAMES") == {"type": names, "total": 0, "offset": 0,
                                                "limit": 1024, "streams": None}
    assert call(js, "$JS.API.STREAM.LIST") == {"type": T + "stream_list_response", "total": 0,
                                               "offset": 0, "limit": 256, "streams": []}
    for name, subject in [("C", "c.>"), ("A", "a.>"), ("B", "b.*")]:
        create(js, name, [subject])
    assert call(js, "$JS.API.STREAM.NAMES")["streams"] == ["A", "B", "C"]
    assert call(js, "$JS.API.STREAM.NAMES", b"not json")["streams"] == ["A", "B", "C"]
    answer = call(js, "$JS.API.STREAM.NAMES", {"offset": 1})
    assert (answer["total"], answer["offset"], answer["streams"]) == (3, 1, ["B", "C"])
    answer = call(js, "$JS.API.STREAM.NAMES", {"offset": 7})
    assert (answer["total"], answer["offset"], answer["streams"]) == (3, 3, None)
    assert call(js, "$JS.API.STREAM.NAMES", {"subject": "b.x"})["streams"] == ["B"]
    assert call(js, "$JS.API.STREAM.NAMES", {"subject": "*.x"})["streams"] == ["A", "B", "C"]
    answer = call(js, "$JS.API.STREAM.LIST", {"subject": "c.x", "offset": 0})
    assert (answer["total"], answer["limit"]) == (1, 256)
    assert [info["config"]["name"] for info in answer["streams"]] == ["C"]
    assert list(answer["streams"][0]) == ["config", "created", "state", "ts"]
    answer = call(js, "$JS.API.STREAM.LIST", {"offset": 2})
    assert [info["config"]["name"] for info in answer["streams"]] == ["C"]
    for subject in ("$JS.API.STREAM.NAMES", "$JS.API.STREAM.LIST"):
        answer = call(js, subject, b"{bad")
        assert_error(answer, subject.rsplit(".", 1)[1].lower().join(["stream_", "_response"]),
                     400, 10025)
        assert list(answer)[2:] == ["total", "offset", "limit", "streams"]
        assert answer["streams"] == (None if subject.endswith("NAMES") else [])   # as nats-server


# -- messages -------------------------------------------------------------------------------
def test_msg_get_forms(js):
    fill(js)
    get = "$JS.API.STREAM.MSG.GET.S"
    answer = call(js, get, {"seq": 1})
    assert list(answer) == ["type", "message"] and answer["type"] == T + "stream_msg_get_response"
    message = answer["message"]
    assert list(message) == ["subject", "seq", "hdrs", "data", "time"]
    assert base64.b64decode(message["hdrs"]) == b"NATS/1.0\r\nX: 1\r\n\r\n"
    assert base64.b64decode(message["data"]) == b"hi"
    assert TIME.match(message["time"])
    assert list(call(js, get, {"seq": 2})["message"]) == ["subject", "seq", "time"]
    assert call(js, get, {"last_by_subj": "a.b"})["message"]["seq"] == 3
    assert call(js, get, {"next_by_subj": "a.b", "seq": 2})["message"]["seq"] == 3
    assert call(js, get, {"next_by_subj": "a.*"})["message"]["seq"] == 1
    response_type = "stream_msg_get_response"
    assert_error(call(js, get, {"seq": 9}), response_type, 404, 10037)
    assert_error(call(js, get, {"last_by_subj": "zz"}), response_type, 404, 10037)
    for bad in ({}, {"seq": 1, "last_by_subj": "a.b"},
                {"last_by_subj": "a.b", "next_by_subj": "a.b"}, b""):
        assert_error(call(js, get, bad), response_type, 400, 10003)
    assert_error(call(js, get, b"{bad"), response_type, 400, 10025)
    assert_error(call(js, "$JS.API.STREAM.MSG.GET.X", {"seq": 1}), response_type, 404, 10059)


def test_msg_delete(js):
    fill(js)
    delete = "$JS.API.STREAM.MSG.DELETE.S"
    response_type = "stream_msg_delete_response"
    assert call(js, delete, {"seq": 2}) == {"type": T + response_type, "success": True}
    assert call(js, delete, {"seq": 3, "no_erase": True})["success"] is True
    # a message that is not there: as nats-server's store of the kind answers
    # (tests/test_server_msg_delete.py holds both to nats-server)
    assert_error(call(js, delete, {"seq": 2}), response_type, 400, 10043)
    assert call(js, delete, {"seq": 2})["error"]["description"] == "sequence 2 not found"
    if js.directory is not None:
        assert call(js, delete, {"seq": 9})["error"]["description"] == "stream store EOF"
        assert_error(call(js, delete, {"seq": 0}), response_type, 500, 10057)
    else:
        assert call(js, delete, {"seq": 9})["error"]["description"] == "sequence 9 not found"
        assert_error(call(js, delete, {"seq": 0}), response_type, 400, 10043)
    assert_error(call(js, delete, b""), response_type, 400, 10003)
    assert_error(call(js, delete, b"{}"), response_type, 400, 10003)
    assert_error(call(js, delete, b"{bad"), response_type, 400, 10025)
    assert_error(call(js, "$JS.API.STREAM.MSG.DELETE.X", {"seq": 1}), response_type, 404, 10059)
    assert js.stream_info("S").state.messages == 1
    create(js, "D", ["d"], deny_delete=True)
    js.publish("d", b"")
    assert_error(call(js, "$JS.API.STREAM.MSG.DELETE.D", {"seq": 1}), response_type, 500, 10057)


# -- against a real nats-server -------------------------------------------------------------
# Requests sent to both; "PUB" publishes the subject in the body to both.
SCRIPT = [
    ("$JS.API.INFO", b""),
    ("$JS.API.STREAM.NAMES", b""),
    ("$JS.API.STREAM.LIST", b""),
    ("$JS.API.STREAM.CREATE.S", b'{"name":"S","subjects":["a.>"],"storage":"memory"}'),
    ("$JS.API.STREAM.CREATE.S", b'{"name":"S","subjects":["a.>"],"storage":"memory"}'),
    ("$JS.API.STREAM.CREATE.S", b'{bad'),
    ("$JS.API.STREAM.CREATE.S", b''),
    ("$JS.API.STREAM.CREATE.S", b'{"name":"T"}'),
    ("PUB", b"a.b"), ("PUB", b"a.c"), ("PUB", b"a.b"),
    ("$JS.API.STREAM.INFO.S", b''),
    ("$JS.API.STREAM.INFO.S", b'{"subjects_filter":">","deleted_details":true}'),
    ("$JS.API.STREAM.INFO.S", b'{"subjects_filter":"a.*","offset":1}'),
    ("$JS.API.STREAM.INFO.S", b'{"subjects_filter":"a.*","offset":5}'),
    ("$JS.API.STREAM.INFO.S", b'{"subjects_filter":"zz"}'),
    ("$JS.API.STREAM.INFO.S", b'{bad'),
    ("$JS.API.STREAM.INFO.X", b''),
    ("$JS.API.STREAM.MSG.GET.S", b'{"seq":1}'),
    ("$JS.API.STREAM.MSG.GET.S", b'{"seq":9}'),
    ("$JS.API.STREAM.MSG.GET.S", b'{}'),
    ("$JS.API.STREAM.MSG.GET.S", b''),
    ("$JS.API.STREAM.MSG.GET.S", b'{"last_by_subj":"a.b"}'),
    ("$JS.API.STREAM.MSG.GET.S", b'{"next_by_subj":"a.c","seq":1}'),
    ("$JS.API.STREAM.MSG.GET.S", b'{"seq":1,"last_by_subj":"a.b"}'),
    ("$JS.API.STREAM.MSG.GET.X", b'{"seq":1}'),
    ("$JS.API.STREAM.MSG.DELETE.S", b'{"seq":2}'),
    ("$JS.API.STREAM.MSG.DELETE.S", b'{"seq":2}'),
    ("$JS.API.STREAM.MSG.DELETE.S", b''),
    ("$JS.API.STREAM.MSG.DELETE.S", b'{bad'),
    ("$JS.API.STREAM.MSG.DELETE.X", b'{"seq":1}'),
    ("$JS.API.STREAM.INFO.S", b'{"deleted_details":true}'),
    ("$JS.API.STREAM.UPDATE.S", b'{"name":"S","subjects":["a.>","b"],"storage":"memory"}'),
    ("$JS.API.STREAM.UPDATE.S", b'{"name":"S","subjects":["a.>"],"storage":"file"}'),
    ("$JS.API.STREAM.UPDATE.S", b'{bad'),
    ("$JS.API.STREAM.UPDATE.X", b'{"name":"X"}'),
    ("$JS.API.STREAM.CREATE.S", b'{"name":"S","subjects":["q"],"storage":"memory"}'),
    ("$JS.API.STREAM.NAMES", b'{"subject":"a.x"}'),
    ("$JS.API.STREAM.NAMES", b'{"subject":"b.x"}'),
    ("$JS.API.STREAM.NAMES", b'garbage'),
    ("$JS.API.STREAM.NAMES", b'{bad'),
    ("$JS.API.STREAM.LIST", b'{"offset":5}'),
    ("$JS.API.STREAM.LIST", b'{"subject":"a.b"}'),
    ("$JS.API.STREAM.PURGE.S", b'{"seq":1,"keep":1}'),
    ("$JS.API.STREAM.PURGE.S", b'{bad'),
    ("$JS.API.STREAM.PURGE.S", b'{"filter":"a.b","keep":1}'),
    ("$JS.API.STREAM.PURGE.S", b''),
    ("$JS.API.STREAM.PURGE.X", b''),
    ("$JS.API.STREAM.DELETE.S", b'{"x":1}'),
    ("$JS.API.STREAM.DELETE.S", b'{}'),
    ("$JS.API.STREAM.DELETE.S", b''),
    ("$JS.API.INFO", b''),
]
# Fields that differ between two servers for good reasons: times, the leader's server id,
# nats-server's own _nats.* metadata, parser error texts, and its API request counters.
VOLATILE = {"created", "ts", "time", "first_ts", "last_ts", "cluster", "metadata", "api"}


def _comparable(value):
    if isinstance(value, dict):
        out = {key: _comparable(item) for key, item in value.items() if key not in VOLATILE}
        if "err_code" in out and out["err_code"] == 10025:
            out.pop("description", None)
        return out
    if isinstance(value, list):
        return [_comparable(item) for item in value]
    return value


@pytest.mark.natsserver
def test_answers_match_nats_server(tmp_path):
    natsserver = pytest.importorskip("natsserver")
    nats = pytest.importorskip("nats")
    natsserver.require_nats_server()
    embedded = jetstream.open()

    async def run(url):
        nc = await nats.connect(url)
        try:
            for subject, body in SCRIPT:
                if subject == "PUB":
                    await nc.request(body.decode(), b"x", timeout=2)
                    embedded.publish(body.decode(), b"x")
                    continue
                real = (await nc.request(subject, body, timeout=2)).data
                mine = embedded.request(subject, body)
                assert mine is not None, subject
                assert list(json.loads(mine)) == [key for key in json.loads(real)
                                                  if key != "cluster"], (subject, body)
                assert _comparable(json.loads(mine)) == _comparable(json.loads(real)), \
                    (subject, body, real, mine)
            with pytest.raises(nats.errors.TimeoutError):
                await nc.request("$JS.API.STREAM.FOO", b"", timeout=0.5)
            assert embedded.request("$JS.API.STREAM.FOO", b"") is None
        finally:
            await nc.close()

    with natsserver.nats_server(tmp_path / "server") as server:
        asyncio.run(run(server.url))
    embedded.close()
