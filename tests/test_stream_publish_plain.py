"""The one-step publish of a message without headers (Stream.publish_plain, what the
server takes for most publishes) against the two-step one (check, apply): for any stream
configuration and any run of publishes, the same answers and the same stored messages --
publish_plain either does exactly what publish does, or declines and publish runs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import jsstore
from jsstore.wire.apierrors import ApiError
from jsstore.stream.puback import pub_error_json

CONFIGS = st.fixed_dictionaries({}, optional={
    "max_msg_size": st.sampled_from([0, 5, 64]),
    "max_msgs": st.sampled_from([1, 3]),
    "max_msgs_per_subject": st.sampled_from([1, 2]),
    "discard": st.sampled_from(["old", "new"]),
    "retention": st.sampled_from(["interest", "workqueue"]),
    "subject_transform": st.just({"src": "p.*", "dest": "moved.$1"}),
    "republish": st.just({"src": "p.*", "dest": "out.$1"}),
    "allow_msg_counter": st.just(True),
    "max_age": st.just(3_600_000_000_000),
})
PUBLISHES = st.lists(st.tuples(st.sampled_from(["p.a", "p.b", "p.c"]),
                               st.binary(max_size=80)), min_size=1, max_size=12)


def two_step(stream, subject: str, payload: bytes) -> bytes:
    try:
        return stream.publish(subject, None, payload).to_json()
    except ApiError as exc:
        return pub_error_json(stream.name, exc)


def stored(js) -> list[tuple[int, str, bytes | None, bytes]]:
    store = js._streams["S"].store
    state = store.fast_state()
    found = []
    for seq in range(state.first_seq, state.last_seq + 1):
        try:
            msg = store.load_msg(seq)
        except Exception:
            continue
        found.append((msg.seq, msg.subject, msg.hdr or None, bytes(msg.msg)))
    return found


@settings(max_examples=150, deadline=None)
@given(CONFIGS, PUBLISHES)
def test_the_one_step_publish_is_the_two_step_one(config, publishes):
    plain, full = jsstore.open(None), jsstore.open(None)
    try:
        for js in (plain, full):
            try:
                js.add_stream(name="S", subjects=["p.*"], **config)
            except ApiError:
                return                      # a combination nats-server refuses
        router = plain.router()
        stream = full._streams["S"]
        for subject, payload in publishes:
            with plain.lock:
                got = router.capture_locked(subject, payload, None)
            with full.lock:
                want = two_step(stream, subject, payload)
            assert got == want
        assert stored(plain) == stored(full)
        a, b = plain._streams["S"].store.fast_state(), stream.store.fast_state()
        assert ((a.messages, a.bytes, a.first_seq, a.last_seq)
            == (b.messages, b.bytes, b.first_seq, b.last_seq))
    finally:
        plain.close()
        full.close()


def test_publish_plain_declines_what_it_does_not_do():
    js = jsstore.open(None)
    try:
        js.add_stream(name="S", subjects=["s.*"], max_msg_size=4)
        js.add_stream(name="C", subjects=["c.*"], allow_msg_counter=True)
        js.add_stream(name="W", subjects=["w.*"], retention="workqueue")
        assert js._streams["S"].publish_plain("s.a", b"12345") is None      # too large
        assert js._streams["S"].publish_plain("s.a", b"1234") == b'{"stream":"S","seq":1}'
        assert js._streams["C"].publish_plain("c.a", b"1") is None
        assert js._streams["W"].publish_plain("w.a", b"1") is None
    finally:
        js.close()


def test_a_pub_ack_names_its_stream_as_go_writes_json():
    """Go's json.Marshal escapes < and & (and >) in the stream's name; both publish paths do."""
    js = jsstore.open()
    js.add_stream(name="A<B&C", subjects=["p.*"])
    stream = js.find_stream_locked("A<B&C")
    plain = stream.publish_plain("p.a", b"x")
    assert plain == b'{"stream":"A\\u003cB\\u0026C","seq":1}'
    assert two_step(stream, "p.a", b"y") == b'{"stream":"A\\u003cB\\u0026C","seq":2}'
    assert js.publish("p.a", b"z").stream == "A<B&C"
