"""A stream's consumers found by subject (jsstore.stream.filterindex): the index itself,
and the consumer behaviour that now goes through it with many filtered consumers
(interest retention, deliveries, removals, push interest, filter and deliver-subject
updates).  The brute-force answer (ask every member) is the reference."""

import random

import pytest

import jsstore
from jsstore._core.storage.subjects import _subject_matches
from jsstore.stream.filterindex import FilterIndex

SUBJECTS = ["a", "b", "a.b", "a.c", "x.y.z", "q"]
FILTERS = [[], ["a"], ["b"], ["a", "b"], ["a.*"], ["a.>"], ["x.y.z"], [">"], ["a.b", "q"],
           ["*"]]


def brute(members: dict, subject: str) -> list:
    """Every member whose filters match, in the order they were (last) added."""
    return [key for key, filters in members.items()
            if not filters or any(_subject_matches(subject, f) for f in filters)]


def test_candidates_are_the_matching_members_in_order():
    rng = random.Random(5)
    index: FilterIndex[str] = FilterIndex()
    members: dict[str, list[str]] = {}
    for step in range(2000):
        key = f"m{rng.randrange(12)}"
        if rng.random() < 0.3:
            index.remove(key)
            members.pop(key, None)
        else:
            filters = rng.choice(FILTERS)
            index.add(key, filters, key)
            members.pop(key, None)
            members[key] = filters
        assert len(index) == len(members)
        for subject in SUBJECTS:
            got = [k for k in index.candidates(subject)
                   if not members[k] or any(_subject_matches(subject, f) for f in members[k])]
            assert got == brute(members, subject), (step, subject)
            # a literal member is offered only for its own subjects
            for k in index.candidates(subject):
                filters = members[k]
                if filters and all("*" not in f and ">" not in f for f in filters) \
                        and not index.is_wide(k):
                    assert subject in filters


def test_a_wide_member_is_offered_every_subject():
    index: FilterIndex[str] = FilterIndex()
    index.add("lit", ["a"], "lit")
    index.add("wide", ["b"], "wide", wide=True)
    assert index.is_wide("wide") and not index.is_wide("lit")
    assert index.candidates("a") == ["lit", "wide"]
    assert index.candidates("zzz") == ["wide"]
    index.remove("wide")
    assert index.candidates("zzz") == [] and not index.is_wide("wide")
    index.remove("nothing")         # removing what is absent is no error


@pytest.fixture(params=["file", "memory"])
def js(request, tmp_path):
    handle = jsstore.open(tmp_path if request.param == "file" else None)
    yield handle
    handle.close()


def test_many_filtered_consumers_on_an_interest_stream(js):
    js.add_stream(name="I", subjects=["c.>"], retention="interest")
    k = 50
    for i in range(k):
        js.add_consumer("I", durable_name=f"k{i}", filter_subject=f"c.{i}",
                        ack_policy="explicit")
    js.add_consumer("I", durable_name="wild", filter_subject="c.*.w", ack_policy="explicit")
    js.add_consumer("I", durable_name="both", filter_subjects=["c.1", "c.2.w"],
                    ack_policy="explicit")
    for i in range(2 * k):
        js.publish(f"c.{i}", b"x")          # kept for i < k only
    for i in range(5):
        js.publish(f"c.{i}.w", b"w")        # kept for the wildcard consumer
    assert js.stream_info("I").state.messages == k + 5
    for i in range(k):
        assert js.consumer_info("I", f"k{i}").num_pending == 1, i
    assert js.consumer_info("I", "wild").num_pending == 5
    assert js.consumer_info("I", "both").num_pending == 2
    # c.1 is needed by k1 and by both: it leaves once both acked
    (msg,) = js.pull_subscribe("c.1", "k1", stream="I").fetch(1, timeout=0)
    msg.ack()
    assert js.stream_info("I").state.messages == k + 5
    for msg in js.pull_subscribe("", "both", stream="I").fetch(10, timeout=0):
        msg.ack()
    assert js.stream_info("I").state.messages == k + 4
    # c.2.w leaves with the wildcard consumer's ack, the others too
    for msg in js.pull_subscribe("c.*.w", "wild", stream="I").fetch(10, timeout=0):
        msg.ack()
    assert js.stream_info("I").state.messages == k - 1
    # a consumer going away releases what only it needed
    js.delete_consumer("I", "k7")
    assert js.stream_info("I").state.messages == k - 2


def test_a_removed_message_reaches_a_consumer_whose_filter_changed(js):
    js.add_stream(name="S", subjects=["s.>"])
    js.add_consumer("S", durable_name="C", filter_subject="s.a", ack_policy="explicit")
    js.publish("s.a", b"1")
    sub = js.pull_subscribe("s.a", "C", stream="S")
    (held,) = sub.fetch(1, timeout=0)
    assert js.consumer_info("S", "C").num_ack_pending == 1
    js.update_consumer("S", durable_name="C", filter_subject="s.b", ack_policy="explicit")
    # the delivery of s.a is still pending; deleting the message settles it
    js.delete_msg("S", 1)
    assert js.consumer_info("S", "C").num_ack_pending == 0
    js.publish("s.b", b"2")
    assert js.consumer_info("S", "C").num_pending == 1


def test_push_consumers_start_on_their_own_deliver_subject(js):
    js.add_stream(name="P", subjects=["p.>"])
    for i in range(20):
        js.add_consumer("P", durable_name=f"k{i}", deliver_subject=f"d.{i}",
                        filter_subject=f"p.{i}", ack_policy="none")
        js.publish(f"p.{i}", b"x")
    got: list[str] = []
    js.bus.subscribe("d.7", lambda msg: got.append("d.7"))
    js.tick()
    assert got == ["d.7"]
    # a new deliver subject is heard on, the old one no longer
    js.update_consumer("P", durable_name="k3", deliver_subject="e.3", filter_subject="p.3",
                       ack_policy="none")
    js.bus.subscribe("d.3", lambda msg: got.append("d.3"))
    js.tick()
    assert got == ["d.7"]
    js.bus.subscribe("e.3", lambda msg: got.append("e.3"))
    js.tick()
    assert got == ["d.7", "e.3"]
