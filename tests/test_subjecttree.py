"""SubjectTree answers as the core's subject rules do, filter by filter (hypothesis: random
filters and subjects from a small alphabet, so that they often meet)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from jsstore._core.storage.subjects import _subject_matches, filters_overlap, is_subset_match
from jsstore.wire.subjecttree import SubjectTree

LITERALS = st.sampled_from(["a", "b", "c"])
TOKENS = st.one_of(LITERALS, st.just("*"))


@st.composite
def filters(draw):
    tokens = draw(st.lists(TOKENS, min_size=1, max_size=4))
    if draw(st.booleans()):
        tokens.append(">")
    return ".".join(tokens)


@st.composite
def published(draw):
    """A published subject: literal tokens, sometimes a "*" or ">" token, an empty one."""
    tokens = draw(st.lists(st.one_of(LITERALS, st.sampled_from(["*", ">", ""])),
                           min_size=1, max_size=5))
    return ".".join(tokens)


def _tree(names):
    tree = SubjectTree()
    for index, name in enumerate(names):
        tree.insert(name, index)
    return tree


@settings(max_examples=400, deadline=None)
@given(st.lists(filters(), max_size=12), published())
def test_match_is_subject_matches(names, subject):
    expected = sorted(i for i, name in enumerate(names) if _subject_matches(subject, name))
    assert sorted(_tree(names).match(subject)) == expected


@settings(max_examples=400, deadline=None)
@given(st.lists(filters(), max_size=12), filters())
def test_overlapping_and_supersets_are_the_core_rules(names, query):
    tree = _tree(names)
    assert sorted(tree.overlapping(query)) == sorted(
        i for i, name in enumerate(names) if query == name or filters_overlap(query, name))
    assert sorted(tree.supersets(query)) == sorted(
        i for i, name in enumerate(names) if is_subset_match(query, name))


@settings(max_examples=200, deadline=None)
@given(st.lists(filters(), max_size=12), st.lists(LITERALS, min_size=1, max_size=3))
def test_takes_any_under(names, head):
    head = ".".join(head)
    expected = any(filters_overlap(head + ".*", name) for name in names)
    assert _tree(names).takes_any_under(head) is expected


@settings(max_examples=200, deadline=None)
@given(st.lists(filters(), max_size=12), st.data())
def test_removal_leaves_the_others_and_prunes(names, data):
    tree = _tree(names)
    gone = data.draw(st.sets(st.integers(0, max(0, len(names) - 1))))
    for index in gone:
        if index < len(names):
            assert tree.remove(names[index], index)
            assert not tree.remove(names[index], index)
    left = [i for i in range(len(names)) if i not in gone]
    assert tree.size == len(left)
    assert sorted(tree.overlapping(">")) == left
    for index in left:
        tree.remove(names[index], index)
    assert tree._root.empty()


def test_a_consumer_of_many_filters_takes_what_they_match(tmp_path):
    """A consumer with more filters than fit a list is matched through the tree: it gets
    the messages some filter matches, the core's rule, no more and no fewer."""
    import jsstore

    filters = [f"o.{n}.*" for n in range(12)] + ["p.>", "q.a", "r.*.x"]
    subjects = [f"{a}.{b}.{c}" for a in "opqr" for b in ["1", "3", "11", "40", "a", "z"]
                for c in ["x", "y"]] + ["q.a", "p.1", "r.1"]
    expected = [s for s in subjects if any(_subject_matches(s, f) for f in filters)]
    js = jsstore.open(str(tmp_path))
    try:
        js.add_stream(name="T", subjects=["o.>", "p.>", "q.>", "r.>"])
        for subject in subjects:
            js.publish(subject, b"")
        js.add_consumer("T", durable_name="C", ack_policy="none", filter_subjects=filters)
        sub = js.pull_subscribe("", durable="C", stream="T")
        got = [msg.subject for msg in sub.fetch(len(subjects), timeout=0)]
    finally:
        js.close()
    assert got == expected and len(expected) > 20
