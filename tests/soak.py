"""The server soak: a server takes acked publishes and consumer acks from nats-py while it
is SIGKILLed at random moments and started again on the same port and store directory.

One module for the test (tests/test_server_soak.py, a few cycles) and the bench script
(bench/soak.py, a hundred).  Everything random (the traffic's choices, the kill moments)
comes from one seed, which every report and failure names, so a run's schedule can be
replayed; where a kill lands among the in-flight requests still depends on timing:

    soak = Soak(Restartable("jsstore", store_dir), seed=1234)
    report = soak.run(cycles=10)
    assert report.problems == [], report.describe()

A cycle: the server runs; publishers send acked publishes (a few in flight each, some with
a Nats-Msg-Id, some resending an id already acked or one whose PubAck never came) to a few
subjects of four file streams (one with a max_msgs limit that removes the oldest, one a
work queue, whose acks remove messages); one durable pull consumer per stream fetches and
acks (plain acks, acks waited for with ack_sync, and some left unacked so they come again);
a timer SIGKILLs the server at a moment drawn uniformly from a range, so kills land
mid-publish, mid-fetch and mid-ack.  Then the server starts again on the same port and
directory and the checker asks it what it kept:

- every message whose PubAck arrived is there, at the sequence the PubAck named, with its
  subject and content, or (in the work queue) was acked by the consumer; the other streams
  have no hole (only the limit removes, from the front) and number on above every acked
  sequence; their per-subject counts and last messages are what was stored; a Msg-Id is
  stored at most once, and an acked one sent again is answered as a duplicate of its
  sequence;
- each consumer's ack floor (consumer info ack_floor.stream_seq) never moves backwards from
  one restart to the next and never covers a message the client was never given (that
  message would be lost to the consumer); its delivered sequence and num_pending agree
  with the stream;
- a message acked with ack_sync is not delivered again by the same server process; one
  whose ack a kill came too soon after may come again from the next (at-least-once: both
  servers write consumer state behind the ack), counted as acks_forgotten, as a floor
  below the ack_sync'ed run is counted as floors_behind_acks; other redeliveries are
  counted too;
- at the end the consumers are drained: what they were given over all cycles covers every
  stored message (and the work queue is empty).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time

import nats
from nats.errors import Error as NatsError

# two streams that keep everything, one whose max_msgs limit removes the oldest, and a
# work queue, where a consumer's ack removes the message
STREAMS = {"SOAKA": ["soak.a.*"], "SOAKB": ["soak.b.*"], "SOAKC": ["soak.c.*"],
           "SOAKW": ["soak.w.*"]}
WORKQUEUE = {"SOAKW"}
MAX_MSGS = {"SOAKC": 150}
# a max_bytes this small makes both servers write SOAKC in 32 kB blocks (dynBlkSize): many
# rollovers and removed blocks between kills; 150 messages never come near it
MAX_BYTES = {"SOAKC": 100_000}
SUBJECTS = ["soak.a.x", "soak.a.y", "soak.a.z", "soak.b.x", "soak.b.y", "soak.c.x",
            "soak.w.x", "soak.w.y"]
CONSUMER = "worker"
ACK_WAIT = 1.0                  # seconds: what is left unacked comes again soon
MSG_ID = "Nats-Msg-Id"


@dataclasses.dataclass
class Settings:
    publishers: int = 3
    in_flight: int = 4           # publishes awaited at once, per publisher
    pace: float = 0.0            # seconds each publisher waits after a PubAck
    max_payload: int = 300       # random bytes after a payload's id (up to)
    kill_after: tuple[float, float] = (0.3, 1.5)   # seconds into the cycle's traffic
    publish_timeout: float = 1.0
    fetch_timeout: float = 0.3
    msg_id_share: float = 0.4    # of the publishes: with a Nats-Msg-Id
    resend_share: float = 0.03   # of the publishes: an acked Msg-Id sent again
    ack_sync_share: float = 0.3  # of the deliveries: acked with ack_sync
    no_ack_share: float = 0.1    # of the deliveries: left unacked
    full_check_every: int = 1    # get every stored message back every n-th cycle
    recent_check: int = 2        # and otherwise those acked in the last n cycles
    sample: int = 200            # plus this many older ones at random


@dataclasses.dataclass
class Published:
    subject: str
    data: bytes
    msg_id: str | None
    cycle: int


@dataclasses.dataclass
class Report:
    server: str
    seed: int
    cycles: int = 0
    published: int = 0           # publishes sent
    acked: int = 0               # PubAcks received (not duplicates)
    duplicates: int = 0          # PubAcks saying duplicate (a Msg-Id resent)
    checked: int = 0             # stored messages read back and compared
    delivered: int = 0           # messages the consumers were given
    consumer_acks: int = 0       # acks sent (plain and ack_sync)
    ack_syncs: int = 0           # of them, confirmed with ack_sync
    redeliveries: int = 0        # deliveries of a message the consumer had been given before
    acks_forgotten: int = 0      # ack_sync'ed messages delivered again after a restart
    floors_behind_acks: int = 0  # restarts whose ack floor was below what ack_sync confirmed
    losses: int = 0              # acked messages missing or changed, or lost to a consumer
    floor_regressions: int = 0
    unanswered: int = 0          # publishes the kill left without a PubAck
    unconfirmed: int = 0         # ack_syncs the kill left without their confirmation
    problems: list = dataclasses.field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        return (f"soak server={self.server} seed={self.seed} cycles={self.cycles} "
                f"published={self.published} acked={self.acked} "
                f"duplicates={self.duplicates} checked={self.checked} "
                f"delivered={self.delivered} consumer_acks={self.consumer_acks} "
                f"ack_syncs={self.ack_syncs} redeliveries={self.redeliveries} "
                f"acks_forgotten={self.acks_forgotten} "
                f"floors_behind_acks={self.floors_behind_acks} "
                f"losses={self.losses} floor_regressions={self.floor_regressions} "
                f"unanswered={self.unanswered} unconfirmed={self.unconfirmed} "
                f"problems={len(self.problems)} "
                f"seconds={self.seconds:.1f}")

    def describe(self) -> str:
        shown = "\n".join(self.problems[:30])
        more = len(self.problems) - 30
        return (f"{self.line()}\nreplay with seed {self.seed}:\n{shown}"
                + (f"\n... and {more} more" if more > 0 else ""))


def _stream_of(subject: str) -> str:
    return {"a": "SOAKA", "b": "SOAKB", "c": "SOAKC", "w": "SOAKW"}[subject.split(".")[1]]


async def _quiet(*_args) -> None:
    """nats-py's callbacks, silent: the kills make its errors expected."""


class ConsumerView:
    """What the client knows of one durable consumer across cycles."""

    def __init__(self, stream: str):
        self.stream = stream
        self.received: set[int] = set()     # stream sequences ever given to the client
        self.synced: dict[int, int] = {}    # acked with ack_sync (confirmed) -> the cycle
        self.acked: set[int] = set()        # acked at all (an ack sent, maybe not applied)
        self.floor = 0                      # the highest ack floor seen after a restart

    def synced_floor(self) -> int:
        """The end of the contiguous run of ack_sync'ed sequences from 1."""
        n = 0
        while n + 1 in self.synced:
            n += 1
        return n


class Soak:
    """Drives a Restartable (tests/bothservers.py) through kill-and-restart cycles."""

    def __init__(self, servers, seed: int, settings: Settings | None = None, log=None):
        self.servers = servers
        self.rng = random.Random(seed)
        self.settings = settings or Settings()
        self.report = Report(servers.kind, seed)
        self.log = log
        self.attempted: dict[bytes, Published] = {}      # every payload ever sent
        self.stored: dict[str, dict[int, Published]] = {s: {} for s in STREAMS}
        self.id_seq: dict[str, int] = {}                  # Msg-Id -> acked sequence
        self.unacked_ids: list[Published] = []            # sent with an id, no PubAck
        self.acked_ids: list[Published] = []              # sent with an id, acked
        self.consumers = {s: ConsumerView(s) for s in STREAMS}
        self.first_seq = {s: 1 for s in STREAMS}          # below it, removed by limits
        self.serial = 0
        self.cycle = 0

    # the run ---------------------------------------------------------------------------

    def run(self, cycles: int) -> Report:
        started = time.monotonic()
        asyncio.run(self._setup())
        for _ in range(cycles):
            self.cycle += 1
            asyncio.run(self._traffic())
            self.servers.kill()
            self.servers.start_again()
            full = self.cycle % self.settings.full_check_every == 0 or self.cycle == cycles
            asyncio.run(self._verify(full))
            self.report.cycles += 1
            self.report.seconds = time.monotonic() - started
            if self.log:
                self.log(f"cycle {self.cycle}: {self.report.line()}")
        self.cycle += 1                     # the drain talks to the last server started
        asyncio.run(self._drain())
        self.report.losses = sum(1 for p in self.report.problems if p.startswith("LOSS"))
        self.report.seconds = time.monotonic() - started
        return self.report

    def problem(self, kind: str, text: str) -> None:
        self.report.problems.append(f"{kind} (cycle {self.cycle}): {text}")
        if kind == "FLOOR":
            self.report.floor_regressions += 1

    async def _connect(self):
        return await nats.connect(self.servers.url, allow_reconnect=False,
                                  error_cb=_quiet, disconnected_cb=_quiet,
                                  connect_timeout=2, max_reconnect_attempts=0)

    async def _setup(self) -> None:
        nc = await self._connect()
        js = nc.jetstream()
        for name, subjects in STREAMS.items():
            await js.add_stream(name=name, subjects=subjects, storage="file",
                                duplicate_window=600.0, max_msgs=MAX_MSGS.get(name, -1),
                                max_bytes=MAX_BYTES.get(name, -1),
                                retention="workqueue" if name in WORKQUEUE else "limits")
            await js.add_consumer(name, durable_name=CONSUMER, ack_policy="explicit",
                                  ack_wait=ACK_WAIT, max_ack_pending=-1)
        await nc.close()

    # one cycle's traffic ----------------------------------------------------------------

    def _next_message(self) -> Published:
        """A new message (or, now and then, one whose id was sent without a PubAck)."""
        if self.unacked_ids and self.rng.random() < 0.5:
            return self.unacked_ids.pop(self.rng.randrange(len(self.unacked_ids)))
        if self.acked_ids and self.rng.random() < self.settings.resend_share:
            # within the duplicate window, across restarts: it must answer as a duplicate
            return self.rng.choice(self.acked_ids)
        self.serial += 1
        subject = self.rng.choice(SUBJECTS)
        msg_id = f"id-{self.serial}" if self.rng.random() < self.settings.msg_id_share else None
        if _stream_of(subject) in MAX_MSGS or _stream_of(subject) in WORKQUEUE:
            # a restart rebuilds the Msg-Id window from the messages kept: an id whose
            # message a limit or an ack removed is forgotten then (nats-server alike)
            msg_id = None
        # SOAKC's messages stay small: its max_bytes must never be what removes them
        top = 300 if _stream_of(subject) in MAX_BYTES else self.settings.max_payload
        size = self.rng.randrange(0, top)
        data = b"%s|%d|%d|" % (subject.encode(), self.cycle, self.serial) + bytes(
            self.rng.getrandbits(8) for _ in range(min(size, 64))) * (size // 64 + 1)
        published = Published(subject, data, msg_id, self.cycle)
        self.attempted[data] = published
        return published

    async def _publish_one(self, js, published: Published) -> None:
        stream = _stream_of(published.subject)
        headers = {MSG_ID: published.msg_id} if published.msg_id else None
        self.report.published += 1
        try:
            ack = await js.publish(published.subject, published.data, headers=headers,
                                   timeout=self.settings.publish_timeout)
        except (NatsError, asyncio.TimeoutError, OSError):
            self.report.unanswered += 1
            if published.msg_id:
                self.unacked_ids.append(published)
            raise
        if ack.stream != stream:
            self.problem("WRONG", f"{published.data[:30]!r} acked by stream {ack.stream}")
        if ack.duplicate:
            self.report.duplicates += 1
            known = self.id_seq.get(published.msg_id)
            if known is not None and known != ack.seq:
                self.problem("DUP", f"id {published.msg_id} acked at {known}, "
                                    f"duplicate names {ack.seq}")
        elif published.msg_id in self.id_seq:
            self.problem("DUP", f"id {published.msg_id} acked at "
                                f"{self.id_seq[published.msg_id]} stored again at {ack.seq}")
        else:
            self.report.acked += 1
        have = self.stored[stream].get(ack.seq)
        if have is not None and have is not published:
            self.problem("LOSS", f"{stream} seq {ack.seq} acked twice: {have.data[:30]!r} "
                                 f"then {published.data[:30]!r}")
        if published.msg_id:
            if published.msg_id not in self.id_seq:
                self.acked_ids.append(published)
            self.id_seq[published.msg_id] = ack.seq
        self.stored[stream][ack.seq] = published

    async def _publisher(self, js, stop: asyncio.Event) -> None:
        pending: set[asyncio.Task] = set()
        try:
            while not stop.is_set():
                while len(pending) < self.settings.in_flight:
                    pending.add(asyncio.ensure_future(self._publish_one(js, self._next_message())))
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    if task.exception() is not None:
                        stop.set()
                if self.settings.pace:
                    await asyncio.sleep(self.settings.pace)
        finally:
            if pending:
                await asyncio.wait(pending)
                for task in pending:
                    task.exception()    # retrieved: the kill's errors are expected

    def _delivered(self, view: ConsumerView, msg) -> None:
        meta = msg.metadata
        seq = meta.sequence.stream
        self.report.delivered += 1
        if seq in view.received:
            self.report.redeliveries += 1
        synced_in = view.synced.get(seq)
        if synced_in == self.cycle:
            self.problem("ACKED-AGAIN", f"{view.stream} seq {seq} acked with ack_sync and "
                                        f"delivered again by the same server process "
                                        f"(delivered {meta.num_delivered})")
        elif synced_in is not None:
            # confirmed before a SIGKILL and forgotten by it: nats-server answers an ack
            # before its consumer state reaches the disk too (at-least-once allows it)
            self.report.acks_forgotten += 1
            del view.synced[seq]
        view.received.add(seq)
        expected = self.stored[view.stream].get(seq)
        if expected is None:
            expected = self.attempted.get(msg.data)
            if expected is None:
                self.problem("LOSS", f"{view.stream} seq {seq} delivered with content never "
                                     f"sent: {msg.data[:40]!r}")
            return
        if msg.data != expected.data or msg.subject != expected.subject:
            self.problem("LOSS", f"{view.stream} seq {seq} delivered as {msg.subject} "
                                 f"{msg.data[:40]!r}, acked as {expected.subject} "
                                 f"{expected.data[:40]!r}")

    async def _consumer(self, nc, view: ConsumerView, stop: asyncio.Event) -> None:
        js = nc.jetstream()
        sub = await js.pull_subscribe_bind(CONSUMER, view.stream)
        while not stop.is_set():
            try:
                msgs = await sub.fetch(self.rng.randrange(1, 20),
                                       timeout=self.settings.fetch_timeout)
            except (asyncio.TimeoutError, NatsError):
                if nc.is_closed:
                    return
                continue
            for msg in msgs:
                self._delivered(view, msg)
                roll = self.rng.random()
                if roll < self.settings.no_ack_share:
                    continue
                self.report.consumer_acks += 1
                view.acked.add(msg.metadata.sequence.stream)
                if roll < self.settings.no_ack_share + self.settings.ack_sync_share:
                    try:
                        await msg.ack_sync(timeout=self.settings.publish_timeout)
                    except (asyncio.TimeoutError, NatsError, OSError):
                        self.report.unconfirmed += 1
                        return
                    view.synced[msg.metadata.sequence.stream] = self.cycle
                    self.report.ack_syncs += 1
                else:
                    try:
                        await msg.ack()
                    except (NatsError, OSError):
                        return

    async def _traffic(self) -> None:
        nc = await self._connect()
        js = nc.jetstream()
        stop = asyncio.Event()
        tasks = [asyncio.ensure_future(self._publisher(js, stop))
                 for _ in range(self.settings.publishers)]
        tasks += [asyncio.ensure_future(self._consumer(nc, view, stop))
                  for view in self.consumers.values()]
        await asyncio.sleep(self.rng.uniform(*self.settings.kill_after))
        self.servers.kill()                 # SIGKILL, mid-traffic
        stop.set()
        done, pending = await asyncio.wait(tasks, timeout=10)
        for task in pending:
            task.cancel()
        for task in done:
            error = task.exception()
            if error is not None and not isinstance(error, (NatsError, asyncio.TimeoutError,
                                                            OSError)):
                raise error
        try:
            await asyncio.wait_for(nc.close(), 2)
        except (asyncio.TimeoutError, NatsError, OSError):
            pass

    # the checks after a restart ---------------------------------------------------------

    async def _verify(self, full: bool) -> None:
        nc = await self._connect()
        js = nc.jetstream()
        for stream, stored in self.stored.items():
            state = (await js.stream_info(stream)).state
            top = max(stored, default=0)
            if state.last_seq < top:
                self.problem("LOSS", f"{stream} last_seq {state.last_seq} below acked {top}")
            limit = MAX_MSGS.get(stream)
            first = state.last_seq - limit + 1 if limit and state.last_seq > limit else 1
            expected_count = state.last_seq - first + 1 if state.last_seq else 0
            if stream in WORKQUEUE:
                # acks remove messages anywhere: what is gone must have been acked
                first = 1
                gone = [s for s in range(1, min(state.first_seq, state.last_seq + 1))
                        if s not in self.consumers[stream].acked]
                if gone:
                    self.problem("LOSS", f"{stream} first_seq {state.first_seq}: removed "
                                         f"{len(gone)} never acked, first {gone[:5]}")
            elif (state.first_seq != first or state.messages != expected_count
                    or state.num_deleted):
                self.problem("LOSS", f"{stream} holds first {state.first_seq} last "
                                     f"{state.last_seq} messages {state.messages} deleted "
                                     f"{state.num_deleted}: a hole (limits: {limit})")
            self.first_seq[stream] = first
            if full:
                seqs = range(max(first, state.first_seq if stream in WORKQUEUE else first),
                             state.last_seq + 1)
            else:
                recent = [s for s, p in stored.items()
                          if p.cycle > self.cycle - self.settings.recent_check]
                older = [s for s, p in stored.items()
                         if p.cycle <= self.cycle - self.settings.recent_check]
                seqs = sorted(s for s in set(recent) | set(self.rng.sample(
                    older, min(self.settings.sample, len(older)))) if s >= first)
            await self._check_messages(js, stream, seqs, full)
            if full and stream not in WORKQUEUE:
                await self._check_subjects(js, stream, first, state.last_seq)
            await self._check_consumer(js, self.consumers[stream], state.last_seq)
        await nc.close()

    async def _check_messages(self, js, stream: str, seqs, full: bool) -> None:
        stored = self.stored[stream]
        seen_ids: dict[str, int] = {}
        for seq in seqs:
            try:
                msg = await js.get_msg(stream, seq)
            except NatsError as error:
                if stream in WORKQUEUE and seq in self.consumers[stream].acked:
                    continue                    # an ack removed it
                if seq in stored:
                    self.problem("LOSS", f"{stream} seq {seq} acked, now: {error}")
                else:
                    self.problem("LOSS", f"{stream} seq {seq} (not acked) missing: {error}")
                continue
            self.report.checked += 1
            expected = stored.get(seq) or self.attempted.get(msg.data)
            if expected is None:
                self.problem("LOSS", f"{stream} seq {seq} holds content never sent: "
                                     f"{msg.data[:40]!r}")
                continue
            if msg.data != expected.data or msg.subject != expected.subject:
                self.problem("LOSS", f"{stream} seq {seq} holds {msg.subject} "
                                     f"{msg.data[:40]!r}, acked as {expected.subject} "
                                     f"{expected.data[:40]!r}")
            msg_id = (msg.headers or {}).get(MSG_ID)
            if msg_id != expected.msg_id:
                self.problem("LOSS", f"{stream} seq {seq} Msg-Id {msg_id!r}, sent "
                                     f"{expected.msg_id!r}")
            if msg_id is not None:
                if full and msg_id in seen_ids:
                    self.problem("DUP", f"{stream} id {msg_id} stored at {seen_ids[msg_id]} "
                                        f"and {seq}")
                seen_ids[msg_id] = seq
                known = self.id_seq.get(msg_id)
                if known is not None and known != seq:
                    self.problem("DUP", f"{stream} id {msg_id} acked at {known}, "
                                        f"stored again at {seq}")
                if known is None and seq not in stored:
                    # stored before the kill without its PubAck reaching us: from now on
                    # its id must answer as a duplicate of this sequence
                    self.id_seq[msg_id] = seq
            if seq not in stored:
                stored[seq] = expected  # kept without a PubAck: it must stay now

    async def _check_subjects(self, js, stream: str, first: int, last: int) -> None:
        """The per-subject state a restart rebuilt: counts and last messages (after a
        full check every sequence from first to last is known)."""
        stored = self.stored[stream]
        counts: dict[str, int] = {}
        lasts: dict[str, int] = {}
        for seq in range(first, last + 1):
            subject = stored[seq].subject
            counts[subject] = counts.get(subject, 0) + 1
            lasts[subject] = seq
        info = await js.stream_info(stream, subjects_filter=">")
        if (info.state.subjects or {}) != counts:
            self.problem("SUBJECTS", f"{stream} subjects {info.state.subjects}, stored "
                                     f"{counts}")
        for subject, seq in lasts.items():
            msg = await js.get_last_msg(stream, subject)
            if msg.seq != seq or msg.data != stored[seq].data:
                self.problem("SUBJECTS", f"{stream} last of {subject} is {msg.seq}, "
                                         f"stored {seq}")

    async def _check_consumer(self, js, view: ConsumerView, last_seq: int) -> None:
        info = await js.consumer_info(view.stream, CONSUMER)
        floor = info.ack_floor.stream_seq
        delivered = info.delivered.stream_seq
        # what it recovered holds together: the floor is not above what was delivered, and
        # what waits is every stored message above the delivered one
        waiting = last_seq - max(delivered, self.first_seq[view.stream] - 1)
        if view.stream in WORKQUEUE:
            waiting = info.num_pending          # what acks removed is not counted here
        if floor > delivered or info.num_pending != waiting or delivered > last_seq:
            self.problem("CONSUMER", f"{view.stream}/{CONSUMER} ack floor {floor} delivered "
                                     f"{delivered} num_pending {info.num_pending} (stream "
                                     f"last {last_seq}: {waiting} wait)")
        if floor < view.floor:
            self.problem("FLOOR", f"{view.stream}/{CONSUMER} ack floor {floor} after the "
                                  f"restart, {view.floor} after the one before")
        if floor < view.synced_floor():
            # acks confirmed before the kill that the restarted server does not have: what
            # nats-server does too (the forgotten ones come again, counted on delivery)
            self.report.floors_behind_acks += 1
        # what a limit removed before it was delivered is skipped, not lost
        missing = [s for s in range(self.first_seq[view.stream], floor + 1)
                   if s not in view.received]
        if missing:
            self.problem("LOSS", f"{view.stream}/{CONSUMER} ack floor {floor} covers "
                                 f"{len(missing)} never delivered, first {missing[:5]}")
        view.floor = max(view.floor, floor)

    async def _drain(self) -> None:
        """Everything left is delivered (what waits for its ack wait comes again) and
        acked: then what the consumers were given covers every stored message."""
        nc = await self._connect()
        js = nc.jetstream()
        for stream, view in self.consumers.items():
            sub = await js.pull_subscribe_bind(CONSUMER, stream)
            state = (await js.stream_info(stream)).state
            last = state.last_seq
            deadline = time.monotonic() + 30 + ACK_WAIT
            while time.monotonic() < deadline:
                info = await js.consumer_info(stream, CONSUMER)
                # done when nothing waits and nothing is pending (the ack floor need not
                # reach the last sequence: nats-server leaves it below messages a work
                # queue removed on acks its consumer state forgot in a kill)
                if info.num_pending == 0 and info.num_ack_pending == 0:
                    break
                try:
                    msgs = await sub.fetch(100, timeout=ACK_WAIT + 0.5)
                except asyncio.TimeoutError:
                    continue
                for msg in msgs:
                    self._delivered(view, msg)
                    view.acked.add(msg.metadata.sequence.stream)
                    await msg.ack_sync()
                    view.synced[msg.metadata.sequence.stream] = self.cycle
            info = await js.consumer_info(stream, CONSUMER)
            if info.num_pending or info.num_ack_pending:
                self.problem("LOSS", f"{stream}/{CONSUMER} not drained: ack floor "
                                     f"{info.ack_floor.stream_seq} of {last}, "
                                     f"{info.num_pending} waiting, "
                                     f"{info.num_ack_pending} pending")
            if stream in WORKQUEUE:
                never = sorted(s for s in self.stored[stream] if s not in view.received)
                state = (await js.stream_info(stream)).state
                if state.messages:
                    self.problem("LOSS", f"{stream} keeps {state.messages} messages after "
                                         f"every one was acked")
            else:
                never = [s for s in range(state.first_seq, last + 1)
                         if s not in view.received]
            if never:
                self.problem("LOSS", f"{stream}/{CONSUMER} never delivered {len(never)} "
                                     f"stored messages, first {never[:5]}")
        await nc.close()
