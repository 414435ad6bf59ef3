"""Priority groups as a newer client sees them, against `jsstore serve` and nats-server
alike: several pull requests of one consumer wait at once, messages are published, and
each test checks who gets what, in which order, with which status.

nats-py (2.16) has no priority groups in its fetch, so the pull requests are raw
``$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>`` requests with JSON bodies, each on an
inbox of its own (so a delivery says which request it answered), read through nats-py
core subscriptions that keep the header block as the server wrote it.

* ``prioritized``: requests are served lowest ``priority`` first (a JSON body without
  one is 0, a body that is not JSON comes after 9); within one priority they take turns.
* ``overflow``: a request with ``min_pending`` or ``min_ack_pending`` is passed over
  until the consumer's pending messages (counting the one at hand) or its unacknowledged
  ones reach the threshold; either one is enough.
* ``pinned_client``: the first request with a group gets the pin (``Nats-Pin-Id`` on
  every delivery, a PINNED advisory); requests without the id wait, a request with
  another id is refused ``423 Nats-Pin-Id mismatch``, a waiting one holding a stale id
  hears ``423 Nats-Wrong-Pin-Id``; the pin expires after ``priority_timeout`` (each
  request carrying it starts that over) or goes with CONSUMER.UNPIN, and consumer info
  shows it under ``priority_groups``.

The tests never sleep to let something happen: they wait for what must arrive, for a
request to be queued (consumer info's num_waiting), and let a later request show where a
message did not go.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from bothservers import run, server  # noqa: F401  (the fixture)

nats = pytest.importorskip("nats")

pytestmark = pytest.mark.natsserver

SECOND = 1_000_000_000
EXPIRES = 120 * SECOND                  # longer than any test, even on a loaded machine:
#                                         requests only end as asked
WAIT = 30                               # seconds an expected arrival may take (under load)
ZERO_TIME = "0001-01-01T00:00:00Z"
API = "$JS.API."
ADVISORY = "$JS.EVENT.ADVISORY.CONSUMER."


def pin_of(hdr: bytes) -> str:
    """The Nats-Pin-Id a delivery's header block carries."""
    return hdr.split(b"Nats-Pin-Id: ")[1].split(b"\r\n")[0].decode()


class Client:
    """One nats-py connection: pull requests each on an inbox of their own, what arrives
    on them in order, and the pin advisories of stream S apart (they travel on their
    own path in nats-server, so their order against deliveries is not fixed)."""

    async def start(self, url: str) -> None:
        self.nc = await nats.connect(url)
        self.arrived: asyncio.Queue = asyncio.Queue()
        self.advised: asyncio.Queue = asyncio.Queue()
        self.inboxes: dict[int, str] = {}       # subscription id -> the request's name
        self.advisory_sids: set[int] = set()
        self.ack_subjects: dict[str, str] = {}  # a delivered payload -> its ack subject
        for kind in ("PINNED", "UNPINNED"):
            self.advisory_sids.add((await self.nc.subscribe(f"{ADVISORY}{kind}.S.*"))._id)
        original = self.nc._process_msg

        async def keep(sid, subject, reply, data, headers):
            if sid in self.advisory_sids:
                self.advised.put_nowait(json.loads(data))
            elif sid in self.inboxes:
                if reply:
                    self.ack_subjects[bytes(data).decode()] = reply.decode()
                self.arrived.put_nowait((self.inboxes[sid], bytes(headers) if headers else None,
                                         bytes(data)))
            else:
                await original(sid, subject, reply, data, headers)
        self.nc._process_msg = keep

    async def close(self) -> None:
        await self.nc.close()

    async def api(self, subject: str, body=None) -> dict:
        payload = body if isinstance(body, bytes) else json.dumps(body or {}).encode()
        return json.loads((await self.nc.request(API + subject, payload, timeout=5)).data)

    async def setup(self, name: str, **config) -> None:
        """Stream S (subjects s.>) if it is not there yet, and a durable pull consumer."""
        await self.api("STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"]})
        answer = await self.api(f"CONSUMER.CREATE.S.{name}", {"stream_name": "S", "config": {
            "durable_name": name, "ack_policy": "explicit", **config}})
        assert "error" not in answer, answer

    async def info(self, consumer: str) -> dict:
        return await self.api(f"CONSUMER.INFO.S.{consumer}")

    async def publish(self, subject: str, payload: bytes, headers=None) -> int:
        answer = await self.nc.request(subject, payload, timeout=5, headers=headers)
        return json.loads(answer.data)["seq"]

    async def pull(self, consumer: str, name: str, body) -> str:
        """Send a pull request answering to an inbox of its own; `name` is how its
        deliveries and statuses are labelled."""
        inbox = self.nc.new_inbox()
        self.inboxes[(await self.nc.subscribe(inbox))._id] = name
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        await self.nc.publish(f"{API}CONSUMER.MSG.NEXT.S.{consumer}", payload, reply=inbox)
        return inbox

    async def ack(self, payload: str) -> None:
        """Acknowledge the delivered message with this payload, and wait for the server to
        confirm it applied the ack."""
        await self.nc.request(self.ack_subjects[payload], b"+ACK", timeout=5)

    async def forget(self, name: str) -> None:
        """Unsubscribe a request's inbox: it has no reader any more."""
        sid = next(sid for sid, label in self.inboxes.items() if label == name)
        await self.nc._send_unsubscribe(sid)
        await self.nc.flush()

    async def queued(self, consumer: str, count: int) -> None:
        """Wait until `count` requests wait at the consumer."""
        deadline = time.monotonic() + WAIT
        while (await self.info(consumer))["num_waiting"] != count:
            assert time.monotonic() < deadline, f"{consumer} never had {count} waiting"
            await asyncio.sleep(0.005)

    async def take(self, count: int) -> list[tuple[str, bytes | None, bytes]]:
        """The next `count` arrivals on the requests' inboxes: (request, header block,
        payload)."""
        return [await asyncio.wait_for(self.arrived.get(), WAIT) for _ in range(count)]

    async def deliveries(self, count: int) -> list[tuple[str, str]]:
        """The next `count` arrivals as (request, payload), each checked to be a message
        (not a status)."""
        taken = await self.take(count)
        assert all(hdr is None or not hdr.startswith(b"NATS/1.0 ") for _, hdr, _ in taken), taken
        return [(name, data.decode()) for name, _, data in taken]

    async def advisories(self, count: int) -> list[dict]:
        return [await asyncio.wait_for(self.advised.get(), WAIT) for _ in range(count)]

    def nothing_more(self) -> None:
        assert self.arrived.empty() and self.advised.empty()


def scenario(body):
    """Run `body(client)` against the server at `url`."""
    async def go(url: str):
        client = Client()
        await client.start(url)
        try:
            return await body(client)
        finally:
            await client.close()
    return go


# -- prioritized -----------------------------------------------------------------------------
def test_prioritized_serves_the_lowest_priority_first_and_takes_turns_within_one(server):
    async def body(c: Client):
        await c.setup("R", priority_policy="prioritized", priority_groups=["A", "B"])
        await c.pull("R", "plain", b"2")                # not JSON: after every priority
        await c.pull("R", "p5", {"group": "A", "batch": 2, "priority": 5, "expires": EXPIRES})
        await c.pull("R", "p1-B", {"group": "B", "batch": 2, "priority": 1, "expires": EXPIRES})
        await c.pull("R", "p1-A", {"group": "A", "batch": 1, "priority": 1, "expires": EXPIRES})
        await c.pull("R", "p0", {"group": "A", "batch": 2, "expires": EXPIRES})   # 0 when left out
        await c.pull("R", "p9", {"group": "A", "batch": 1, "priority": 9, "expires": EXPIRES})
        await c.queued("R", 6)
        for n in range(10):
            await c.publish("s.x", b"m%d" % n)
        assert await c.deliveries(10) == [
            ("p0", "m0"), ("p0", "m1"),
            # the groups share one queue; one priority takes turns in arrival order
            ("p1-B", "m2"), ("p1-A", "m3"), ("p1-B", "m4"),
            ("p5", "m5"), ("p5", "m6"), ("p9", "m7"), ("plain", "m8"), ("plain", "m9")]
        assert (await c.info("R"))["num_waiting"] == 0
        c.nothing_more()
    run(scenario(body)(server.url))


def test_prioritized_a_later_request_of_a_lower_number_goes_ahead(server):
    async def body(c: Client):
        await c.setup("R", priority_policy="prioritized", priority_groups=["A"])
        await c.pull("R", "p5", {"group": "A", "batch": 3, "priority": 5, "expires": EXPIRES})
        await c.queued("R", 1)
        await c.publish("s.x", b"m0")
        assert await c.deliveries(1) == [("p5", "m0")]
        await c.pull("R", "p2", {"group": "A", "batch": 1, "priority": 2, "expires": EXPIRES})
        await c.pull("R", "p5-later", {"group": "A", "batch": 1, "priority": 5,
                                       "expires": EXPIRES})
        await c.queued("R", 3)
        for n in range(1, 5):
            await c.publish("s.x", b"m%d" % n)
        # the later priority 5 request waits its turn behind the earlier one
        assert await c.deliveries(4) == [("p2", "m1"), ("p5", "m2"), ("p5-later", "m3"),
                                         ("p5", "m4")]
        assert (await c.info("R"))["num_waiting"] == 0
        c.nothing_more()
    run(scenario(body)(server.url))


def test_priority_group_requests_are_checked_before_they_wait(server):
    """The 400s a priority group request can get, per policy."""
    async def body(c: Client):
        await c.setup("R", priority_policy="prioritized", priority_groups=["A"],
                      filter_subject="s.r")
        await c.setup("O", priority_policy="overflow", priority_groups=["A"],
                      filter_subject="s.o")
        await c.setup("P", priority_policy="pinned_client", priority_groups=["A"],
                      filter_subject="s.p")
        await c.setup("N", filter_subject="s.n")
        cases = [
            ("R", {"group": "A", "priority": 10}, "Priority must be between 0 and 9"),
            ("R", {"group": "A", "priority": -1}, "Priority must be between 0 and 9"),
            ("R", {"priority": 1}, "Priority Group missing"),
            ("R", {"group": "B"}, "Invalid Priority Group"),
            ("R", {"group": "A", "min_pending": 1}, "Not a Overflow Priority consumer"),
            ("R", {"group": "A", "id": "x"}, "Not a Pinned Client Priority consumer"),
            ("O", {"min_ack_pending": 1}, "Priority Group missing"),
            ("O", {"group": "A", "id": "x"}, "Not a Pinned Client Priority consumer"),
            ("P", {"group": "A", "min_pending": 2}, "Not a Overflow Priority consumer"),
            ("P", {"group": "", "batch": 1}, "Priority Group missing"),
            ("N", {"group": "A", "priority": 12}, "Priority must be between 0 and 9"),
        ]
        for n, (consumer, request, _) in enumerate(cases):
            await c.pull(consumer, str(n), request)
        taken = sorted(await c.take(len(cases)), key=lambda arrival: int(arrival[0]))
        assert taken == [(str(n), b"NATS/1.0 400 Bad Request - %s\r\n\r\n" % text.encode(), b"")
                         for n, (_, _, text) in enumerate(cases)]
        # a policy-less consumer takes a group it does not have
        await c.pull("N", "grouped", {"group": "Z", "batch": 1, "expires": EXPIRES})
        await c.queued("N", 1)
        await c.publish("s.n", b"n0")
        assert await c.deliveries(1) == [("grouped", "n0")]
        c.nothing_more()
    run(scenario(body)(server.url))


def test_ack_next_takes_a_priority_group_body(server):
    async def body(c: Client):
        await c.setup("R", priority_policy="prioritized", priority_groups=["A"])
        for n in range(3):
            await c.publish("s.x", b"m%d" % n)
        inbox = await c.pull("R", "first", {"group": "A", "batch": 1})
        assert await c.deliveries(1) == [("first", "m0")]
        ack = c.ack_subjects["m0"]
        await c.nc.publish(ack, b'+NXT {"batch":1}', reply=inbox)
        assert await c.take(1) == [
            ("first", b"NATS/1.0 400 Bad Request - Priority Group missing\r\n\r\n", b"")]
        await c.nc.publish(ack, b'+NXT {"batch":1,"group":"A","priority":3}', reply=inbox)
        assert await c.deliveries(1) == [("first", "m1")]
        info = await c.info("R")
        assert (info["num_ack_pending"], info["ack_floor"]["stream_seq"]) == (1, 1)
        c.nothing_more()
    run(scenario(body)(server.url))


# -- overflow --------------------------------------------------------------------------------
def test_overflow_min_pending_waits_for_enough_pending_messages(server):
    async def body(c: Client):
        await c.setup("O", priority_policy="overflow", priority_groups=["A"])
        await c.pull("O", "over3", {"group": "A", "batch": 10, "min_pending": 3,
                                    "expires": EXPIRES})
        await c.pull("O", "plain", {"group": "A", "batch": 1, "expires": EXPIRES})
        await c.queued("O", 2)
        await c.publish("s.x", b"m0")                  # 1 pending: over3 is passed over
        assert await c.deliveries(1) == [("plain", "m0")]
        await c.publish("s.x", b"m1")                  # 1, then 2 pending: nobody
        await c.publish("s.x", b"m2")
        await c.publish("s.x", b"m3")                  # 3 pending (counting m1): over3 takes m1
        assert await c.deliveries(1) == [("over3", "m1")]
        info = await c.info("O")
        assert (info["num_pending"], info["num_ack_pending"], info["num_waiting"]) == (2, 2, 1)
        # a plain request takes what over3 leaves
        await c.pull("O", "late", {"group": "A", "batch": 2, "expires": EXPIRES})
        assert await c.deliveries(2) == [("late", "m2"), ("late", "m3")]
        # over3 takes a message whenever 3 are pending, so 2 stay behind
        for n in range(4, 9):
            await c.publish("s.x", b"m%d" % n)
        assert await c.deliveries(3) == [("over3", "m4"), ("over3", "m5"), ("over3", "m6")]
        # a lower threshold takes one of the two; over3, waiting first, is passed over
        await c.pull("O", "over2", {"group": "A", "batch": 10, "min_pending": 2,
                                    "expires": EXPIRES})
        assert await c.deliveries(1) == [("over2", "m7")]
        # thresholds of 0 are no thresholds
        await c.pull("O", "zero", {"group": "A", "batch": 1, "min_pending": 0,
                                   "min_ack_pending": 0, "expires": EXPIRES})
        assert await c.deliveries(1) == [("zero", "m8")]
        info = await c.info("O")
        assert (info["num_pending"], info["num_ack_pending"], info["num_waiting"]) == (0, 9, 2)
        assert info["priority_groups"] == [{"group": "A", "pinned_ts": ZERO_TIME}]
        c.nothing_more()
    run(scenario(body)(server.url))


def test_overflow_min_ack_pending_waits_for_unacknowledged_messages(server):
    async def body(c: Client):
        await c.setup("O", priority_policy="overflow", priority_groups=["A"])
        await c.pull("O", "acks2", {"group": "A", "batch": 10, "min_ack_pending": 2,
                                    "expires": EXPIRES})
        await c.queued("O", 1)
        await c.publish("s.x", b"m0")                  # nothing unacknowledged: nobody
        await c.publish("s.x", b"m1")
        await c.pull("O", "plain", {"group": "A", "batch": 2, "expires": EXPIRES})
        assert await c.deliveries(2) == [("plain", "m0"), ("plain", "m1")]
        await c.publish("s.x", b"m2")                  # 2 unacknowledged: acks2 takes it
        assert await c.deliveries(1) == [("acks2", "m2")]
        for payload in ("m0", "m1", "m2"):
            await c.ack(payload)
        await c.publish("s.x", b"m3")                  # all acknowledged: acks2 waits again
        # either threshold is enough: 1 pending (counting m3) does it here
        await c.pull("O", "either", {"group": "A", "batch": 1, "min_pending": 1,
                                     "min_ack_pending": 50, "expires": EXPIRES})
        assert await c.deliveries(1) == [("either", "m3")]
        info = await c.info("O")
        assert (info["num_pending"], info["num_ack_pending"], info["num_waiting"]) == (0, 1, 1)
        c.nothing_more()
    run(scenario(body)(server.url))


# -- pinned_client ---------------------------------------------------------------------------
def pinned_advisory(consumer: str, group: str, pin: str) -> dict:
    return {"type": "io.nats.jetstream.advisory.v1.consumer_group_pinned", "account": "$G",
            "stream": "S", "consumer": consumer, "group": group, "pinned_id": pin}


def unpinned_advisory(consumer: str, group: str, reason: str) -> dict:
    return {"type": "io.nats.jetstream.advisory.v1.consumer_group_unpinned", "account": "$G",
            "stream": "S", "consumer": consumer, "group": group, "reason": reason}


def without_id_and_time(advisory: dict) -> dict:
    return {key: value for key, value in advisory.items() if key not in ("id", "timestamp")}


def wrong_pin_id(messages: int) -> bytes:
    return (b"NATS/1.0 423 Nats-Wrong-Pin-Id\r\nNats-Pending-Messages: %d\r\n"
            b"Nats-Pending-Bytes: 0\r\n\r\n" % messages)


def test_the_first_request_is_pinned_and_the_others_wait(server):
    async def body(c: Client):
        await c.setup("P", priority_policy="pinned_client", priority_groups=["A", "B"])
        info = await c.info("P")
        assert info["priority_groups"] == [{"group": "A", "pinned_ts": ZERO_TIME}]
        await c.pull("P", "holder", {"group": "B", "batch": 3, "expires": EXPIRES})
        await c.pull("P", "other", {"group": "A", "batch": 3, "expires": EXPIRES})
        await c.pull("P", "plain", b"1")
        await c.queued("P", 3)
        await c.publish("s.x", b"m0", headers={"X-A": "1"})
        (name, hdr, data), = await c.take(1)
        pin = pin_of(hdr)
        assert (name, hdr, data) == (
            "holder", b"NATS/1.0\r\nX-A: 1\r\nNats-Pin-Id: %s\r\n\r\n" % pin.encode(), b"m0")
        assert [without_id_and_time(a) for a in await c.advisories(1)] == [
            pinned_advisory("P", "B", pin)]
        # consumer info names the first group only, whichever group the pin went to
        info = await c.info("P")
        [state] = info["priority_groups"]
        assert (state["group"], state["pinned_client_id"]) == ("A", pin)
        assert state["pinned_ts"] != ZERO_TIME
        assert info["num_waiting"] == 3
        # the others are passed over while the holder wants more
        await c.publish("s.x", b"m1")
        assert await c.take(1) == [
            ("holder", b"NATS/1.0\r\nNats-Pin-Id: %s\r\n\r\n" % pin.encode(), b"m1")]
        # another id is refused at once; the pin's id queues behind the holder
        await c.pull("P", "wrong", {"group": "A", "batch": 1, "id": "not-the-pin",
                                    "expires": EXPIRES})
        assert await c.take(1) == [("wrong", b"NATS/1.0 423 Nats-Pin-Id mismatch\r\n\r\n", b"")]
        await c.pull("P", "again", {"group": "A", "batch": 1, "id": pin, "expires": EXPIRES})
        await c.queued("P", 4)
        await c.publish("s.x", b"m2")
        await c.publish("s.x", b"m3")
        assert await c.deliveries(2) == [("holder", "m2"), ("again", "m3")]
        # with the pin's requests done, nobody takes the next message; the requests passed
        # over still count as wanting 4, more than the 1 pending, so a no_wait request
        # holding the pin is told 408 Requests Pending
        await c.publish("s.x", b"m4")
        await c.pull("P", "nowait", {"group": "A", "batch": 1, "id": pin, "no_wait": True})
        assert await c.take(1) == [("nowait", b"NATS/1.0 408 Requests Pending\r\n\r\n", b"")]
        await c.pull("P", "last", {"group": "A", "batch": 1, "id": pin, "expires": EXPIRES})
        assert await c.take(1) == [
            ("last", b"NATS/1.0\r\nNats-Pin-Id: %s\r\n\r\n" % pin.encode(), b"m4")]
        info = await c.info("P")
        assert (info["num_waiting"], info["num_pending"]) == (2, 0)
        assert info["delivered"]["stream_seq"] == 5
        c.nothing_more()
    run(scenario(body)(server.url))


def test_the_pin_expires_unless_a_request_carries_it(server):
    async def body(c: Client):
        await c.setup("P", priority_policy="pinned_client", priority_groups=["A"],
                      priority_timeout=SECOND)
        await c.pull("P", "holder", {"group": "A", "batch": 3, "expires": EXPIRES})
        await c.pull("P", "waiter", {"group": "A", "batch": 1, "expires": EXPIRES})
        await c.queued("P", 2)
        await c.publish("s.x", b"m0")
        (_, hdr, _), = await c.take(1)
        pin = pin_of(hdr)
        assert [without_id_and_time(a) for a in await c.advisories(1)] == [
            pinned_advisory("P", "A", pin)]
        await asyncio.sleep(0.5)        # halfway through the pin's second
        renewed_at = time.monotonic()
        await c.pull("P", "renew", {"group": "A", "batch": 1, "id": pin, "expires": EXPIRES})
        assert [without_id_and_time(a) for a in await c.advisories(1)] == [
            unpinned_advisory("P", "A", "timeout")]
        # a second from the renewal, not from the pin
        assert time.monotonic() - renewed_at > 0.9
        info = await c.info("P")
        assert info["priority_groups"] == [{"group": "A", "pinned_ts": ZERO_TIME}]
        assert info["num_waiting"] == 3
        # the next request without an id gets a new pin ...
        await c.publish("s.x", b"m1")
        (name, hdr, data), = await c.take(1)
        new_pin = pin_of(hdr)
        assert (name, data) == ("waiter", b"m1") and new_pin != pin
        assert [without_id_and_time(a) for a in await c.advisories(1)] == [
            pinned_advisory("P", "A", new_pin)]
        # ... and the requests holding the old one are dropped when a message comes
        await c.publish("s.x", b"m2")
        assert await c.take(2) == [("holder", wrong_pin_id(2), b""),
                                   ("renew", wrong_pin_id(1), b"")]
        info = await c.info("P")
        assert (info["num_waiting"], info["num_pending"]) == (0, 1)
        c.nothing_more()
    run(scenario(body)(server.url))


def test_a_standby_takes_over_what_waits_when_the_pin_expires(server):
    """The pinned client stops asking: the messages wait for it until its pin expires,
    then go at once to a waiting request, which holds the new pin from then on."""
    async def body(c: Client):
        await c.setup("P", priority_policy="pinned_client", priority_groups=["A"],
                      priority_timeout=SECOND // 2, headers_only=True)
        await c.pull("P", "holder", {"group": "A", "batch": 1, "expires": EXPIRES})
        await c.pull("P", "standby", {"group": "A", "batch": 5, "expires": EXPIRES})
        await c.queued("P", 2)
        for n in range(3):
            await c.publish("s.x", b"m%d" % n)
        (name, hdr, _), = await c.take(1)
        pin = pin_of(hdr)
        assert (name, hdr) == (
            "holder", b"NATS/1.0\r\nNats-Msg-Size: 2\r\nNats-Pin-Id: %s\r\n\r\n" % pin.encode())
        pinned, unpinned, pinned_again = await c.advisories(3)
        assert without_id_and_time(pinned) == pinned_advisory("P", "A", pin)
        assert without_id_and_time(unpinned) == unpinned_advisory("P", "A", "timeout")
        new_pin = pinned_again["pinned_id"]
        assert without_id_and_time(pinned_again) == pinned_advisory("P", "A", new_pin)
        standby = b"NATS/1.0\r\nNats-Msg-Size: 2\r\nNats-Pin-Id: %s\r\n\r\n" % new_pin.encode()
        assert await c.take(2) == [("standby", standby, b""), ("standby", standby, b"")]
        # a newcomer without the id waits; the standby keeps taking
        await c.pull("P", "newcomer", {"group": "A", "batch": 5, "expires": EXPIRES})
        await c.queued("P", 2)
        await c.publish("s.x", b"m3")
        assert await c.take(1) == [("standby", standby, b"")]
        info = await c.info("P")
        assert info["priority_groups"][0]["pinned_client_id"] == new_pin
        c.nothing_more()
    run(scenario(body)(server.url))


def test_unpin(server):
    async def body(c: Client):
        await c.setup("P", priority_policy="pinned_client", priority_groups=["A", "B"])
        await c.setup("O", priority_policy="overflow", priority_groups=["A"],
                      filter_subject="s.o")
        await c.setup("N", filter_subject="s.n")
        ok = {"type": "io.nats.jetstream.api.v1.consumer_unpin_response"}
        # the advisory goes out whether or not a client was pinned, on any policy
        assert await c.api("CONSUMER.UNPIN.S.O", {"group": "A"}) == ok
        assert await c.api("CONSUMER.UNPIN.S.P", {"group": "B"}) == ok
        assert [without_id_and_time(a) for a in await c.advisories(2)] == [
            unpinned_advisory("O", "A", "admin"), unpinned_advisory("P", "B", "admin")]
        errors = [
            ("CONSUMER.UNPIN.S.P", {"group": "C"},
             {"code": 400, "err_code": 10160,
              "description": "Provided priority group does not exist for this consumer"}),
            ("CONSUMER.UNPIN.S.N", {"group": "A"},
             {"code": 400, "err_code": 10160,
              "description": "Provided priority group does not exist for this consumer"}),
            ("CONSUMER.UNPIN.S.P", {},
             {"code": 400, "err_code": 10025,
              "description": "invalid JSON: consumer group not specified"}),
            ("CONSUMER.UNPIN.S.P", b"",
             {"code": 400, "err_code": 10025,
              "description": "invalid JSON: unexpected end of JSON input"}),
            ("CONSUMER.UNPIN.S.X", {"group": "A"},
             {"code": 404, "err_code": 10014, "description": "consumer not found"}),
        ]
        for subject, request, error in errors:
            assert await c.api(subject, request) == {**ok, "error": error}, subject
        await c.pull("P", "holder", {"group": "A", "batch": 2, "expires": EXPIRES})
        await c.pull("P", "other", {"group": "B", "batch": 1, "expires": EXPIRES})
        await c.queued("P", 2)
        await c.publish("s.x", b"m0")
        (_, hdr, _), = await c.take(1)
        pin = pin_of(hdr)
        assert [without_id_and_time(a) for a in await c.advisories(1)] == [
            pinned_advisory("P", "A", pin)]
        # any group of the consumer unpins; the advisory names the one asked for
        assert await c.api("CONSUMER.UNPIN.S.P", {"group": "B"}) == ok
        assert [without_id_and_time(a) for a in await c.advisories(1)] == [
            unpinned_advisory("P", "B", "admin")]
        assert (await c.info("P"))["priority_groups"] == [{"group": "A", "pinned_ts": ZERO_TIME}]
        await c.publish("s.x", b"m1")
        (name, hdr, data), = await c.take(1)
        new_pin = pin_of(hdr)
        assert (name, data) == ("other", b"m1") and new_pin != pin
        assert [without_id_and_time(a) for a in await c.advisories(1)] == [
            pinned_advisory("P", "B", new_pin)]
        await c.publish("s.x", b"m2")
        assert await c.take(1) == [("holder", wrong_pin_id(1), b"")]
        c.nothing_more()
    run(scenario(body)(server.url))


def test_the_pin_passes_on_when_its_request_cannot_take_the_message(server):
    async def body(c: Client):
        await c.setup("P", priority_policy="pinned_client", priority_groups=["A"])
        # a request holding an id while nothing is pinned is dropped; one whose reader
        # has gone is pinned, then dropped, and the pin goes on to the next
        await c.pull("P", "stale", {"group": "A", "batch": 1, "id": "stale", "expires": EXPIRES})
        await c.pull("P", "gone", {"group": "A", "batch": 1, "expires": EXPIRES})
        await c.pull("P", "next", {"group": "A", "batch": 1, "expires": EXPIRES})
        await c.queued("P", 3)
        await c.forget("gone")
        await c.publish("s.x", b"m0")
        (stale, (name, hdr, data)) = await c.take(2)
        assert stale == ("stale", wrong_pin_id(1), b"")
        assert (name, data) == ("next", b"m0")
        first, second = await c.advisories(2)
        assert without_id_and_time(second) == pinned_advisory("P", "A", pin_of(hdr))
        assert first["pinned_id"] != second["pinned_id"]
        assert (await c.info("P"))["priority_groups"][0]["pinned_client_id"] == pin_of(hdr)
        await c.api("CONSUMER.UNPIN.S.P", {"group": "A"})
        await c.advisories(1)
        # a message over the pinned request's max_bytes ends it, and its pin with it
        await c.pull("P", "small", {"group": "A", "batch": 1, "max_bytes": 10,
                                    "expires": EXPIRES})
        await c.pull("P", "large", {"group": "A", "batch": 1, "expires": EXPIRES})
        await c.queued("P", 2)
        await c.publish("s.x", b"more than ten bytes")
        small, (name, hdr, data) = await c.take(2)
        assert small == ("small", (b"NATS/1.0 409 Message Size Exceeds MaxBytes\r\n"
                                   b"Nats-Pending-Messages: 1\r\nNats-Pending-Bytes: 10\r\n\r\n"),
                         b"")
        assert (name, data) == ("large", b"more than ten bytes")
        first, second = await c.advisories(2)
        assert without_id_and_time(second) == pinned_advisory("P", "A", pin_of(hdr))
        assert first["pinned_id"] != second["pinned_id"]
        info = await c.info("P")
        assert info["priority_groups"][0]["pinned_client_id"] == pin_of(hdr)
        assert info["num_waiting"] == 0
        c.nothing_more()
    run(scenario(body)(server.url))
