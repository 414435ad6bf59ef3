"""Differential tests: every scenario of tests/scenarios.py against a real nats-server
(through nats-py) and against jsstore (through js.request_msgs), answer by answer.

Every scenario gets a fresh nats-server (deleting the streams of the previous scenario
instead races with nats-server removing their directories) and a fresh jsstore directory.  For every step both sides get
the same subject, payload and headers, and every answer to the request is collected: the
first one, or for a step marked `many` everything up to a ``204 EOB`` or another status
(a short silence ends the wait too).  "No responders" is an answer of its own (a 503
status from a server; from the embedded JetStream, a subject nothing serves), compared
without its extra headers; it differs from no answer at all, which is what nats-server
gives to a $JS.API subject no handler takes.

Answers are compared after removing only what differs between any two servers:
* JSON bodies: the keys in VOLATILE (creation and message times, server ids, cluster info,
  the API request counters of $JS.API.INFO); everything else, ``_nats.*`` metadata
  included, is compared with its key order;
* header blocks byte for byte, with the values of time-stamp headers masked;
* other payloads byte for byte.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time

import pytest

import scenarios

nats = pytest.importorskip("nats")
natsserver = pytest.importorskip("natsserver")
from jsstore.jetstream import account as jetstream   # noqa: E402
from jsstore.wire.bus import Msg   # noqa: E402
from jsstore.wire.headers import encode_headers   # noqa: E402

pytestmark = pytest.mark.natsserver

VOLATILE = {"created", "ts", "time", "first_ts", "last_ts", "server_id", "cluster", "api",
            "last_active", "pinned_ts", "pinned_client_id",
            "pause_remaining"}      # nanoseconds to a pause's end: read off each one's clock
TIME_HEADERS = ("Nats-Time-Stamp",)
FIRST_ANSWER_TIMEOUT = 0.5   # seconds nats-server gets to answer a step at all
NEXT_ANSWER_TIMEOUT = 0.5    # seconds between the messages of a multi-message answer
INBOX = "_DIFF"

_TIME_LINE = re.compile(rb"^(" + b"|".join(h.encode() for h in TIME_HEADERS) + rb"):[^\r]*",
                        re.MULTILINE | re.IGNORECASE)


def features() -> set[str]:
    return set(getattr(jetstream, "FEATURES", ()) or ())


def known_differences() -> dict[tuple[str, int], scenarios.Difference]:
    return {(d.scenario, d.step): d for d in scenarios.KNOWN_DIFFERENCES}


# -- normalising answers ------------------------------------------------------------------
class _Pairs(list):
    """A JSON object as its (key, value) pairs, in order."""


def _normalise_json(value, ignore=frozenset()):
    if isinstance(value, _Pairs):
        out = []
        for key, item in value:
            if key in VOLATILE or key in ignore:
                continue
            out.append((key, _normalise_json(item, ignore)))
        return _Pairs(out)
    if isinstance(value, list):
        return [_normalise_json(item, ignore) for item in value]
    return value


def _status(hdr: bytes | None) -> str | None:
    """The status code of a header block ("NATS/1.0 404 ..."), or None."""
    if not hdr:
        return None
    first = hdr.split(b"\r\n", 1)[0]
    parts = first.split(b" ")
    return parts[1].decode() if len(parts) > 1 and parts[1] else None


def normalise(hdr: bytes | None, data: bytes, raw_payload: bool,
              ignore: frozenset = frozenset()) -> tuple:
    """One answer as a comparable value: (masked header block, body). The body is the
    normalised JSON (without the `ignore` keys) when it parses as a JSON object and the
    step is not a direct get."""
    block = _TIME_LINE.sub(rb"\1: <time>", hdr) if hdr else None
    body: object = data
    if not raw_payload and data[:1] == b"{":
        try:
            body = _normalise_json(json.loads(data, object_pairs_hook=_Pairs), ignore)
        except ValueError:
            body = data
    return (block, body)


def is_no_responders(answers: list[tuple[bytes | None, bytes]]) -> bool:
    return len(answers) == 1 and _status(answers[0][0]) == "503" and not answers[0][1]


# what a step's answers become when the server said "no responders" (its status line may
# carry more headers than another server's); no answer at all stays an empty list
NO_RESPONDERS = [(b"NATS/1.0 503 <no responders>\r\n\r\n", b"", "")]


# -- the nats-server side -----------------------------------------------------------------
class ServerSide:
    """A nats-py connection that sends steps and collects the raw answers (header blocks
    exactly as the server sent them, which nats-py's Msg does not keep)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, url: str):
        self.loop = loop
        self.nc = loop.run_until_complete(nats.connect(url))
        self.queue: asyncio.Queue = asyncio.Queue()
        self.inboxes: dict[int, str] = {}      # sid -> inbox: deliveries carry their own subject
        self.counter = 0
        original = self.nc._process_msg

        async def intercept(msg_sid, subject, reply, data, headers):
            inbox = self.inboxes.get(msg_sid)
            if inbox is not None:
                self.queue.put_nowait((inbox, bytes(headers) if headers else None,
                                       bytes(data), reply.decode() if reply else ""))
                return
            await original(msg_sid, subject, reply, data, headers)
        self.nc._process_msg = intercept

    def run(self, coroutine):
        return self.loop.run_until_complete(coroutine)

    def request(self, step: scenarios.Step, payload: bytes,
                subject: str | None = None) -> list[tuple[bytes | None, bytes, str]]:
        return self.run(self._request(step, payload, subject or step.subject))

    async def _request(self, step, payload, subject):
        self.counter += 1
        inbox = f"{INBOX}.{self.counter}"
        sub = await self.nc.subscribe(inbox)        # kept: interest lasts the scenario
        self.inboxes[sub._id] = inbox
        await self.nc.publish(subject, payload, reply=inbox, headers=step.headers)
        await self.nc.flush()
        answers = []
        timeout = FIRST_ANSWER_TIMEOUT
        while True:
            try:
                hdr, data, reply = await asyncio.wait_for(self._next(inbox), timeout)
            except asyncio.TimeoutError:
                break
            answers.append((hdr, data, reply))
            status = _status(hdr)
            if not step.many or status is not None:
                break
            timeout = NEXT_ANSWER_TIMEOUT
        return answers

    async def _next(self, inbox):
        while True:
            subject, hdr, data, reply = await self.queue.get()
            if subject == inbox:
                return hdr, data, reply

    def close(self) -> None:
        self.run(self.nc.close())


class JsstoreSide:
    """The same requests sent into an embedded JetStream: answers and deliveries to the
    step's inbox (on the bus, which stays subscribed for the whole scenario as the
    nats-py connection does) are collected the way ServerSide collects them; timed
    answers (request expiry, redeliveries) come from JetStream's timer thread."""

    def __init__(self, js):
        self.js = js
        self.counter = 0
        self.cond = threading.Condition()
        self.queue: list[tuple[str, bytes | None, bytes, str]] = []
        self.sub = js.bus.subscribe(f"{INBOX}.>", self._arrived)

    def _arrived(self, msg) -> None:
        with self.cond:
            self.queue.append((msg.to or msg.subject, msg.hdr, bytes(msg.data), msg.reply or ""))
            self.cond.notify_all()

    def _next(self, inbox: str, timeout: float):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for i, item in enumerate(self.queue):
                    if item[0] == inbox:
                        del self.queue[i]
                        return item[1:]
                self.queue.clear()          # answers to earlier steps are dropped, as there
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)

    def request(self, step: scenarios.Step, payload: bytes,
                subject: str | None = None) -> list[tuple[bytes | None, bytes, str]]:
        self.counter += 1
        inbox = f"{INBOX}.{self.counter}"
        subject = subject or step.subject

        def send(hdr, data):
            self._arrived(Msg(inbox, data, hdr))
        served = self.js.router().dispatch(subject, payload, encode_headers(step.headers),
                                           send, inbox)
        if not served:
            return list(NO_RESPONDERS)          # what `jsstore serve` answers then
        answers = []
        timeout = FIRST_ANSWER_TIMEOUT
        while True:
            item = self._next(inbox, timeout)
            if item is None:
                break
            answers.append(item)
            if not step.many or _status(item[0]) is not None:
                break
            timeout = NEXT_ANSWER_TIMEOUT
        return answers

    def close(self) -> None:
        self.sub.unsubscribe()


@pytest.fixture(scope="module")
def event_loop_for_nats():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture
def server_side(event_loop_for_nats, tmp_path):
    """A fresh nats-server (it starts in a few tens of milliseconds) and a connection."""
    natsserver.require_nats_server()
    with natsserver.nats_server(tmp_path / "nats-server") as server:
        side = ServerSide(event_loop_for_nats, server.url)
        try:
            yield side
        finally:
            side.close()


def _payload(step: scenarios.Step) -> bytes:
    if isinstance(step.payload, (bytes, bytearray)):
        return bytes(step.payload)
    return json.dumps(step.payload, separators=(",", ":")).encode()


def _cases():
    for group in scenarios.GROUPS:
        for scenario in group.scenarios:
            yield pytest.param(group, scenario, id=f"{group.name}: {scenario.name}")


def _show(answers) -> str:
    return "\n".join(f"    hdr={hdr!r} data={data!r} reply={reply!r}"
                     for hdr, data, reply in answers) or "    (none)"


def mask_ack(reply: str) -> str:
    """A reply subject, with the time stamp of an ack subject masked."""
    tokens = reply.split(".")
    if len(tokens) == 9 and reply.startswith("$JS.ACK."):
        tokens[7] = "<ts>"
    return ".".join(tokens)


def compare_scenario(scenario: scenarios.Scenario, real_side, mine_side,
                     known: dict | None = None) -> tuple[list[str], list[str]]:
    """Run a scenario's steps on both sides (a ServerSide and a ServerSide or JsstoreSide)
    and compare the answers step by step: (mismatches, steps listed in `known` as
    different that are equal now)."""
    known = known or {}
    labelled: dict[str, tuple[list, list]] = {}
    mismatches, unexpected_matches = [], []
    for number, step in enumerate(scenario.steps, 1):
        if step.sleep:
            time.sleep(step.sleep)
            continue
        payload = _payload(step)
        real_subject = mine_subject = None
        if step.ack_of is not None:
            label, index = step.ack_of
            real_subject = labelled[label][0][index - 1][2]
            mine_subject = labelled[label][1][index - 1][2]
        real = real_side.request(step, payload, real_subject)
        if is_no_responders(real):
            real = list(NO_RESPONDERS)
        mine = mine_side.request(step, payload, mine_subject)
        if is_no_responders(mine):
            mine = list(NO_RESPONDERS)
        if step.label:
            labelled[step.label] = (real, mine)
        raw = "DIRECT.GET." in step.subject
        same = ([normalise(h, d, raw) + (mask_ack(r),) for h, d, r in real]
                == [normalise(h, d, raw) + (mask_ack(r),) for h, d, r in mine])
        label = (f"step {number}: {real_subject or step.subject} {payload!r} "
                 f"headers={step.headers}\n"
                 f"  nats-server:\n{_show(real)}\n  jsstore:\n{_show(mine)}")
        known_difference = known.get((scenario.name, number))
        if known_difference is None:
            if not same:
                mismatches.append(label)
            continue
        if same:
            unexpected_matches.append(f"{label}\n  listed as different: "
                                      f"{known_difference.reason}")
        elif known_difference.ignore:
            ignore = frozenset(known_difference.ignore)
            if ([normalise(h, d, raw, ignore) for h, d, _ in real]
                    != [normalise(h, d, raw, ignore) for h, d, _ in mine]):
                mismatches.append(f"{label}\n  differs beyond {sorted(ignore)}")
    return mismatches, unexpected_matches


@pytest.mark.parametrize("group, scenario", list(_cases()))
def test_scenario_matches_nats_server(group, scenario, server_side, tmp_path):
    if group.feature is not None and group.feature not in features():
        pytest.skip(f"jsstore does not support {group.feature!r} yet "
                    f"(not in jsstore.jetstream.account.FEATURES)")
    js = jetstream.open(tmp_path / "jsstore")
    mine_side = JsstoreSide(js)
    try:
        mismatches, unexpected_matches = compare_scenario(scenario, server_side, mine_side,
                                                          known_differences())
    finally:
        mine_side.close()
        js.close()
    assert not mismatches, "answers differ:\n" + "\n".join(mismatches)
    assert not unexpected_matches, ("now equal, remove from KNOWN_DIFFERENCES:\n"
                                    + "\n".join(unexpected_matches))


def test_known_differences_name_real_steps():
    every = [scenario for group in scenarios.GROUPS for scenario in group.scenarios]
    steps = {scenario.name: len(scenario.steps) for scenario in every}
    assert len(steps) == len(every), "scenario names must be unique"
    seen = set()
    for difference in scenarios.KNOWN_DIFFERENCES:
        key = (difference.scenario, difference.step)
        assert difference.scenario in steps, key
        assert 1 <= difference.step <= steps[difference.scenario], key
        assert difference.reason.strip(), key
        assert key not in seen, key
        seen.add(key)


def test_normalise_keeps_key_order_and_drops_only_volatile_fields():
    a = normalise(None, b'{"type":"t","created":"x","config":{"name":"S"},'
                        b'"state":{"messages":1,"first_ts":"y"}}', False)
    b = normalise(None, b'{"type":"t","config":{"name":"S"},"state":{"messages":1}}', False)
    c = normalise(None, b'{"config":{"name":"S"},"type":"t","state":{"messages":1}}', False)
    assert a == b
    assert b != c
    masked = normalise(b"NATS/1.0\r\nNats-Time-Stamp: 2025-01-01T00:00:00Z\r\nX: 1\r\n\r\n",
                       b"{}", True)
    assert masked == (b"NATS/1.0\r\nNats-Time-Stamp: <time>\r\nX: 1\r\n\r\n", b"{}")
    assert normalise(None, b'{"a":1}', True) == (None, b'{"a":1}')
