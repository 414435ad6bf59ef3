"""Subject transforms: every mapping function, the invalid mappings and their errors,
Match/reverse semantics, properties, and a comparison with a real nats-server."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import given, settings, strategies as st

from jsstore.stream import transform as subjtransform
from jsstore.stream.transform import (SubjectTransform, TransformError, fnv1a32, partition_of,
                                      transform_error, validate_mapping)


def mapped(src: str, dest: str, subject: str, *, strict: bool = False) -> str | None:
    return SubjectTransform(src, dest, strict=strict).match(subject)


# --- the functions, one example each (expectations worked out by hand) ---

@pytest.mark.parametrize("src, dest, subject, expected", [
    ("foo", "bar", "foo", "bar"),
    ("foo.*.*", "bar.$2.$1", "foo.A.B", "bar.B.A"),
    ("foo.*.*", "bar.{{wildcard(2)}}.{{ Wildcard( 1 ) }}", "foo.A.B", "bar.B.A"),
    ("foo.*.>", "bar.$1.>", "foo.A.x.y.z", "bar.A.x.y.z"),
    ("foo.>", "bar.>", "foo.a", "bar.a"),
    (">", "all.>", "x.y", "all.x.y"),
    ("", "all.>", "x.y", "all.x.y"),
    ("*", "{{splitFromLeft(1,3)}}", "12345", "123.45"),
    ("*", "{{SplitFromLeft(1,5)}}", "12345", "12345"),      # position not inside: unchanged
    ("*", "{{splitfromleft(1,0)}}", "12345", "12345"),
    ("*", "{{splitFromRight(1,3)}}", "12345", "12.345"),
    ("*", "{{splitFromRight(1,9)}}", "12345", "12345"),
    ("*", "{{sliceFromLeft(1,2)}}", "12345", "12.34.5"),
    ("*", "{{sliceFromLeft(1,2)}}", "1234", "12.34"),
    ("*", "{{sliceFromLeft(1,5)}}", "12345", "12345"),
    ("*", "{{sliceFromRight(1,2)}}", "12345", "1.23.45"),
    ("*", "{{sliceFromRight(1,2)}}", "123456", "12.34.56"),
    ("*", "{{split(1,-)}}", "-abc--def-", "abc.def"),
    ("*", "{{split(1,-)}}", "abc", "abc"),
    ("*", "{{split(1,ab)}}", "xabyabz", "x.y.z"),
    ("*", "{{left(1,2)}}", "12345", "12"),
    ("*", "{{left(1,7)}}", "12345", "12345"),
    ("*", "{{right(1,2)}}", "12345", "45"),
    ("*", "{{right(1,0)}}", "12345", "12345"),
    ("a.*.b.*", "x.{{wildcard(2)}}.{{left(1,1)}}", "a.pq.b.rs", "x.rs.p"),
    ("foo", "$bar.baz", "foo", "$bar.baz"),           # "$" + non-number is a literal token
    ("foo.*", "x.$0", "foo.A", "x.foo"),              # unknown wildcard number reads token 0
])
def test_function_examples(src, dest, subject, expected):
    assert mapped(src, dest, subject) == expected


def test_partition_values_are_fnv1a_of_the_joined_wildcards():
    assert fnv1a32(b"") == 0x811C9DC5
    assert fnv1a32(b"a") == 0xE40C292C
    assert fnv1a32(b"foobar") == 0xBF9CF968
    transform = SubjectTransform("p.*.*", "p.{{partition(3,1,2)}}.$1.$2")
    for first, second in [("a", "b"), ("ab", ""), ("x", "yz")]:
        if not second:
            continue
        expected = fnv1a32((first + second).encode()) % 3
        assert transform.match(f"p.{first}.{second}") == f"p.{expected}.{first}.{second}"
    # tokens are concatenated without a separator: a.bc and ab.c share a partition
    wide = SubjectTransform("p.*.*", "{{partition(1000,1,2)}}")
    assert wide.match("p.a.bc") == wide.match("p.ab.c")
    # order of the named wildcards counts
    assert (SubjectTransform("p.*.*", "{{partition(1000,2,1)}}").match("p.a.bc")
            == str(fnv1a32(b"bca") % 1000))


def test_partition_shorthand_hashes_the_whole_subject():
    assert mapped("foo", "{{partition(7)}}", "foo") == str(fnv1a32(b"foo") % 7)
    assert mapped("a.*", "x.{{partition(7)}}", "a.b") == "x." + str(fnv1a32(b"a.b") % 7)
    assert mapped("a.>", "{{partition(7)}}.>", "a.b.c") == f"{fnv1a32(b'a.b.c') % 7}.b.c"
    assert mapped("a.*", "{{partition(0,1)}}", "a.b") == "0"
    assert partition_of("abc", -1) == fnv1a32(b"abc") % 0xFFFFFFFF


def test_random_stays_below_its_ceiling():
    transform = SubjectTransform("r.*", "r.{{random(3)}}.$1")
    seen = {transform.match("r.x") for _ in range(300)}
    assert seen == {"r.0.x", "r.1.x", "r.2.x"}
    assert mapped("foo", "{{random(0)}}", "foo") == "0"
    assert {mapped("foo", "{{random(-2)}}", "foo") for _ in range(100)} == {"0", "1"}


def test_match_and_transform():
    transform = SubjectTransform("foo.*.bar", "baz.$1")
    assert transform.match("foo.x.bar") == "baz.x"
    assert transform.match("foo.x.baz") is None
    assert transform.match("foo.x.bar.more") is None
    assert transform.match("foo.*.bar") is None          # not a literal subject
    assert transform.match("foo..bar") is None
    assert transform.transform("foo.y.bar") == "baz.y"
    # ">" to ">" and an empty destination are no-ops, whatever the subject
    assert SubjectTransform(">", ">").match("a.*") == "a.*"
    assert SubjectTransform("", "").is_identity
    assert SubjectTransform("foo.*", "").match("foo.a") == "foo.a"
    assert SubjectTransform("foo.*", "").match("bar.a") is None
    with pytest.raises(ValueError):
        SubjectTransform("a.*.*", "{{left(2,1)}}").transform("a")


# --- invalid mappings ---

BAD = "invalid mapping destination"


@pytest.mark.parametrize("src, dest, strict, kind, text", [
    ("foo.*", "bar.*", False, "bad_subject", "invalid subject"),
    ("foo.>", "bar", False, "bad_subject", "invalid subject"),
    ("foo", "bar.>", False, "bad_subject", "invalid subject"),
    ("foo..x", "bar", False, "bad_subject", "invalid subject"),
    ("foo.>.x", "bar.>", False, "bad_subject", "invalid subject"),
    ("foo.*", "bar.$2", False, "index_out_of_range",
     f"{BAD}: wildcard index out of range in $2: [2]"),
    ("foo.>", "bar.{{wildcard(1)}}.>", False, "index_out_of_range",
     f"{BAD}: wildcard index out of range in {{{{wildcard(1)}}}}: [1]"),
    ("foo", "bar.$1", False, "index_out_of_range",
     f"{BAD}: wildcard index out of range in $1"),
    ("foo", "{{left(1,1)}}", False, "index_out_of_range",
     f"{BAD}: wildcard index out of range in {{{{left(1,1)}}}}"),
    ("foo.*", "{{nope(1)}}", False, "unknown_function",
     f"{BAD}: unknown function in {{{{nope(1)}}}}"),
    ("foo.*", "{{wildcard()}}", False, "not_enough_args",
     f"{BAD}: not enough arguments passed to the function in {{{{wildcard()}}}}"),
    ("foo.*", "{{wildcard(1,2)}}", False, "too_many_args",
     f"{BAD}: too many arguments passed to the function in {{{{wildcard(1,2)}}}}"),
    ("foo.*", "{{wildcard(x)}}", False, "invalid_arg",
     f"{BAD}: function argument is invalid or in the wrong format in {{{{wildcard(x)}}}}"),
    ("foo.*", "{{partition()}}", False, "invalid_arg", None),
    ("foo.*", "{{partition(a,1)}}", False, "invalid_arg", None),
    ("foo.*", "{{partition(2147483648,1)}}", False, "invalid_arg", None),
    ("foo.*", "{{partition(3,1,b)}}", False, "invalid_arg", None),
    ("foo.*", "{{splitFromLeft(1)}}", False, "not_enough_args", None),
    ("foo.*", "{{sliceFromRight(1,2,3)}}", False, "too_many_args", None),
    ("foo.*", "{{left(1,2147483648)}}", False, "invalid_arg", None),
    ("foo.*", "{{right(x,2)}}", False, "invalid_arg", None),
    ("foo.*", "{{split(1)}}", False, "not_enough_args", None),
    ("foo.*", "{{split(1,a b)}}", False, "invalid_arg", None),
    ("foo.*", "{{random()}}", False, "invalid_arg", None),
    ("foo.*", "{{random(1,2)}}", False, "not_enough_args", None),
    ("foo.*", "{{random(2147483648)}}", False, "invalid_arg", None),
    ("foo.*", "{{partition(3,2)}}", False, "index_out_of_range", None),
    ("foo.*.*", "bar.$1", True, "not_using_all_wildcards",
     f"{BAD}: not using all of the token wildcard(s) in bar.$1"),
    ("foo.*", "bar.{{partition(2,1)}}", True, "not_supported_for_import",
     f"{BAD}: the only mapping function allowed for import transforms is {{{{Wildcard()}}}}"
     " in {{partition(2,1)}}"),
])
def test_invalid_mappings(src, dest, strict, kind, text):
    with pytest.raises(TransformError) as raised:
        SubjectTransform(src, dest, strict=strict)
    assert raised.value.kind == kind
    assert str(raised.value).startswith(subjtransform.ERROR_TEXTS[kind])
    if text is not None:
        assert str(raised.value) == text


def test_strict_accepts_reversible_wildcard_mappings():
    transform = SubjectTransform("foo.*.*", "bar.{{wildcard(2)}}.$1", strict=True)
    assert transform.match("foo.a.b") == "bar.b.a"
    # nats-server applies the strict rules only when the source has wildcards
    assert SubjectTransform("foo", "{{partition(2)}}", strict=True).match("foo") in ("0", "1")


@pytest.mark.parametrize("src, dest, text", [
    ("foo.*", "", None),
    ("foo.*", "bar.$1", None),
    ("foo.*", "bar..$1", f"{BAD}: invalid transform"),
    ("foo.>", "bar.>.x", f"{BAD}: invalid transform in x"),
    ("foo.*", "bar.{{nope(1)}}", f"{BAD}: unknown function in {{{{nope(1)}}}}"),
    ("foo.*", "bar baz.$1", f"{BAD}: invalid transform"),
    ("foo.*", "bar.{{random(5)}}", None),
    ("foo.*", "bar.$2", f"{BAD}: wildcard index out of range in $2: [2]"),
    ("foo.*", "bar.*", "invalid subject"),
])
def test_validate_mapping(src, dest, text):
    assert transform_error(src, dest) == text
    if text is None:
        validate_mapping(src, dest)
    else:
        with pytest.raises(TransformError):
            validate_mapping(src, dest)


# --- reverse ---

def test_reverse_of_a_swap_and_of_a_literal_mapping():
    forward = SubjectTransform("foo.*.*", "bar.$2.$1")
    backward = forward.reverse()
    assert (backward.src, backward.dest) == ("bar.*.*", "foo.$2.$1")
    assert backward.match(forward.match("foo.a.b")) == "foo.a.b"
    literal = SubjectTransform("foo", "bar").reverse()
    assert literal.match("bar") == "foo"
    assert SubjectTransform("foo.*", "{{partition(3,1)}}").reverse() is None


def test_reverse_does_not_undo_a_three_cycle():
    # nats-server hands the placeholders back in destination order: a rotation comes out
    # rotated the same way again instead of undone.
    forward = SubjectTransform("a.*.*.*", "b.$2.$3.$1")
    assert forward.match("a.x.y.z") == "b.y.z.x"
    assert forward.reverse().match("b.y.z.x") == "a.z.x.y"


# --- properties ---

tokens = st.text(alphabet="abcxyz0123456789-_", min_size=1, max_size=12)


@st.composite
def permutations(draw):
    size = draw(st.integers(1, 6))
    order = draw(st.permutations(list(range(1, size + 1))))
    values = draw(st.lists(tokens, min_size=size, max_size=size))
    return order, values


@settings(max_examples=200, deadline=None)
@given(permutations())
def test_wildcard_permutations_are_invertible(case):
    order, values = case
    src = "in." + ".".join(["*"] * len(order))
    forward = SubjectTransform(src, "out." + ".".join(f"${n}" for n in order), strict=True)
    inverse_order = [order.index(n) + 1 for n in range(1, len(order) + 1)]
    backward = SubjectTransform("out." + ".".join(["*"] * len(order)),
                                "in." + ".".join(f"{{{{wildcard({n})}}}}" for n in inverse_order),
                                strict=True)
    subject = "in." + ".".join(values)
    moved = forward.match(subject)
    assert moved == "out." + ".".join(values[n - 1] for n in order)
    assert backward.match(moved) == subject
    if all(order[order[i] - 1] == i + 1 for i in range(len(order))):   # an involution
        assert forward.reverse().match(moved) == subject


@settings(max_examples=200, deadline=None)
@given(tokens, st.integers(-3, 15))
def test_cutting_functions_keep_the_characters(token, size):
    for function in ("splitFromLeft", "splitFromRight", "sliceFromLeft", "sliceFromRight"):
        out = mapped("*", f"{{{{{function}(1,{size})}}}}", token)
        assert out.replace(".", "") == token
        pieces = out.split(".")
        assert all(pieces)
        if 0 < size < len(token):
            if function.startswith("split"):
                assert len(pieces) == 2
                assert len(pieces[0 if function.endswith("Left") else 1]) == size
            else:
                assert all(len(piece) <= size for piece in pieces)
                assert len(pieces) == -(-len(token) // size)
        else:
            assert out == token
    left, right = mapped("*", f"{{{{left(1,{size})}}}}", token), \
        mapped("*", f"{{{{right(1,{size})}}}}", token)
    assert token.startswith(left) and token.endswith(right)
    assert len(left) == len(right) == (size if 0 < size < len(token) else len(token))


@settings(max_examples=200, deadline=None)
@given(st.lists(tokens, min_size=2, max_size=2), st.integers(1, 50))
def test_partition_in_range(values, partitions):
    out = mapped("p.*.*", f"{{{{partition({partitions},1,2)}}}}", "p." + ".".join(values))
    assert 0 <= int(out) < partitions


# --- against nats-server ---

SERVER_MAPPINGS = [
    ("f0.*.*", "o.0.{{splitFromLeft(1,2)}}.{{splitFromRight(2,2)}}"),
    ("f1.*", "o.1.{{sliceFromLeft(1,3)}}.x.{{sliceFromRight(1,3)}}"),
    ("f2.*.*", "o.2.{{split(2,-)}}.{{left(1,2)}}.{{right(1,2)}}"),
    ("f3.*.>", "o.3.{{partition(5)}}.$1.>"),
    ("f4.*.*", "o.4.$2.{{wildcard(1)}}"),
    ("f5.*", "o.5.{{partition(4,1)}}"),
]
INVALID_DESTINATIONS = [
    ("t.*", "x.$2"), ("t.*", "x.{{nope(1)}}"), ("t.*", "x.{{wildcard()}}"),
    ("t.*", "x.{{left(1)}}"), ("t.*", "x.{{split(1,a b)}}"), ("t.*", "x..y"),
    ("t.*", "x.{{partition(a,1)}}"), ("t.*", "x.*"), ("t.>", "x"), ("t.*", "x y.$1"),
    ("t.*", "x.{{random(1,2)}}"), ("t", "x.$1"), ("t.*.*", "x.{{partition(3,1,3)}}"),
]
VALID_DESTINATIONS = [("t.*", "x.{{random(3)}}"), ("t", "x.{{partition(3)}}"),
                      ("t.*.*", "x.$2.{{split(1,-)}}"), ("t.>", "x.>")]


def _server_subjects(count: int) -> list[str]:
    values = ["a", "ab", "abc", "abcd", "abcde", "k-v", "-x--y-", "1234567", "Zz"]
    out = []
    for i in range(count):
        out.append(f"{values[i % len(values)]}{i // len(values) or ''}")
    return out


@pytest.mark.natsserver
def test_mappings_agree_with_nats_server(tmp_path):
    natsserver = pytest.importorskip("natsserver")
    nats = pytest.importorskip("nats")
    natsserver.require_nats_server()
    partition = ("p.*.*", "p.{{partition(3,1,2)}}.{{wildcard(1)}}.{{wildcard(2)}}")
    entries = [partition, *SERVER_MAPPINGS]
    config = tmp_path / "server.conf"
    config.write_text("mappings {\n" + "".join(
        f"  {json.dumps(src)}: {json.dumps(dest)}\n" for src, dest in entries) + "}\n")
    words = _server_subjects(40)
    published = [f"p.{a}.{b}" for a in words[:12] for b in words[:12]]
    for src, _ in SERVER_MAPPINGS:
        prefix = src.split(".")[0]
        published += [f"{prefix}.{a}.{b}" if src.count(".") == 2 else f"{prefix}.{a}"
                      for a in words[:9] for b in words[9:11]]
        if src.endswith(">"):
            published += [f"{prefix}.{a}.x.y" for a in words]
    published = list(dict.fromkeys(published))

    async def run(url):
        nc = await nats.connect(url)
        received: dict[str, str] = {}
        done = asyncio.Event()

        async def handler(msg):
            received[msg.data.decode()] = msg.subject
            if len(received) == len(published):
                done.set()
        try:
            await nc.subscribe("p.>", cb=handler)
            await nc.subscribe("o.>", cb=handler)
            await nc.flush()
            for subject in published:
                await nc.publish(subject, subject.encode())
            await nc.flush()
            await asyncio.wait_for(done.wait(), 10)
            answers = []
            for src, dest in INVALID_DESTINATIONS:
                request = {"name": f"T{len(answers)}", "subjects": [f"in{len(answers)}.>"],
                           "storage": "memory",
                           "subject_transform": {"src": src, "dest": dest}}
                reply = await nc.request(f"$JS.API.STREAM.CREATE.T{len(answers)}",
                                         json.dumps(request).encode(), timeout=2)
                answers.append(json.loads(reply.data))
            await nc.request("$JS.API.STREAM.CREATE.ORIGIN", json.dumps(
                {"name": "ORIGIN", "subjects": ["origin.>"], "storage": "memory"}).encode())
            checks = []
            for i, (src, dest) in enumerate(INVALID_DESTINATIONS + VALID_DESTINATIONS):
                mirror = {"name": f"M{i}", "storage": "memory", "mirror": {
                    "name": "ORIGIN", "subject_transforms": [{"src": src, "dest": dest}]}}
                republish = {"name": f"R{i}", "subjects": [f"r{i}.>"], "storage": "memory",
                             "republish": {"src": src, "dest": dest}}
                replies = [await nc.request(f"$JS.API.STREAM.CREATE.{cfg['name']}",
                                            json.dumps(cfg).encode(), timeout=2)
                           for cfg in (mirror, republish)]
                checks.append([json.loads(reply.data).get("error", {}).get("description")
                               for reply in replies])
            return received, answers, checks
        finally:
            await nc.close()

    with natsserver.nats_server(tmp_path / "store", ["-c", str(config)]) as server:
        received, answers, checks = asyncio.run(run(server.url))
    transforms = [SubjectTransform(src, dest) for src, dest in entries]
    for subject in published:
        mine = [out for t in transforms if (out := t.match(subject)) is not None]
        assert mine == [received[subject]], subject
    for (src, dest), answer in zip(INVALID_DESTINATIONS, answers):
        assert answer["error"]["description"] == f"stream transform: {transform_error(src, dest)}", \
            (src, dest, answer)
    # mirror (and source) transforms go through ValidateMapping; republish only has to
    # build as a transform, so a blank in a literal destination token passes there.
    for (src, dest), (mirror_error, republish_error) in zip(
            INVALID_DESTINATIONS + VALID_DESTINATIONS, checks):
        problem = transform_error(src, dest)
        assert mirror_error == (None if problem is None else f"mirror transform: {problem}")
        try:
            SubjectTransform(src, dest)
            builds = True
        except TransformError:
            builds = False
        assert (republish_error is None) == builds, (src, dest, republish_error)
        if not builds:
            assert republish_error == (f"stream configuration for republish with transform "
                                       f"from '{src}' to '{dest}' not valid")
