"""Subject rules, SubjectIndex and BlockSubjects against plain Python models."""
import itertools
import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from jsstore._core.storage.subjects import (
    BlockSubjects,
    SubjectIndex,
    filters_overlap,
    is_literal,
    is_routable,
    is_subset_match,
    is_valid_subject,
    subject_matches,
)


# ---------------------------------------------------------------- reference model

def ref_matches(subject: str, flt: str) -> bool:
    """NATS matching on token lists: '*' is one token, '>' one or more trailing tokens."""
    if not subject or not flt:
        return False
    subj_tokens, flt_tokens = subject.split("."), flt.split(".")
    if "" in subj_tokens:                   # nats-server's sublist: an empty token matches nothing
        return False
    for i, token in enumerate(flt_tokens):
        if i >= len(subj_tokens):
            return False
        if token == ">":
            return True
        if token != "*" and token != subj_tokens[i]:
            return False
    return len(subj_tokens) == len(flt_tokens)


def ref_overlap(a: str, b: str) -> bool:
    """Brute force: does some literal subject over a small alphabet match both filters?

    A witness only needs the literal tokens of a and b plus one other token, and no
    more tokens than the longer filter has.
    """
    alphabet = sorted({t for t in a.split(".") + b.split(".") if t not in ("*", ">")} | {"zz"})
    longest = max(len(a.split(".")), len(b.split(".")))
    for length in range(1, longest + 1):
        for tokens in itertools.product(alphabet, repeat=length):
            subject = ".".join(tokens)
            if ref_matches(subject, a) and ref_matches(subject, b):
                return True
    return False


def ref_subset(a: str, b: str) -> bool:
    """Brute force: is every literal subject over a small alphabet that matches a matched
    by b as well?  The literal tokens of a and b plus one other token, and one token more
    than the longer filter has, are enough to find a subject that b misses."""
    alphabet = sorted({t for t in a.split(".") + b.split(".") if t not in ("*", ">")} | {"zz"})
    longest = max(len(a.split(".")), len(b.split(".")))
    for length in range(1, longest + 2):
        for tokens in itertools.product(alphabet, repeat=length):
            subject = ".".join(tokens)
            if ref_matches(subject, a) and not ref_matches(subject, b):
                return False
    return True


TOKENS = ["a", "b", "cc", "a*", ">b"]          # "a*" and ">b" are literal tokens
literal_subjects = st.lists(st.sampled_from(TOKENS), min_size=1, max_size=4).map(".".join)
# what may be published: `*` and `>` tokens (ordinary tokens only a filter's wildcards take),
# empty tokens (taken by nothing)
published_subjects = st.lists(st.sampled_from(TOKENS + ["*", ">", ""]),
                              min_size=1, max_size=4).map(".".join)


@st.composite
def filters(draw):
    tokens = draw(st.lists(st.sampled_from(TOKENS + ["*", "*"]), min_size=1, max_size=4))
    if draw(st.booleans()):
        tokens = tokens[:3] + [">"]
    return ".".join(tokens)


# ---------------------------------------------------------------- subject rules

VALID_WITH_WILDCARDS = ["foo", "foo.bar.*", "foo.bar.>", "*", ">", "foo*", "foo**", "foo.**", "foo*bar",
                        "foo.*bar", "foo*.bar", "*bar", "foo>", "foo.>>", "foo>bar", "foo.>bar", "foo>.bar",
                        ">bar", "*.*", "*.>", "$JS.API.>", "a.b.c.d.e.f.g"]
INVALID = ["", ".", ".foo", "foo.", "foo..bar", ">.bar", "foo.>.bar", "foo bar", "foo.b ar", "foo.\tbar",
           "foo\n", "\r", "foo.\f", " ", "foo. .bar", "a.>.>"]
LITERAL_WITH_STARS = ["foo*", "foo**", "foo.**", "foo*bar", "foo.*bar", "foo*.bar", "*bar", "foo>", "foo>>",
                      "foo.>>", "foo>bar", "foo.>bar", "foo>.bar", ">bar", "foo.*-", "foo.>-"]


@pytest.mark.parametrize("subject", VALID_WITH_WILDCARDS)
def test_valid_subjects(subject):
    assert is_valid_subject(subject, allow_wildcards=True)
    assert is_valid_subject(subject.encode(), True)


@pytest.mark.parametrize("subject", INVALID)
def test_invalid_subjects(subject):
    assert not is_valid_subject(subject, allow_wildcards=True)
    assert not is_valid_subject(subject)


@pytest.mark.parametrize("subject", ["foo.bar.*", "foo.bar.>", "*", ">", "*.foo", "a.*.b", "a.>"])
def test_wildcard_subjects_are_not_publishable(subject):
    assert not is_literal(subject)
    assert not is_valid_subject(subject)
    assert is_valid_subject(subject, allow_wildcards=True)


@pytest.mark.parametrize("subject", LITERAL_WITH_STARS + ["foo", "foo.bar"])
def test_wildcard_characters_inside_tokens_are_literal(subject):
    assert is_literal(subject)
    assert is_valid_subject(subject)
    assert subject_matches(subject, subject)


@pytest.mark.parametrize("subject, flt, expected", [
    ("foo", "foo", True), ("foo", "bar", False), ("foo", "*", True), ("foo", ">", True),
    ("foo.bar", ">", True), ("foo.bar", "foo.>", True), ("foo.bar", "bar.>", False),
    ("stats.test.22", "stats.>", True), ("stats.test.22", "stats.*.*", True), ("foo.bar", "foo", False),
    ("stats.test.foos", "stats.test.foos", True), ("stats.test.foos", "stats.test.foo", False),
    ("stats.test", "stats.test.*", False), ("stats.test.foos", "stats.*", False),
    ("stats.test.foos", "stats.*.*.foos", False), ("foo", "foo.>", False), ("foo.bar", "*", False),
    ("foo.***.bar", "foo.***.bar", True), ("foo.>>>.bar", "foo.>>>.bar", True), ("foo.bar", "foo.*-", False),
    ("foo.*-", "foo.*-", True), ("foo.*", "foo.*", True), ("foo.x", "foo*", False), ("foo", "", False),
    ("", ">", False), ("a.b.c", "a.*.>", True), ("a.b", "a.*.>", False), ("a.b", "*.b", True),
    # published subjects with wildcard tokens: only a filter's wildcards take those tokens
    ("a.*", "a.>", True), ("a.>", "a.*", True), ("a.*", "a.b", False), ("a.*", "*.*", True),
    (">", "*", True), ("*", ">", True), ("a.>.c", "a.*.c", True), ("a.*.c", "a.b.>", False),
    # an empty token: no filter takes the subject
    ("a..b", ">", False), ("a.b..c", "a.>", False), ("a.b.", ">", False), (".a", ">", False),
    ("a..b", "a.*.b", False),
])
def test_subject_matches_cases(subject, flt, expected):
    assert subject_matches(subject, flt) is expected


@pytest.mark.parametrize("a, b, expected", [
    ("foo.*", "foo.bar", True), ("foo.*", "foo.bar.baz", False), ("foo.>", "foo.bar.baz", True),
    ("foo.*.bar.>", "foo.*.bar.*", True), ("foo.bar.*", "foo.*.baz", True), ("foo.*", "bar.*", False),
    ("*", ">", True), ("foo.>", "foo", False), ("*.*", "*", False), ("a.*.c", "a.b.*", True),
    ("a.*.c", "a.b.d", False), ("foo", "foo", True), ("foo", "bar", False), (">", "a.b.c", True),
    ("foo.*bar", "foo.baz", False), ("a.*bar.*", "a.baz.*", False), ("a.>", "*.b", True), ("", ">", False),
])
def test_filters_overlap_cases(a, b, expected):
    assert filters_overlap(a, b) is expected
    assert filters_overlap(b, a) is expected


@pytest.mark.parametrize("subject, expected", [
    ("a", True), ("a.*", True), ("a.>", True), ("a.>.b", True), (">", True), ("*", True),
    ("a*.b>", True), ("", False), (".", False), ("a..b", False), (".a", False), ("a.", False),
    ("a b", False), ("a.\tb", False), ("a.\r", False),
])
def test_routable_subjects(subject, expected):
    """What a message can be published on (nats-server routes `*` and `>` tokens anywhere,
    and nothing with an empty token)."""
    assert is_routable(subject) is expected


@given(published_subjects, filters())
def test_subject_matches_against_reference(subject, flt):
    assert subject_matches(subject, flt) == ref_matches(subject, flt)


@given(filters(), filters())
@settings(max_examples=300)
def test_filters_overlap_against_brute_force(a, b):
    assert filters_overlap(a, b) == ref_overlap(a, b)


# nats-server's sublist_test.go TestIsSubsetMatch, and the cases that decide permissions,
# consumer filters and filtered purges: "foo" is not inside "foo.>"
@pytest.mark.parametrize("subject, test, expected", [
    ("foo.bar", "foo.bar", True), ("foo.*", ">", True), ("foo.*", "*.*", True),
    ("foo.*", "foo.*", True), ("foo.*", "foo.bar", False), ("foo.>", ">", True),
    ("foo.>", "*.>", True), ("foo.>", "foo.>", True), ("foo.>", "foo.bar", False),
    ("foo..bar", "foo.*", False), ("foo.*", "foo..bar", False),
    ("foo", "foo.>", False), ("foo", "foo.*", False), ("foo.bar", "foo", False),
    ("foo.>", "foo.*", False), (">", "*", False), ("*", ">", True), ("*", "*", True),
    ("*", "foo", False), ("foo", "*", True), ("foo.bar.baz", "foo.>", True),
    ("foo.*.baz", "foo.*.>", True), ("foo.>", "foo.*.>", False), ("a*.b", "a*.b", True),
    ("a*.b", "*.b", True), ("$JS.API.INFO", "$JS.>", True), ("$JS.EVENT.x", "$JS.EVENT.>", True),
    ("", ">", True), ("", "", False), ("foo", "", False), ("foo.", "foo.*", False),
    ("foo.", "foo.>", True), (".foo", "*.foo", False),
])
def test_is_subset_match_cases(subject, test, expected):
    assert is_subset_match(subject, test) is expected
    assert is_subset_match(subject.encode(), test.encode()) is expected


@given(filters(), filters())
@settings(max_examples=400)
def test_is_subset_match_against_brute_force(a, b):
    assert is_subset_match(a, b) == ref_subset(a, b)


@given(filters(), filters())
def test_is_subset_match_is_an_order(a, b):
    """A filter lies inside itself; two filters inside each other are the same one."""
    assert is_subset_match(a, a)
    if is_subset_match(a, b) and is_subset_match(b, a):
        assert a == b


@given(st.text(alphabet="ab.*> \t", max_size=8), st.booleans())
def test_is_valid_subject_against_reference(subject, allow_wildcards):
    tokens = subject.split(".")
    expected = bool(subject) and all(tokens) and not any(c in subject for c in " \t") and ">" not in tokens[:-1]
    if not allow_wildcards:
        expected = expected and "*" not in tokens and ">" not in tokens
    assert is_valid_subject(subject, allow_wildcards) == expected
    assert is_literal(subject) == ("*" not in tokens and ">" not in tokens)


# ---------------------------------------------------------------- SubjectIndex

def test_intern_find_release_basics():
    index = SubjectIndex()
    assert len(index) == 0 and index.find("a") is None and index.match(">") == []
    a = index.intern("orders.1")
    assert index.intern(b"orders.1") == a and index.find("orders.1") == a
    assert index.get(a) == (0, 0, 0)
    index.set(a, 3, 10, 12)
    assert index.get(a) == (3, 10, 12)
    b = index.intern("orders.2")
    assert b != a and len(index) == 2 and index.subject(b) == "orders.2"
    index.release(a)
    assert index.find("orders.1") is None and len(index) == 1
    for call in (index.get, index.subject, index.release):
        with pytest.raises(KeyError):
            call(a)
    c = index.intern("orders.3")
    assert c == a, "a released id is reused"
    assert index.get(c) == (0, 0, 0), "a reused entry starts zeroed"
    index.verify()


def test_intern_rejects_empty_and_oversized_subjects():
    index = SubjectIndex()
    with pytest.raises(ValueError):
        index.intern("")
    with pytest.raises(ValueError):
        index.intern(b"x" * 65536)
    long_subject = b"y" * 65535
    sid = index.intern(long_subject)
    assert index.find(long_subject) == sid and index.find(b"x" * 65536) is None
    with pytest.raises(KeyError):
        index.get(sid + 1)
    with pytest.raises(KeyError):
        index.release(-1)


def test_non_utf8_subject_round_trips():
    index = SubjectIndex()
    sid = index.intern(b"bad.\xff")
    assert index.subject(sid) == "bad.\udcff"
    assert index.find("bad.\udcff") == sid


def test_growth_compaction_and_reset():
    index = SubjectIndex()
    subjects = [f"svc.{i}.{'x' * (i % 23)}" for i in range(20_000)]
    ids = [index.intern(s) for s in subjects]
    assert ids == list(range(len(subjects)))
    stats = index.stats()
    assert stats["slots"] >= len(subjects) * 4 // 3 and stats["slot_used"] * 4 <= stats["slots"] * 3
    index.verify()
    arena_before = stats["arena_len"]
    for sid in range(0, len(subjects), 4):      # keep one in four
        for gone in (sid + 1, sid + 2, sid + 3):
            index.release(gone)
    stats = index.stats()
    assert stats["arena_len"] < arena_before * 0.6, "the arena was compacted"
    assert stats["arena_garbage"] * 2 <= stats["arena_len"]
    index.verify()
    for sid, subject in enumerate(subjects):
        assert index.find(subject) == (sid if sid % 4 == 0 else None)
    # New subjects take released ids and do not disturb the survivors.
    fresh = [index.intern(f"new.{i}") for i in range(5_000)]
    assert all(sid % 4 != 0 and sid < len(subjects) for sid in fresh)
    assert len(set(fresh)) == len(fresh)
    index.verify()
    for sid in list(range(0, len(subjects), 4)) + fresh:
        index.release(sid)
    assert len(index) == 0 and index.stats()["arena_len"] == 0 and index.stats()["slot_used"] == 0
    assert index.intern("again") == 0
    index.verify()


def test_match_prefix_paths():
    index = SubjectIndex()
    names = ["orders.1", "orders.2.x", "orders", "ordersx.1", "other.1", "orders.1.x.y", "a.orders.1"]
    ids = {name: index.intern(name) for name in names}
    for flt in ["orders.*", "orders.>", "orders.*.x", "*.1", "*.orders.>", "*", ">", "", "orders.1", "nope",
                "orders.*.>", "*.*.*.*", "ordersx.>"]:
        expected = sorted(sid for name, sid in ids.items() if flt in ("", ">") or ref_matches(name, flt))
        assert index.match(flt) == expected, flt


@given(st.lists(literal_subjects, min_size=0, max_size=40), st.lists(filters(), min_size=1, max_size=6),
       st.lists(st.integers(0, 39), max_size=15))
def test_match_against_brute_force(subjects, flts, releases):
    index = SubjectIndex()
    model = {}
    for subject in subjects:
        model[subject] = index.intern(subject)
    by_id = {sid: subject for subject, sid in model.items()}
    for k in releases:
        if k < len(subjects) and subjects[k] in model:
            index.release(model.pop(subjects[k]))
    for flt in flts + ["", ">"]:
        expected = sorted(sid for subject, sid in model.items() if flt in ("", ">") or ref_matches(subject, flt))
        assert index.match(flt) == expected, flt
    assert sorted(index.items()) == sorted(model.items())
    assert all(by_id[sid] == subject for subject, sid in model.items())


def ref_under_subset(subject: str, flt: str) -> bool:
    """A stored subject under a filter when a stored `>` token lies under a `>` of the
    filter only (nats-server's subjectIsSubsetMatch), other stored tokens as ref_matches."""
    subj_tokens, flt_tokens = subject.split("."), flt.split(".")
    for i, token in enumerate(flt_tokens):
        if i >= len(subj_tokens):
            return False
        if token == ">":
            return True
        if subj_tokens[i] == ">" or (token != "*" and token != subj_tokens[i]):
            return False
    return len(subj_tokens) == len(flt_tokens)


stored_subjects = st.lists(st.sampled_from(TOKENS + ["*", ">"]), min_size=1,
                           max_size=4).map(".".join)


@given(st.lists(stored_subjects, min_size=0, max_size=30), st.lists(filters(), min_size=1, max_size=6),
       st.lists(st.integers(0, 29), max_size=12))
def test_match_of_stored_wildcard_tokens(subjects, flts, releases):
    """Subjects published with `*` and `>` tokens are stored as such: a filter's wildcards
    take them as any token, or with subset, a stored `>` under a `>` of the filter only."""
    index = SubjectIndex()
    model = {}
    for subject in subjects:
        model[subject] = index.intern(subject)
    for k in releases:
        if k < len(subjects) and subjects[k] in model:
            index.release(model.pop(subjects[k]))
    index.verify()                      # (counts the live subjects with a `>` token)
    assert index.stats()["full_wild"] == sum(">" in s.split(".") for s in model)
    for flt in flts + [">"]:
        everything = flt == ">"
        assert index.match(flt) == sorted(
            sid for subject, sid in model.items() if everything or ref_matches(subject, flt)), flt
        assert index.match(flt, subset=True) == sorted(
            sid for subject, sid in model.items()
            if everything or ref_under_subset(subject, flt)), flt


class SubjectIndexMachine(RuleBasedStateMachine):
    """Random intern/release/set against a dict model; invariants checked every step."""

    def __init__(self):
        super().__init__()
        self.index = SubjectIndex()
        self.ids = {}         # subject -> id
        self.state = {}       # id -> (total, first, last)
        self.released = set()  # ids handed back and not yet reused

    subjects = st.builds(lambda a, b, pad: f"s{a}.{b}{'p' * pad}",
                         st.integers(0, 40), st.integers(0, 9), st.integers(0, 30))

    @rule(subject=subjects)
    def intern(self, subject):
        sid = self.index.intern(subject)
        if subject in self.ids:
            assert sid == self.ids[subject]
            return
        assert sid not in self.state, "id of a live subject handed out twice"
        if self.released:
            assert sid in self.released, "a free id is reused before a new one is made"
        self.released.discard(sid)
        self.ids[subject] = sid
        self.state[sid] = (0, 0, 0)

    @rule(first=st.integers(0, 40), count=st.integers(1, 60))
    def intern_many(self, first, count):
        for k in range(count):
            self.intern(f"bulk.{first}.{k}")

    @precondition(lambda self: self.ids)
    @rule(data=st.data())
    def release(self, data):
        subject = data.draw(st.sampled_from(sorted(self.ids)))
        sid = self.ids.pop(subject)
        del self.state[sid]
        self.index.release(sid)
        self.released.add(sid)
        if not self.ids:
            self.released.clear()     # an empty index restarts its ids at 0

    @precondition(lambda self: len(self.ids) > 4)
    @rule(keep_every=st.integers(2, 5))
    def release_most(self, keep_every):
        for k, subject in enumerate(sorted(self.ids)):
            if k % keep_every:
                sid = self.ids.pop(subject)
                del self.state[sid]
                self.index.release(sid)
                self.released.add(sid)

    @precondition(lambda self: self.ids)
    @rule(data=st.data(), values=st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1),
                                           st.integers(0, 2**64 - 1)))
    def set_state(self, data, values):
        sid = self.ids[data.draw(st.sampled_from(sorted(self.ids)))]
        self.index.set(sid, *values)
        self.state[sid] = values

    @rule(subject=subjects)
    def find(self, subject):
        assert self.index.find(subject) == self.ids.get(subject)

    @invariant()
    def agrees_with_model(self):
        assert len(self.index) == len(self.ids)
        assert sorted(self.index.items()) == sorted(self.ids.items())
        for subject, sid in self.ids.items():
            assert self.index.get(sid) == self.state[sid]
            assert self.index.subject(sid) == subject
        self.index.verify()


TestSubjectIndexMachine = SubjectIndexMachine.TestCase
TestSubjectIndexMachine.settings = settings(max_examples=60, stateful_step_count=60, deadline=None)


# ---------------------------------------------------------------- BlockSubjects

@given(st.lists(st.tuples(st.integers(0, 300), st.integers(1, 10**12)), max_size=400))
def test_block_subjects_against_model(adds):
    table = BlockSubjects()
    model = {}
    for sid, seq in adds:
        table.add(sid, seq)
        count, first, last = model.get(sid, (0, seq, seq))
        model[sid] = (count + 1, min(first, seq), max(last, seq))
    assert len(table) == len(model)
    for sid in range(302):
        assert table.get(sid) == model.get(sid)
    assert table.items() == sorted((sid,) + v for sid, v in model.items())
    table.clear()
    assert len(table) == 0 and table.get(0) is None and table.items() == []
    table.add(7, 99)
    assert table.get(7) == (1, 99, 99)


def test_block_subjects_rejects_reserved_id():
    with pytest.raises(ValueError):
        BlockSubjects().add(0xFFFFFFFF, 1)
    with pytest.raises(OverflowError):
        BlockSubjects().add(-1, 1)


# ---------------------------------------------------------------- memory

MEMORY_SCRIPT = textwrap.dedent("""
    from jsstore._core.storage.subjects import SubjectIndex

    def rss_anon():
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024

    count = 1_000_000
    index = SubjectIndex()
    before = rss_anon()
    for i in range(count):
        index.intern(b"orders.%06d" % i)
    after = rss_anon()
    assert len(index) == count and index.find(b"orders.123456") == 123456
    print((after - before) / count)
""")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc (Linux)")
def test_memory_per_subject_at_one_million():
    import jsstore._core.storage.subjects as module
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(module.__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")])))
    result = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT], env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    per_subject = float(result.stdout.strip())
    print(f"SubjectIndex resident memory: {per_subject:.1f} bytes/subject at 1M subjects")
    assert per_subject < 40, f"{per_subject:.1f} bytes per subject"   # 16-byte entry, slots, 7-byte record
