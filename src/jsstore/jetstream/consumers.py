"""The consumers of an embedded JetStream: create, update, look up, list, delete, recover.

``ConsumersMixin`` gives ``jsstore.jetstream.account.JetStream`` its consumer methods:

    js.add_consumer("ORDERS", durable_name="DISPATCH", ack_policy="explicit")
    js.consumer_info("ORDERS", "DISPATCH")        # ConsumerInfo, nats-server's numbers
    js.consumers_info("ORDERS"); js.consumer_names("ORDERS")
    js.pause_consumer("ORDERS", "DISPATCH", until_ns); js.unpin_consumer(...)
    js.delete_consumer("ORDERS", "DISPATCH")

A file stream's consumers keep nats-server's ``obs/<name>/`` files (meta.inf, meta.sum,
o.dat) and come back when the store directory is opened again.  Failures are the API
errors nats-server answers with (``jsstore.api.errors``).
"""

from __future__ import annotations

import os
import secrets
import string

import msgspec

from jsstore.stream import advisories
from jsstore.consumer import config as consumerconfig
from jsstore.consumer import create as consumercreate
from jsstore._core.subjects import _subject_matches, filters_overlap
from jsstore.wire import apierrors as api_errors
from jsstore.consumer.consumer import Consumer, rfc3339_ns
from jsstore.consumer.config import ConsumerConfig
from jsstore.store.consumerstore import CONSUMER_DIR, read_consumer_meta
from jsstore.gocompat.times import ZERO_TIME, rfc3339_nano
from jsstore.errors import StoreError

_NAME_ALPHABET = string.ascii_letters + string.digits
GO_ZERO_TIME = ZERO_TIME


class SequenceInfo(msgspec.Struct, omit_defaults=True):
    """A delivered or ack-floor pair, with when it last moved."""
    consumer_seq: int
    stream_seq: int
    last_active: str | None = None


class PriorityGroupState(msgspec.Struct, omit_defaults=True):
    group: str
    pinned_client_id: str = ""
    pinned_ts: str = GO_ZERO_TIME      # Go writes a zero time.Time (omitempty ignores it)


class ConsumerInfo(msgspec.Struct, omit_defaults=True, kw_only=True):
    """nats-server's ConsumerInfo, its fields in its order."""
    stream_name: str
    name: str
    created: str
    config: ConsumerConfig
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


def new_consumer_name() -> str:
    """A generated name for an unnamed consumer (8 characters, as nats-server's)."""
    return "".join(secrets.choice(_NAME_ALPHABET) for _ in range(8))


def consumer_info(consumer: Consumer, now: int) -> ConsumerInfo:
    """What CONSUMER.INFO answers (nats-server's infoWithSnap)."""
    acks = consumer.acks
    if consumer.store.has_state():
        delivered = SequenceInfo(acks.delivered_consumer, acks.delivered_stream)
    else:
        delivered = SequenceInfo(max(consumer.dseq, 1) - 1, max(consumer.sseq, 1) - 1)
    ack_floor = SequenceInfo(acks.ack_floor_consumer, acks.ack_floor_stream)
    if consumer.ldt:
        delivered.last_active = rfc3339_nano(consumer.ldt)
    if consumer.lat:
        ack_floor.last_active = rfc3339_nano(consumer.lat)
    cfg = consumer.config
    groups = None
    if cfg.priority_groups:
        groups = [PriorityGroupState(group=cfg.priority_groups[0],
                                     pinned_client_id=consumer.pin_id,
                                     pinned_ts=rfc3339_nano(consumer.pinned_ts)
                                     if consumer.pinned_ts else GO_ZERO_TIME)]
    pause_until = rfc3339_ns(cfg.pause_until)
    paused = now < pause_until
    return ConsumerInfo(
        stream_name=consumer.stream.name, name=consumer.name,
        created=rfc3339_nano(consumer.created), config=cfg, delivered=delivered,
        ack_floor=ack_floor, num_ack_pending=acks.num_pending,
        num_redelivered=0 if cfg.max_deliver == 1 else len(consumer.rdc),
        num_waiting=consumer.num_waiting(now), num_pending=consumer.check_num_pending(),
        push_bound=not consumer.is_pull and consumer.active, paused=paused,
        pause_remaining=pause_until - now if paused else 0, ts=rfc3339_nano(now),
        priority_groups=groups)


class ConsumersMixin:
    """Consumer management for JetStream (needs its _lock, _lookup, clock, bus)."""

    def _init_consumers(self) -> None:
        self._consumers: dict[str, dict[str, Consumer]] = {}   # stream -> name -> consumer
        self._listening: set[int] = set()   # id() of the streams whose stores we hear from
        self.bus.watch_interest(self._interest_changed)

    def _interest_changed(self, filter: str) -> None:
        """A bus subscription came or went: push consumers whose deliver subject it
        matches re-read their interest (start delivering, or start the delete timer)."""
        if self.closed:
            return
        with self._lock:
            for consumers in list(self._consumers.values()):
                for consumer in list(consumers.values()):
                    if (not consumer.is_pull and consumer.deliver_subject
                            and _subject_matches(consumer.deliver_subject, filter)):
                        consumer.interest_changed()

    def _stream_consumers(self, stream_name: str) -> dict[str, Consumer]:
        return self._consumers.setdefault(stream_name, {})

    def _consumer(self, stream_name: str, name: str) -> Consumer:
        stream = self._lookup(stream_name)
        consumer = self._consumers.get(stream.name, {}).get(name)
        if consumer is None:
            raise api_errors.JSConsumerNotFoundErr()
        return consumer

    # -- create and update ----------------------------------------------------------------
    def add_consumer(self, stream_name: str, config: ConsumerConfig | None = None, *,
                     action: str = "", pedantic: bool = False, **fields) -> ConsumerInfo:
        """Create a consumer (action "" creates or updates, "create" only creates,
        "update" only updates), with nats-server's defaults and checks: a durable_name or
        name makes it a named consumer (as CONSUMER.CREATE.<stream>.<name>), neither an
        ephemeral one with a generated name."""
        if config is None:
            config = ConsumerConfig(**fields)
        elif fields:
            config = msgspec.structs.replace(config, **fields)
        name = config.durable_name or config.name
        target = consumercreate.CreateSubject("named" if name else "ephemeral", stream_name,
                                              name)
        request = consumercreate.CreateConsumerRequest(stream_name, config, action, pedantic)
        return self.create_consumer(target, request)

    def update_consumer(self, stream_name: str, config: ConsumerConfig | None = None,
                        **fields) -> ConsumerInfo:
        return self.add_consumer(stream_name, config, action="update", **fields)

    def create_consumer(self, target, request) -> ConsumerInfo:
        """A decoded create request for `target` (a consumercreate.CreateSubject), checked
        and applied as nats-server's create handler does."""
        with self._lock:
            stream = self._streams.get(target.stream)
            consumers = self._consumers.get(target.stream, {})
            plan = consumercreate.plan_request(
                request, target, stream=stream.config if stream is not None else None,
                consumers={n: c.config for n, c in consumers.items()})
            if plan.exists:
                consumer = consumers[plan.name]
                consumer.update_config(plan.config)
            else:
                consumer = self._new_consumer(stream, plan.name, plan.config)
            return consumer_info(consumer, self.clock())

    def _new_consumer(self, stream, name: str, config: ConsumerConfig) -> Consumer:
        existing = self._stream_consumers(stream.name)
        if not name:
            name = new_consumer_name()
            while name in existing:
                name = new_consumer_name()
        created = self.clock()
        try:
            store = stream.store.consumer_store(name, created, consumerconfig.to_dict(config))
        except (StoreError, OSError) as exc:
            raise consumercreate.store_failed_error() from exc
        consumer = self._attach_consumer(stream, name, config, store, created)
        self._advise_consumer(stream.name, name, "create")
        return consumer

    def _attach_consumer(self, stream, name: str, config, store, created: int) -> Consumer:
        consumer = Consumer(self, stream, name, config, store, created)
        self._stream_consumers(stream.name)[name] = consumer
        self._listen(stream)
        stream.register_interest(name, consumer.filters, consumer.needs_ack)
        self._start_consumer_timers()
        consumer.gather()
        return consumer

    def _listen(self, stream) -> None:
        """Hear of every message the stream stores, for its consumers."""
        if id(stream) in self._listening:
            return
        self._listening.add(id(stream))
        consumers = self._stream_consumers(stream.name)

        def stored(_stream, seq, subject, _hdr, _payload, _ts):
            for consumer in list(consumers.values()):
                consumer.on_stored(seq, subject)
        stream.listeners.append(stored)

    def _start_consumer_timers(self) -> None:
        if self._timers is None and self._timers_wanted and not self.closed:
            from jsstore.jetstream.timers import TimerThread
            self._timers = TimerThread(self.tick)
        if self._timers is not None:
            self._timers.wake(self.clock())

    # -- read -----------------------------------------------------------------------------
    def consumer_info(self, stream_name: str, name: str) -> ConsumerInfo:
        with self._lock:
            return consumer_info(self._consumer(stream_name, name), self.clock())

    def consumer_names(self, stream_name: str) -> list[str]:
        with self._lock:
            stream = self._lookup(stream_name)
            return sorted(self._consumers.get(stream.name, {}))

    def consumers_info(self, stream_name: str) -> list[ConsumerInfo]:
        with self._lock:
            stream = self._lookup(stream_name)
            now = self.clock()
            consumers = self._consumers.get(stream.name, {})
            return [consumer_info(consumers[n], now) for n in sorted(consumers)]

    def consumer_count(self, stream_name: str) -> int:
        return len(self._consumers.get(stream_name, {}))

    # -- delete ---------------------------------------------------------------------------
    def delete_consumer(self, stream_name: str, name: str) -> bool:
        with self._lock:
            consumer = self._consumer(stream_name, name)
            self._remove_consumer(consumer)
            return True

    def _remove_consumer(self, consumer: Consumer, *, advise: bool = True) -> None:
        stream = consumer.stream
        self._consumers.get(stream.name, {}).pop(consumer.name, None)
        stream.store._consumers.pop(consumer.name, None)
        if advise:
            self._advise_consumer(stream.name, consumer.name, "delete")
        consumer.stop(delete=True)
        stream.unregister_interest(consumer.name)

    def _consumer_inactive(self, consumer: Consumer) -> None:
        """A consumer's inactive threshold passed: it goes, as a deletion."""
        self._remove_consumer(consumer)

    def _advise_consumer(self, stream: str, name: str, action: str) -> None:
        subject = (f"{advisories.ADVISORY_PREFIX}.CONSUMER."
                   f"{'CREATED' if action == 'create' else 'DELETED'}.{stream}.{name}")
        if self.bus.has_interest(subject):
            self._advise(advisories.consumer_action(stream, name, action, now=self.clock()))

    # -- pause and pins -------------------------------------------------------------------
    def pause_consumer(self, stream_name: str, name: str, until: int) -> ConsumerInfo:
        """Pause delivery until `until` (Unix ns); 0 or a past time resumes."""
        with self._lock:
            consumer = self._consumer(stream_name, name)
            pause_until = rfc3339_nano(until) if until > 0 else None
            config = msgspec.structs.replace(consumer.config, pause_until=pause_until)
            consumer.update_config(config)
            return consumer_info(consumer, self.clock())

    def unpin_consumer(self, stream_name: str, name: str, group: str) -> None:
        with self._lock:
            consumer = self._consumer(stream_name, name)
            if group not in (consumer.config.priority_groups or ()):
                raise api_errors.JSConsumerInvalidPriorityGroupErr()
            consumer.unpin("admin", self.clock())

    # -- time -----------------------------------------------------------------------------
    def _tick_consumers(self, now: int) -> int | None:
        due = None
        for consumers in list(self._consumers.values()):
            for consumer in list(consumers.values()):
                at = consumer.tick(now)
                if at is not None and (due is None or at < due):
                    due = at
        return due

    # -- streams --------------------------------------------------------------------------
    def _stream_purged(self, stream, subject: str) -> None:
        """Tell the consumers what a purge removed (nats-server's stream purge): with no
        subject all of them move past it; with one, those whose filters lie inside it do,
        and those wider than it check their pending one by one."""
        state = stream.store.fast_state()
        first, last = state.first_seq, state.last_seq
        if subject:
            first = stream.store.filtered_state(first, subject).first
        for consumer in list(self._consumers.get(stream.name, {}).values()):
            start, wider = first, False
            if subject and not consumer.is_equal_or_subset(subject):
                if not consumer.is_filtered_match(subject):
                    continue
                start, wider = state.first_seq, True
            consumer.on_purged(start, last, wider)

    def _msg_removed(self, stream, seq: int, subject: str) -> None:
        """A message was deleted from the stream: its consumers adjust (decStreamPending)."""
        for consumer in list(self._consumers.get(stream.name, {}).values()):
            consumer.on_removed(seq, subject)

    def _reader_gone(self, subject: str, inbox: str) -> None:
        """Nobody reads `inbox` any more: drop the pull requests answering to it."""
        stream_name, _, name = subject.removeprefix("$JS.API.CONSUMER.MSG.NEXT.").partition(".")
        consumer = self._consumers.get(stream_name, {}).get(name)
        if consumer is not None:
            consumer.cancel_requests(inbox)

    # -- pull subscriptions ---------------------------------------------------------------
    def pull_subscribe(self, subject: str, durable: str | None = None, *,
                       stream: str | None = None, config: ConsumerConfig | None = None):
        """A pull subscription on `subject` (nats-py's pull_subscribe): binds to the durable
        consumer if it exists, else creates it (or an ephemeral one without a durable
        name) filtered on `subject` with explicit acks."""
        from jsstore.jetstream.pullsub import PullSubscription
        with self._lock:
            if stream is None:
                found = self._capturing(subject) if subject else None
                if found is None:
                    found = next((s for s in self._streams.values()
                                  if any(filters_overlap(subject, c) for c in s.config.subjects)),
                                 None)
                if found is None:
                    raise api_errors.JSStreamNotFoundErr()
                stream = found.name
            if durable and durable in self._consumers.get(stream, {}):
                return PullSubscription(self, stream, durable)
            fields = {} if config is None else {}
            base = config or ConsumerConfig(ack_policy="explicit")
            if subject and not (base.filter_subject or base.filter_subjects):
                fields["filter_subject"] = subject
            if durable:
                fields["durable_name"] = durable
            info = self.add_consumer(stream, base, **fields)
            return PullSubscription(self, stream, info.name, ephemeral=not durable)

    def _stream_gone(self, stream_name: str) -> None:
        """The stream was deleted: its consumers go with it (no advisories, as nats)."""
        for consumer in list(self._consumers.pop(stream_name, {}).values()):
            if consumer.is_pull:
                consumer.release_requests()
            consumer.closed = True

    def _stop_consumers(self) -> None:
        for consumers in self._consumers.values():
            for consumer in consumers.values():
                consumer.stop(delete=False)

    def _recover_consumers(self, stream) -> None:
        """Bring back the consumers a file stream keeps in obs/."""
        directory = getattr(stream.store, "directory", None)
        if directory is None:
            return
        root = os.path.join(directory, CONSUMER_DIR)
        if not os.path.isdir(root):
            return
        for name in sorted(os.listdir(root)):
            path = os.path.join(root, name)
            try:
                meta = read_consumer_meta(path, stream.name)
                created = rfc3339_ns(meta.pop("Created", None))
                meta.pop("Name", None)
                config = consumerconfig.from_dict(meta)
                store = stream.store.consumer_store(name, created, consumerconfig.to_dict(config))
            except (StoreError, ValueError, msgspec.ValidationError) as exc:
                self.unrecovered[f"{stream.name} > {name}"] = str(exc)
                continue
            self._attach_consumer(stream, name, config, store, created)
