"""jsstore.gocompat.json and .quoting: Go's encoding/json and strconv/time quoting.

The decoder's texts are Go's (nats-server 2.15.1's, checked against it in
test_gocompat_json_differential); here: the rules one by one, the fast path against the
exact reader, the encoder against the json module plus Go's HTML escapes, and the quoting
functions against outputs of Go's strconv.Quote / QuoteRune and the time package.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from jsstore.gocompat import json as gojson
from jsstore.gocompat import quoting

TIME = gojson.time_type(lambda text: text if text[:4].isdigit() else _bad_time(text))


def _bad_time(text):
    raise ValueError(f"parsing time {quoting.time_quote(text)}")


INNER = gojson.struct("server.Inner", {"a": gojson.STRING_TYPE, "b": gojson.INT})
REQUEST = gojson.struct("server.Request", {
    "name": gojson.STRING_TYPE, "seq": gojson.UINT64, "count": gojson.INT, "small": gojson.INT32,
    "flag": gojson.BOOL, "wait": gojson.DURATION, "at": TIME,
    "list": gojson.slice_of(gojson.STRING_TYPE), "tags": gojson.map_of(gojson.STRING_TYPE),
    "inner": INNER, "inners": gojson.slice_of(INNER, "[]*server.Inner"),
    "mode": gojson.enum({"a": "a", "b": "b"}, "can not unmarshal %q"),
    "algo": gojson.text_enum({"none": "none", "s2": "s2"}, "unknown algorithm"),
})


def unmarshal(body: bytes):
    try:
        return gojson.unmarshal(body, REQUEST)
    except gojson.GoJSONError as exc:
        return str(exc)


def decode(body: bytes, strict: bool = True):
    try:
        return gojson.decode_request(body, REQUEST, strict=strict)
    except gojson.GoJSONError as exc:
        return str(exc)


# -- decoding rules -------------------------------------------------------------------------
@pytest.mark.parametrize("body, fields", [
    (b'{"name":"x","seq":5}', {"name": "x", "seq": 5}),
    (b'{"name":null,"seq":null,"flag":null}', {}),                 # null: the zero value
    (b'{"list":null,"tags":null,"at":null}', {"list": None, "tags": None, "at": None}),
    (b'{"NAME":"x","Seq":1}', {"name": "x", "seq": 1}),          # other letter case
    (b'{"nam\xc5\xbfe":1}', {}),                                    # no field folds to that
    (b'{"\xc5\xbfeq":3}', {"seq": 3}),                              # U+017F folds to s
    (b'{"seq":1,"SEQ":2,"seq":3}', {"seq": 3}),                    # the last one wins
    (b'{"zz":1,"name":"x"}', {"name": "x"}),                      # unknown: skipped
    (b'{"inner":{"a":"x"},"inner":{"b":2}}', {"inner": {"a": "x", "b": 2}}),  # merged
    (b'{"tags":{"k":"1"},"tags":{"j":"2"}}', {"tags": {"k": "1", "j": "2"}}),
    (b'{"tags":{"k":null}}', {"tags": {"k": ""}}),
    (b'{"inners":[null,{"a":"x"}]}', {"inners": [{}, {"a": "x"}]}),
    (b'{"list":["a",null]}', {"list": ["a", ""]}),
    (b'{"algo":null}', "unknown algorithm"),
    (b'{"algo":"s2"}', {"algo": "s2"}),
    (b'{"algo":"\\u0073\\u0032"}', {"algo": "s2"}),               # read as a Go string
    (b'{"mode":"a"}', {"mode": "a"}),
    (b'{"mode":"\\u0061"}', 'can not unmarshal "\\"\\\\u0061\\""'),  # the raw JSON
    (b'{"mode":null}', 'can not unmarshal "null"'),
    (b'{"name":"\xff\\ud800"}', {"name": "\ufffd\ufffd"}),          # invalid text: U+FFFD
    (b"null", {}),
    (b' {"flag":true} ', {"flag": True}),
])
def test_go_decoding_rules(body, fields):
    assert unmarshal(body) == fields


@pytest.mark.parametrize("body, error", [
    (b'{"seq":"1"}', "json: cannot unmarshal string into Go struct field Request.seq of type uint64"),
    (b'{"seq":-1}', "json: cannot unmarshal number -1 into Go struct field Request.seq of type uint64"),
    (b'{"seq":-0}', "json: cannot unmarshal number -0 into Go struct field Request.seq of type uint64"),
    (b'{"count":1.5}', "json: cannot unmarshal number 1.5 into Go struct field Request.count of type int"),
    (b'{"small":2147483648}', "json: cannot unmarshal number 2147483648 into Go struct field Request.small of type int32"),
    (b'{"Wait":"1s"}', "json: cannot unmarshal string into Go struct field Request.Wait of type time.Duration"),
    (b'{"name":5}', "json: cannot unmarshal number into Go struct field Request.name of type string"),
    (b'{"inner":{"b":"x"}}', "json: cannot unmarshal string into Go struct field Request.inner.b of type int"),
    (b'{"inners":[5]}', "json: cannot unmarshal number into Request.inners.0 of type server.Inner"),
    (b'{"inners":"x"}', "json: cannot unmarshal string into Go struct field Request.inners of type []*server.Inner"),
    (b'{"tags":{"k":5}}', "json: cannot unmarshal number into Go struct field Request.tags.k of type string"),
    (b'{"at":5}', "json: cannot unmarshal number into Go struct field Request.at of type time.Time"),
    (b'{"at":"bad"}', 'parsing time "bad"'),
    (b'{"algo":5}', "json: cannot unmarshal number into Go value of type string"),
    (b'{"seq":"x","seq":1}', "json: cannot unmarshal string into Go struct field Request.seq of type uint64"),
    (b"[1]", "json: cannot unmarshal array into Go value of type server.Request"),
    (b"5", "json: cannot unmarshal number into Go value of type server.Request"),
    (b'{"seq":1', "unexpected end of JSON input"),
    (b"", "unexpected end of JSON input"),
    (b'{"seq":1}x', "invalid character 'x' after top-level value"),
    (b'{"seq":1,}', "invalid character '}' looking for beginning of object key string"),
    (b'{"a":"\\q"}', "invalid escape sequence `\\q` in string"),
    (b'{"a":"\\u12zz"}', "invalid escape sequence `\\u12zz` in string"),
    (b'{"a":"\x01"}', "invalid character '\\x01' in string"),
    (b'{"a":tru}', "invalid character '}' in literal true (expecting 'e')"),
    (b'{"a":\xc3\xa9}', "invalid character '\xe9' looking for beginning of value"),
    (b'{"a":\xff}', "invalid character '\\xff' looking for beginning of value"),
    (b'{"a":1.}', "invalid character '}' in numeric literal"),
    (b"[" * 10001 + b"]" * 10001, "exceeded max depth"),
])
def test_unmarshal_errors_are_gos(body, error):
    assert unmarshal(body) == error


@pytest.mark.parametrize("body, answer", [
    (b"", {}),                                                     # io.EOF: nothing set
    (b" ", {}),
    (b'{"seq":1} {"name":"x"}', {"seq": 1, "name": "x"}),          # values merge
    (b'{"seq":1}{"seq":"x"}', "json: cannot unmarshal string into Go struct field Request.seq of type uint64"),
    (b'{"zz":1}', 'json: unknown field "zz"'),
    (b'{"inner":{"zz":1}}', 'json: unknown field "zz"'),
    (b'{"seq":1', "unexpected EOF"),
    (b'{"seq":1}x', "invalid character 'x' looking for beginning of value at offset 10"),
    (b'{"subjects_filter":"\\q"}', "invalid escape sequence `\\q` in string at offset 22"),
    (b'{"a":"\\u12zz"}', "invalid escape sequence `\\u12zz` in string at offset 12"),
    (b'{"a":\xc3\xa9}', "invalid character '\xe9' looking for beginning of value at offset 7"),
])
def test_request_decoding_is_nats_servers(body, answer):
    assert decode(body) == answer


def test_lenient_request_decoding_skips_unknown_fields():
    assert decode(b'{"zz":1,"name":"x"}', strict=False) == {"name": "x"}


def test_is_empty_object():
    for body in (b"", b"{}", b" { } "):
        assert gojson.is_empty_object(body)
    for body in (b" ", b"null", b"[]", b'{"a":1}', b"{", b"{}x"):
        assert not gojson.is_empty_object(body)


# -- the fast path agrees with the exact reader -----------------------------------------------
_KEYS = st.sampled_from(list(REQUEST.fields) + ["NAME", "Seq", "zz", "inner", "mode"])
_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-(1 << 66), max_value=1 << 66),
              st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6),
              st.sampled_from(["a", "b", "s2", "none", "2024-01-01T00:00:00Z"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["a", "b", "A", "k"]), inner, max_size=3)),
    max_leaves=8)


def _both(read, exact, body, **options):
    def attempt(function):
        try:
            return function(body, REQUEST, **options)
        except gojson.GoJSONError as exc:
            return ("error", str(exc))
    return attempt(read), attempt(exact)


@settings(max_examples=400)
@given(st.lists(st.tuples(_KEYS, _VALUES), max_size=5), st.booleans())
def test_fast_and_exact_readers_agree(members, strict):
    body = ("{" + ",".join(json.dumps(key) + ":" + json.dumps(value) for key, value in members)
            + "}").encode()
    fast, exact = _both(gojson.unmarshal, gojson.unmarshal_exact, body)
    assert fast == exact
    fast, exact = _both(gojson.decode_request, gojson.decode_request_exact, body, strict=strict)
    assert fast == exact


@settings(max_examples=300)
@given(st.binary(max_size=30))
def test_fast_and_exact_readers_agree_on_any_bytes(tail):
    body = b'{"seq":' + tail
    fast, exact = _both(gojson.unmarshal, gojson.unmarshal_exact, body)
    assert fast == exact
    fast, exact = _both(gojson.decode_request, gojson.decode_request_exact, body)
    assert fast == exact


# -- encoding ---------------------------------------------------------------------------------
def _go_reference(value) -> bytes:
    """json.dumps (compact, UTF-8) with Go's HTML-safe escapes."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escape)
    return text.encode()


_JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-(1 << 63), max_value=(1 << 64) - 1),
              st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=5), inner, max_size=4)),
    max_leaves=12)


@given(_JSON_VALUES)
def test_encoder_is_json_with_gos_html_escapes(value):
    assert gojson.encode(value) == _go_reference(value)


def test_encoder_writes_invalid_text_as_replacement_characters():
    assert gojson.encode({"a": "x\udcff<"}) == '{"a":"x\ufffd\\u003c"}'.encode()
    assert gojson.encode(["\ud800"]) == '["\ufffd"]'.encode()


# -- quoting ----------------------------------------------------------------------------------
@pytest.mark.parametrize("text, quoted", [           # Go: strconv.Quote(text)
    ("abc", '"abc"'),
    ('a"b\\c', '"a\\"b\\\\c"'),
    ("\a\b\f\n\r\t\v", '"\\a\\b\\f\\n\\r\\t\\v"'),
    ("\x00\x1f\x7f", '"\\x00\\x1f\\x7f"'),
    ("é\u00a0\u00ad", '"é\\u00a0\\u00ad"'),
    ("\u2028\U0001F600\U000E0001", '"\\u2028\U0001F600\\U000e0001"'),
    (b"\xff\xc3", '"\\xff\\xc3"'),
    ("a\udcffb", '"a\\xffb"'),                         # a surrogate-escaped byte
])
def test_quote_is_strconv_quote(text, quoted):
    assert quoting.quote(text) == quoted


@pytest.mark.parametrize("rune, quoted", [           # Go: strconv.QuoteRune(rune)
    (ord("a"), "'a'"), (ord("'"), "'\\''"), (ord('"'), "'\"'"), (0x01, "'\\x01'"),
    (0x0A, "'\\n'"), (0xE9, "'é'"), (0x2028, "'\\u2028'"), (None, "'\ufffd'"),
])
def test_quote_rune_is_strconv_quote_rune(rune, quoted):
    assert quoting.quote_rune(rune) == quoted


def test_json_quote_rune_names_bad_bytes_in_hex():
    assert quoting.json_quote_rune(b"x\xff", 1) == "'\\xff'"
    assert quoting.json_quote_rune(b"\x05", 0) == "'\\x05'"
    assert quoting.json_quote_rune(b"\xc3\xa9", 0) == "'é'"


@pytest.mark.parametrize("text, quoted", [           # Go: time's quote(text)
    ("2006", '"2006"'), ('a"\\', '"a\\"\\\\"'), ("a\tb\x7f", '"a\\x09b\x7f"'),
    ("é", '"\\xc3\\xa9"'), (b"\xff", '"\\xff"'),
])
def test_time_quote(text, quoted):
    assert quoting.time_quote(text) == quoted


def test_encode_indent_is_go_marshal_indent():
    value = {"a": [1, {"b": "<x> & \u2028é"}], "c": {}, "d": [], "e": None, "f": True}
    assert gojson.encode_indent(value) == (
        b'{\n  "a": [\n    1,\n    {\n      "b": "\\u003cx\\u003e \\u0026 \\u2028'
        + "é".encode() + b'"\n    }\n  ],\n  "c": {},\n  "d": [],\n  "e": null,\n'
        b'  "f": true\n}')
