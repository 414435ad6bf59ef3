"""The consumers of an embedded JetStream: create, update, look up, list, delete, recover.

``ConsumerRegistry`` holds them; ``jsstore.jetstream.account.JetStream`` owns one (as
``js.consumers``) and offers its public methods under the same names:

    js.add_consumer("ORDERS", durable_name="DISPATCH", ack_policy="explicit")
    js.consumer_info("ORDERS", "DISPATCH")        # ConsumerInfo, nats-server's numbers
    js.consumers_info("ORDERS"); js.consumer_names("ORDERS")
    js.pause_consumer("ORDERS", "DISPATCH", until_ns); js.unpin_consumer(...)
    js.reset_consumer("ORDERS", "DISPATCH", seq=100)   # start over (0: above the ack floor)
    js.delete_consumer("ORDERS", "DISPATCH")

A file stream's consumers keep nats-server's ``obs/<name>/`` files (meta.inf, meta.sum,
o.dat) and come back when the store directory is opened again.  Failures are the API
errors nats-server answers with (``jsstore.wire.apierrors``).

The lock rule (nats-server's): methods named ``..._locked`` expect the JetStream's lock
held (``with js.lock:``); every other public method takes it.  The registry is what a
consumer knows of its owner: ``clock``, ``bus``, ``schedule(due, consumer)`` and
``consumer_inactive(consumer)``.  A tick runs only the consumers whose work is due (a heap
of due times), so timed work costs the same with 10 consumers or 10,000.
"""

from __future__ import annotations

import heapq
import itertools
import os
import random
import string
from typing import TYPE_CHECKING, Callable, Iterator, Mapping

import msgspec

from jsstore._core.storage.subjects import is_literal
from jsstore.deferred import deferred
from jsstore.errors import StoreError
from jsstore.gocompat.durations import time_sub
from jsstore.gocompat.times import ZERO_TIME, rfc3339_nano
from jsstore.stream.filterindex import FilterIndex

if TYPE_CHECKING:
    from jsstore.consumer.config import ConsumerConfig
    from jsstore.consumer.consumer import Consumer
    from jsstore.jetstream.pullsub import PullSubscription

# the consumers' machinery loads with the first consumer (or the first consumer request)
consumerconfig = deferred("jsstore.consumer.config")
consumercreate = deferred("jsstore.consumer.create")
consumer_module = deferred("jsstore.consumer.consumer")
pullsub = deferred("jsstore.jetstream.pullsub")
consumerstore = deferred("jsstore.store.consumerstore")
advisories = deferred("jsstore.stream.advisories")
api_errors = deferred("jsstore.wire.apierrors")

# secrets.choice without importing secrets (hmac, hashlib): the same SystemRandom
_SYSTEM_RANDOM = random.SystemRandom()
_NAME_ALPHABET = string.ascii_letters + string.digits
GO_ZERO_TIME = ZERO_TIME


class SequenceInfo(msgspec.Struct, omit_defaults=True):
    """A delivered or ack-floor pair, with when it last moved."""
    consumer_seq: int
    stream_seq: int
    last_active: str | None = None


class PriorityGroupState(msgspec.Struct, omit_defaults=True, kw_only=True):
    group: str
    pinned_client_id: str = ""
    pinned_ts: str                     # always written: Go's omitempty keeps a zero time.Time


class ConsumerInfo(msgspec.Struct, omit_defaults=True, kw_only=True):
    """nats-server's ConsumerInfo, its fields in its order."""
    stream_name: str
    name: str
    created: str
    config: consumerconfig.ConsumerConfig
    delivered: SequenceInfo
    ack_floor: SequenceInfo
    num_ack_pending: int
    num_redelivered: int
    num_waiting: int
    num_pending: int
    push_bound: bool = False
    paused: bool = False
    pause_remaining: int = 0
    ts: str
    priority_groups: list[PriorityGroupState] | None = None


class ConsumerResetInfo(ConsumerInfo, kw_only=True):
    """What a reset answers: the consumer's info right after it, and the stream sequence
    delivery starts from again (nats-server's JSApiConsumerResetResponse)."""
    reset_seq: int


def new_consumer_name() -> str:
    """A generated name for an unnamed consumer (8 characters, as nats-server's)."""
    return "".join(_SYSTEM_RANDOM.choice(_NAME_ALPHABET) for _ in range(8))


def consumer_info(consumer: Consumer, now: int) -> ConsumerInfo:
    """What CONSUMER.INFO answers (nats-server's infoWithSnap)."""
    acks = consumer.ack_state
    if consumer.store.has_state():
        delivered = SequenceInfo(acks.delivered_consumer, acks.delivered_stream)
    else:
        delivered = SequenceInfo(max(consumer.next_delivery_seq, 1) - 1,
                                 max(consumer.next_stream_seq, 1) - 1)
    ack_floor = SequenceInfo(acks.ack_floor_consumer, acks.ack_floor_stream)
    if consumer.last_delivered_at:
        delivered.last_active = rfc3339_nano(consumer.last_delivered_at)
    last_acked_at = consumer.acknowledgements.last_acked_at
    if last_acked_at:
        ack_floor.last_active = rfc3339_nano(last_acked_at)
    cfg = consumer.config
    pull, push = consumer.pull, consumer.push
    groups = None
    if cfg.priority_groups:
        pin_id, pinned_at = (pull.pin_id, pull.pinned_at) if pull is not None else ("", 0)
        groups = [PriorityGroupState(group=cfg.priority_groups[0], pinned_client_id=pin_id,
                                     pinned_ts=rfc3339_nano(pinned_at)
                                     if pinned_at else GO_ZERO_TIME)]
    pause_until = consumer_module.rfc3339_ns(cfg.pause_until)
    paused = now < pause_until
    return ConsumerInfo(
        stream_name=consumer.stream.name, name=consumer.name,
        created=rfc3339_nano(consumer.created), config=cfg, delivered=delivered,
        ack_floor=ack_floor, num_ack_pending=acks.num_pending,
        num_redelivered=0 if cfg.max_deliver == 1 else consumer.acknowledgements.num_redelivered(),
        num_waiting=pull.count(now) if pull is not None else 0,
        num_pending=consumer.check_num_pending(),
        push_bound=push is not None and push.active, paused=paused,
        pause_remaining=time_sub(pause_until, now) if paused else 0, ts=rfc3339_nano(now),
        priority_groups=groups)


class ConfigsView(Mapping[str, "ConsumerConfig"]):
    """A stream's consumers' configurations by name, read from the consumers as asked."""

    def __init__(self, consumers: dict[str, Consumer]):
        self._consumers = consumers

    def __getitem__(self, name: str) -> ConsumerConfig:
        return self._consumers[name].config

    def __contains__(self, name: object) -> bool:
        return name in self._consumers

    def __iter__(self) -> Iterator[str]:
        return iter(self._consumers)

    def __len__(self) -> int:
        return len(self._consumers)


class ConsumerRegistry:
    """Every consumer of one JetStream's streams, by stream and name."""

    def __init__(self, js):
        self.js = js                    # the owning JetStream (its lock, streams, timers)
        self.clock: Callable[[], int] = js.clock   # Unix ns, the JetStream's clock
        self.bus = js.bus
        self.signal = js.signals.signal  # (consumer): it may deliver more (Consumer.signal)
        self._by_stream: dict[str, dict[str, Consumer]] = {}   # stream -> name -> consumer
        # stream -> its consumers by the subjects they filter on (a message is offered only
        # to those that may take it); literal deliver subject -> push consumers on it
        self._by_filter: dict[str, FilterIndex[Consumer]] = {}
        self._by_deliver: dict[str, dict[tuple[str, str], Consumer]] = {}
        self._delivers: dict[tuple[str, str], str] = {}    # (stream, name) -> its deliver
        self._listening: set[int] = set()   # id() of the streams whose stores we hear from
        # timed work: a heap of (due, rank, consumer); a consumer's earliest queued due and
        # its rank (creation order: consumers due together tick in that order)
        self._dues: list[tuple[int, int, Consumer]] = []
        self._due_of: dict[int, int] = {}
        self._rank: dict[int, int] = {}
        self._ranks = itertools.count()
        self.bus.watch_interest(self._interest_changed)

    # -- what a consumer asks of its owner ------------------------------------------------
    def schedule(self, due: int, consumer: Consumer) -> None:
        """`consumer` has timed work at `due` (Unix ns)."""
        self._queue_due(consumer, due)
        self.js.schedule(due)

    def _queue_due(self, consumer: Consumer, due: int) -> None:
        key = id(consumer)
        queued = self._due_of.get(key)
        if (queued is not None and queued <= due) or key not in self._rank:
            return
        self._due_of[key] = due
        heapq.heappush(self._dues, (due, self._rank[key], consumer))

    def consumer_inactive(self, consumer: Consumer) -> None:
        """A consumer's inactive threshold passed: it goes, as a deletion."""
        self._remove_locked(consumer)

    def _interest_changed(self, filter: str) -> None:
        """A bus subscription came or went: push consumers whose deliver subject it
        matches re-read their interest (start delivering, or start the delete timer)."""
        if self.js.closed:
            return
        with self.js.lock:
            if is_literal(filter):
                for consumer in list(self._by_deliver.get(filter, {}).values()):
                    if consumer.push is not None and consumer.push.delivers_to(filter):
                        consumer.interest_changed()
                return
            for consumers in list(self._by_stream.values()):
                for consumer in list(consumers.values()):
                    if consumer.push is not None and consumer.push.delivers_to(filter):
                        consumer.interest_changed()

    def _index_locked(self, consumer: Consumer, *, wide: bool = False) -> None:
        """(Re)index the consumer by its filters and its deliver subject.  `wide`: offer it
        every message's removal (it may hold deliveries its filters no longer match)."""
        key = consumer.stream.name, consumer.name
        self._unindex_deliver(key)
        index = self._filter_index(consumer.stream.name)
        wide = wide or index.is_wide(consumer.name)
        index.add(consumer.name, consumer.filters, consumer, wide=wide)
        deliver = consumer.config.deliver_subject
        if deliver:
            self._by_deliver.setdefault(deliver, {})[key] = consumer
            self._delivers[key] = deliver

    def _unindex_locked(self, stream_name: str, name: str) -> None:
        index = self._by_filter.get(stream_name)
        if index is not None:
            index.remove(name)
        self._unindex_deliver((stream_name, name))

    def _unindex_deliver(self, key: tuple[str, str]) -> None:
        deliver = self._delivers.pop(key, None)
        if deliver is not None:
            on_it = self._by_deliver.get(deliver)
            if on_it is not None:
                on_it.pop(key, None)
                if not on_it:
                    del self._by_deliver[deliver]

    def _filter_index(self, stream_name: str) -> FilterIndex[Consumer]:
        index = self._by_filter.get(stream_name)
        if index is None:
            index = self._by_filter[stream_name] = FilterIndex()
        return index

    # -- look up --------------------------------------------------------------------------
    def find_locked(self, stream_name: str, name: str) -> Consumer | None:
        """The consumer `name` of stream `stream_name`, or None."""
        consumers = self._by_stream.get(stream_name)
        return consumers.get(name) if consumers is not None else None

    def lookup_locked(self, stream_name: str, name: str) -> Consumer:
        """The consumer, or the API error for a missing stream or consumer."""
        stream = self.js.lookup_stream_locked(stream_name)
        consumer = self._by_stream.get(stream.name, {}).get(name)
        if consumer is None:
            raise api_errors.JSConsumerNotFoundErr()
        return consumer

    def configs_locked(self, stream_name: str) -> dict[str, ConsumerConfig]:
        """The configurations of the stream's consumers, by name."""
        return {name: consumer.config
                for name, consumer in self._by_stream.get(stream_name, {}).items()}

    def _of_stream(self, stream_name: str) -> dict[str, Consumer]:
        return self._by_stream.setdefault(stream_name, {})

    # -- create and update ----------------------------------------------------------------
    def add_consumer(self, stream_name: str, config: ConsumerConfig | None = None, *,
                     action: str = "", pedantic: bool = False, **fields) -> ConsumerInfo:
        """Create a consumer (action "" creates or updates, "create" only creates,
        "update" only updates), with nats-server's defaults and checks: a durable_name or
        name makes it a named consumer (as CONSUMER.CREATE.<stream>.<name>), neither an
        ephemeral one with a generated name."""
        if config is None:
            config = consumerconfig.ConsumerConfig(**fields)
        elif fields:
            config = msgspec.structs.replace(config, **fields)
        name = config.durable_name or config.name
        target = consumercreate.CreateSubject("named" if name else "ephemeral", stream_name,
                                              name)
        request = consumercreate.CreateConsumerRequest(stream_name, config, action, pedantic)
        return self.create_consumer(target, request)

    def update_consumer(self, stream_name: str, config: ConsumerConfig | None = None,
                        **fields) -> ConsumerInfo:
        """Change a consumer's configuration (nats-server's update checks)."""
        return self.add_consumer(stream_name, config, action="update", **fields)

    def create_consumer(self, target, request) -> ConsumerInfo:
        """A decoded create request for `target` (a consumercreate.CreateSubject), checked
        and applied as nats-server's create handler does."""
        with self.js.lock:
            stream = self.js.find_stream_locked(target.stream)
            consumers = self._by_stream.get(target.stream, {})
            plan = consumercreate.plan_request(
                request, target, stream=stream.config if stream is not None else None,
                consumers=ConfigsView(consumers),
                limits=self.js.consumer_limits, has_interest=self.bus.has_interest)
            if plan.exists:
                consumer = consumers[plan.name]
                old_filters = sorted(consumer.filters)
                consumer.update_config(plan.config)
                self._index_locked(consumer, wide=sorted(consumer.filters) != old_filters)
            else:
                consumer = self._new_locked(stream, plan.name, plan.config)
            return consumer_info(consumer, self.clock())

    def _new_locked(self, stream, name: str, config: ConsumerConfig) -> Consumer:
        existing = self._of_stream(stream.name)
        if not name:
            name = new_consumer_name()
            while name in existing:
                name = new_consumer_name()
        created = self.clock()
        try:
            store = stream.store.consumer_store(name, created, consumerconfig.to_dict(config))
        except (StoreError, OSError, ValueError) as exc:
            # (ValueError: a name the file system cannot take, such as one with a NUL)
            raise consumercreate.store_failed_error() from exc
        consumer = self._attach_locked(stream, name, config, store, created)
        self._advise(stream.name, name, "create")
        return consumer

    def _attach_locked(self, stream, name: str, config, store, created: int) -> Consumer:
        consumer = consumer_module.Consumer(self, stream, name, config, store, created)
        self._of_stream(stream.name)[name] = consumer
        self._rank[id(consumer)] = next(self._ranks)
        # its first tick: what it set up before it had a rank (its ack, delete and pause
        # timers); a pull consumer's not sooner, for a tick that came between a request
        # and the next message would drop the request whose reader has gone, which the
        # next message is to find (pinned, then passed on) as nats-server does
        first = consumer.next_due() if consumer.pull is not None else self.clock()
        if first is not None:
            self._queue_due(consumer, first)
        # recovered deliveries were made under the filters of their time: such a consumer
        # hears of every removal
        self._index_locked(consumer, wide=bool(consumer.ack_state.num_pending))
        self._listen_locked(stream)
        stream.register_interest(name, consumer.filters, consumer.needs_ack)
        self.js.need_timers()
        consumer.gather()
        return consumer

    def _listen_locked(self, stream) -> None:
        """Hear of every message the stream stores, for its consumers."""
        if id(stream) in self._listening:
            return
        self._listening.add(id(stream))
        candidates = self._filter_index(stream.name).candidates

        def stored(_stream, seq, subject, _hdr, _payload, _ts):
            for consumer in candidates(subject):
                consumer.on_stored(seq, subject)
        stream.listeners.append(stored)

    # -- read -----------------------------------------------------------------------------
    def consumer_info(self, stream_name: str, name: str) -> ConsumerInfo:
        """The consumer's configuration and state, nats-server's numbers."""
        with self.js.lock:
            return consumer_info(self.lookup_locked(stream_name, name), self.clock())

    def consumer_names(self, stream_name: str) -> list[str]:
        """The stream's consumer names, sorted."""
        with self.js.lock:
            stream = self.js.lookup_stream_locked(stream_name)
            return sorted(self._by_stream.get(stream.name, {}))

    def consumers_info(self, stream_name: str) -> list[ConsumerInfo]:
        """Every consumer's info, by name."""
        with self.js.lock:
            stream = self.js.lookup_stream_locked(stream_name)
            now = self.clock()
            consumers = self._by_stream.get(stream.name, {})
            return [consumer_info(consumers[n], now) for n in sorted(consumers)]

    def consumer_count(self, stream_name: str) -> int:
        """How many consumers the stream has (0 for no such stream)."""
        return len(self._by_stream.get(stream_name, {}))

    # -- delete ---------------------------------------------------------------------------
    def delete_consumer(self, stream_name: str, name: str) -> bool:
        """Remove a consumer (and its files)."""
        with self.js.lock:
            self._remove_locked(self.lookup_locked(stream_name, name))
            return True

    def _remove_locked(self, consumer: Consumer, *, advise: bool = True) -> None:
        stream = consumer.stream
        self._by_stream.get(stream.name, {}).pop(consumer.name, None)
        self._unindex_locked(stream.name, consumer.name)
        self._forget_dues(consumer)
        kept = getattr(stream.store, "_consumers", None)    # (a plug-in store may keep none)
        if kept is not None:
            kept.pop(consumer.name, None)
        if advise:
            self._advise(stream.name, consumer.name, "delete")
        consumer.stop(delete=True)
        stream.unregister_interest(consumer.name)

    def _advise(self, stream: str, name: str, action: str) -> None:
        subject = (f"{advisories.ADVISORY_PREFIX}.CONSUMER."
                   f"{'CREATED' if action == 'create' else 'DELETED'}.{stream}.{name}")
        if self.bus.has_interest(subject):
            self.js.advise(advisories.consumer_action(stream, name, action, now=self.clock()))

    # -- pause and pins -------------------------------------------------------------------
    def pause_consumer(self, stream_name: str, name: str, until: int | None) -> ConsumerInfo:
        """Pause delivery until `until` (Unix ns); a past time resumes, kept in the
        configuration as nats-server keeps it (nats-py resumes with the Unix epoch, 0);
        None (or a time before 1970) resumes and clears it."""
        with self.js.lock:
            consumer = self.lookup_locked(stream_name, name)
            pause_until = rfc3339_nano(until) if until is not None and until >= 0 else None
            config = msgspec.structs.replace(consumer.config, pause_until=pause_until)
            # as nats-server, the stored metadata follows: a pause needs API level 1
            consumer.update_config(consumerconfig.with_static_metadata(config))
            return consumer_info(consumer, self.clock())

    def unpin_consumer(self, stream_name: str, name: str, group: str) -> None:
        """Release the pinned client of a priority group (CONSUMER.UNPIN)."""
        with self.js.lock:
            consumer = self.lookup_locked(stream_name, name)
            if group not in (consumer.config.priority_groups or ()):
                raise api_errors.JSConsumerInvalidPriorityGroupErr()
            if consumer.pull is not None:
                consumer.pull.unpin(group, "admin", self.clock())

    # -- reset ----------------------------------------------------------------------------
    def reset_consumer(self, stream_name: str, name: str, seq: int = 0) -> ConsumerResetInfo:
        """Start the consumer over (CONSUMER.RESET, nats-server 2.14): nothing pending or
        redelivered, delivery sequences from 1, delivery from stream sequence `seq`, or
        with 0 from just above its ack floor.  Only deliver policies all,
        by_start_sequence and by_start_time take a `seq`, never below their start
        (JSConsumerInvalidResetErr).  The info is taken before anything is delivered."""
        with self.js.lock:
            consumer = self.lookup_locked(stream_name, name)
            info = self.reset_locked(consumer, seq)
            consumer.gather()           # waiting requests and push interest get it now
            return info

    def reset_locked(self, consumer: Consumer, seq: int = 0) -> ConsumerResetInfo:
        """reset_consumer of a consumer in hand, the lock held, without delivering: the
        caller answers first (as nats-server does), then calls ``consumer.gather()``."""
        reset_seq = consumer.reset(seq)
        info = consumer_info(consumer, self.clock())
        return ConsumerResetInfo(**{f: getattr(info, f) for f in info.__struct_fields__},
                                 reset_seq=reset_seq)

    # -- time -----------------------------------------------------------------------------
    def tick_locked(self, now: int) -> int | None:
        """The due consumers' work; when the next is due (None: nothing)."""
        dues, due_of = self._dues, self._due_of
        ready: list[tuple[int, Consumer]] = []
        while dues and dues[0][0] <= now:
            due, rank, consumer = heapq.heappop(dues)
            if due_of.get(id(consumer)) == due:     # else a later queueing replaced it
                del due_of[id(consumer)]
                ready.append((rank, consumer))
        ready.sort(key=lambda entry: entry[0])
        for _rank, consumer in ready:
            if id(consumer) not in self._rank:      # removed by an earlier one's tick
                continue
            at = consumer.tick(now)
            if at is not None:
                self._queue_due(consumer, at)
        while dues and due_of.get(id(dues[0][2])) != dues[0][0]:
            heapq.heappop(dues)
        return dues[0][0] if dues else None

    def _forget_dues(self, consumer: Consumer) -> None:
        """A consumer left: no more ticks (its heap entries are skipped as they come)."""
        self._rank.pop(id(consumer), None)
        self._due_of.pop(id(consumer), None)

    # -- what happened to a stream --------------------------------------------------------
    def stream_purged_locked(self, stream, subject: str) -> None:
        """Tell the consumers what a purge removed (nats-server's stream purge): with no
        subject all of them move past it; with one, those whose filters lie inside it do,
        and those wider than it check their pending one by one."""
        state = stream.store.fast_state()
        first, last = state.first_seq, state.last_seq
        if subject:
            first = stream.store.filtered_state(first, subject).first
        for consumer in list(self._by_stream.get(stream.name, {}).values()):
            start, wider = first, False
            if subject and not consumer.is_equal_or_subset(subject):
                if not consumer.is_filtered_match(subject):
                    continue
                start, wider = state.first_seq, True
            consumer.on_purged(start, last, wider)

    def message_removed_locked(self, stream, seq: int, subject: str) -> None:
        """A message was deleted from the stream: its consumers adjust (decStreamPending)."""
        index = self._by_filter.get(stream.name)
        if index is not None:
            for consumer in index.candidates(subject):
                consumer.on_removed(seq, subject)

    def stream_deleted_locked(self, stream_name: str) -> None:
        """The stream was deleted: its consumers go with it (no advisories, as nats)."""
        for name in self._by_stream.get(stream_name, {}):
            self._unindex_deliver((stream_name, name))
        self._by_filter.pop(stream_name, None)
        for consumer in list(self._by_stream.pop(stream_name, {}).values()):
            consumer.stream_deleted()
            self._forget_dues(consumer)

    def reader_gone(self, subject: str, inbox: str) -> None:
        """Nobody reads `inbox` any more: drop the pull requests answering to it."""
        stream_name, _, name = subject.removeprefix("$JS.API.CONSUMER.MSG.NEXT.").partition(".")
        with self.js.lock:
            consumer = self.find_locked(stream_name, name)
            if consumer is not None and consumer.pull is not None:
                consumer.pull.cancel(inbox)

    def stop_locked(self) -> None:
        """The JetStream closes: every consumer stops, its files kept."""
        for consumers in self._by_stream.values():
            for consumer in consumers.values():
                consumer.stop(delete=False)

    def recover_locked(self, stream) -> None:
        """Bring back the consumers a file stream keeps in obs/."""
        directory = getattr(stream.store, "directory", None)
        if directory is None:
            return
        root = os.path.join(directory, consumerstore.CONSUMER_DIR)
        if not os.path.isdir(root):
            return
        for name in sorted(os.listdir(root)):
            path = os.path.join(root, name)
            try:
                meta = consumerstore.read_consumer_meta(path, stream.name)
                created = consumer_module.rfc3339_ns(meta.pop("Created", None))
                meta.pop("Name", None)
                config = consumerconfig.from_dict(meta)
                store = stream.store.consumer_store(name, created, consumerconfig.to_dict(config))
            except (StoreError, ValueError, msgspec.ValidationError) as exc:
                self.js.unrecovered[f"{stream.name} > {name}"] = str(exc)
                continue
            self._attach_locked(stream, name, config, store, created)

    # -- pull subscriptions ---------------------------------------------------------------
    def pull_subscribe(self, subject: str, durable: str | None = None, *,
                       stream: str | None = None,
                       config: ConsumerConfig | None = None) -> PullSubscription:
        """A pull subscription on `subject` (nats-py's pull_subscribe): binds to the durable
        consumer if it exists, else creates it (or an ephemeral one without a durable
        name) filtered on `subject` with explicit acks."""
        with self.js.lock:
            if stream is None:
                found = self.js.stream_for_subject_locked(subject)
                if found is None:
                    raise api_errors.JSStreamNotFoundErr()
                stream = found.name
            if durable and durable in self._by_stream.get(stream, {}):
                return pullsub.PullSubscription(self.js, stream, durable)
            fields = {} if config is None else {}
            base = config or consumerconfig.ConsumerConfig(ack_policy="explicit")
            if subject and not (base.filter_subject or base.filter_subjects):
                fields["filter_subject"] = subject
            if durable:
                fields["durable_name"] = durable
            info = self.add_consumer(stream, base, **fields)
            return pullsub.PullSubscription(self.js, stream, info.name, ephemeral=not durable)
