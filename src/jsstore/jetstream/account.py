"""The embedded JetStream API: streams in process, synchronous, no network.

    import jsstore
    with jsstore.open("data") as js:          # jsstore.open() keeps everything in memory
        js.add_stream(name="ORDERS", subjects=["orders.>"])
        ack = js.publish("orders.new", b"payload", headers={"Nats-Msg-Id": "o-1"})
        msg = js.get_msg("ORDERS", seq=ack.seq)

A store directory has nats-server's layout: every file stream lives in
``<dir>/jetstream/$G/streams/<name>/`` with its configuration in ``meta.inf`` (nats-server's
FileStreamInfo JSON: ``"Created"`` then the normalized stream configuration) and the
HighwayHash of that file in ``meta.sum``.  Opening the directory again finds those streams.
A file stream's store is a ``FileStore``, or what `store_factory` makes (a plug-in store,
``jsstore.store.contract.StreamStoreFactory``; ``jsstore.jetstream.stores``).
Memory streams are never written to disk, as in nats-server; in memory-only mode
(``open()``) every stream is held in memory whatever its ``storage`` says.

Failures are the API errors of ``jsstore.wire.apierrors`` that nats-server answers with, except
one: publishing to a subject no stream captures raises ``NoStreamResponseError``, where a NATS
client gets "no responders" (nats-py raises its own ``NoStreamResponseError`` there).
"""

from __future__ import annotations

import functools
import itertools
import os
import threading
import time
from typing import TYPE_CHECKING, Callable, Mapping

from jsstore._core.storage.subjects import is_routable
from jsstore.deferred import deferred, deferred_logger
from jsstore.errors import StoreClosed
from jsstore.gocompat.times import rfc3339_nano
from jsstore.jetstream import limits as account_limits
from jsstore.jetstream import plugs, recovery
from jsstore.jetstream.consumers import ConsumerRegistry
from jsstore.jetstream.info import (
    AccountInfo,
    AccountLimits,
    NoStreamResponseError,
    StoredMsg,
    StreamInfo,
    meta_info_json,
)
from jsstore.jetstream.signals import Signals
from jsstore.jetstream.stores import StreamStores
from jsstore.jetstream.timers import TimerThread
from jsstore.store.config import StoreOptions
from jsstore.store.staging import remove_stale_staging
from jsstore.stream import config as streamconfig
from jsstore.stream.config import StreamConfig
from jsstore.stream.puback import PubAck
from jsstore.wire import headers as header_block
from jsstore.wire.api import BATCH_ID
from jsstore.wire.bus import Bus, Msg
from jsstore.wire.headers import decode_headers, encode_headers
from jsstore.wire.subjecttree import SubjectTree

log = deferred_logger(__name__)
STORE_FAILED = "error creating store for stream"    # nats-server's errStreamStoreFailed

if TYPE_CHECKING:
    from jsstore.state import StreamState
    from jsstore.store.contract import StreamStoreFactory
    from jsstore.stream.stream import Stream

# A JetStream without streams (a server started on an empty store directory) needs none of
# the streams' machinery: it loads with the first stream, created or recovered.
advisories = deferred("jsstore.stream.advisories")
batches = deferred("jsstore.stream.batches")
configchecks = deferred("jsstore.stream.configchecks")
expiry = deferred("jsstore.stream.expiry")
stream_sources = deferred("jsstore.stream.sources")
stream_module = deferred("jsstore.stream.stream")
api_errors = deferred("jsstore.wire.apierrors")

ACCOUNT = "$G"                  # the global account: nats-server's directory for it
# stream features beyond the basics that this JetStream implements
FEATURES = frozenset({"counters", "batches", "schedules", "expiry", "ttl",
                      "subject_delete_markers", "republish", "direct_get", "advisories",
                      "mirrors", "sources", "snapshots", "consumers"})
_STREAM_ADVISORY = {"create": "CREATED", "modify": "UPDATED", "delete": "DELETED"}
ROUTE_CACHE_LIMIT = 1 << 16     # publish subjects remembered before the cache starts over


# The wire API handlers (jsstore.api) and the buckets (jsstore.buckets) sit above this
# layer: the package's face plugs them in (jsstore.jetstream.plugs), and request(),
# handle() and the bucket methods go through them.
use_api, use_buckets = plugs.use_api, plugs.use_buckets


def _to_buckets(name: str, doc: str) -> Callable:
    """A JetStream method that is the buckets' `name`."""
    def call(self, *args, **kwargs):
        return getattr(self.buckets(), name)(*args, **kwargs)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = doc
    return call


def _to_consumers(method: Callable) -> Callable:
    """A JetStream method that is the consumer registry's `method` (same name, signature
    and documentation)."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        return method(self.consumers, *args, **kwargs)
    return call


class JetStream:
    """An account's streams and their consumers over one store directory (or in memory).

    Beside the public API, the wire API (``jsstore.api``) and the server use a small
    internal interface: ``lock`` (the one lock everything here runs under), the stream
    look-ups and the publish named ``..._locked`` (they expect that lock held, as
    nats-server names its functions), ``consumers`` (the ``ConsumerRegistry``),
    ``advise``, ``check_open``, ``router`` and ``schedule``.
    """

    # consumer management is the registry's; these are its public entry points
    add_consumer = _to_consumers(ConsumerRegistry.add_consumer)
    update_consumer = _to_consumers(ConsumerRegistry.update_consumer)
    create_consumer = _to_consumers(ConsumerRegistry.create_consumer)
    consumer_info = _to_consumers(ConsumerRegistry.consumer_info)
    consumer_names = _to_consumers(ConsumerRegistry.consumer_names)
    consumers_info = _to_consumers(ConsumerRegistry.consumers_info)
    consumer_count = _to_consumers(ConsumerRegistry.consumer_count)
    delete_consumer = _to_consumers(ConsumerRegistry.delete_consumer)
    pause_consumer = _to_consumers(ConsumerRegistry.pause_consumer)
    unpin_consumer = _to_consumers(ConsumerRegistry.unpin_consumer)
    reset_consumer = _to_consumers(ConsumerRegistry.reset_consumer)
    pull_subscribe = _to_consumers(ConsumerRegistry.pull_subscribe)

    # key-value buckets and object stores, nats-py's calls made synchronous (jsstore.buckets)
    create_key_value = _to_buckets("create_key_value", "Create a key-value bucket (its "
                                   "stream KV_<bucket>); a KeyValueConfig or its fields.")
    key_value = _to_buckets("key_value", "The key-value bucket; BucketNotFoundError when "
                            "there is none.")
    delete_key_value = _to_buckets("delete_key_value", "Delete a key-value bucket.")
    create_object_store = _to_buckets("create_object_store", "Create an object store (its "
                                      "stream OBJ_<bucket>); an ObjectStoreConfig or its "
                                      "fields.")
    object_store = _to_buckets("object_store", "The object store; BucketNotFoundError when "
                               "there is none.")
    delete_object_store = _to_buckets("delete_object_store", "Delete an object store.")

    def __init__(self, directory: str | os.PathLike | None = None,
                 options: StoreOptions | None = None, *,
                 clock: Callable[[], int] | None = None, timers: bool | None = None,
                 account: str = ACCOUNT, limits: AccountLimits | None = None,
                 domain: str | None = None,
                 resources: account_limits.ServerResources | None = None,
                 store_factory: StreamStoreFactory | None = None):
        self.directory = None if directory is None else os.fspath(directory)
        self.options = options
        # the file streams' stores: FileStore, or store_factory's (jsstore.jetstream.stores)
        self.stores = StreamStores(self.directory, account, options, store_factory)
        self.account = account      # its streams live in <directory>/jetstream/<account>/
        self.limits = limits if limits is not None else account_limits.UNLIMITED
        # the server's limits, shared with the other accounts' JetStreams
        self.resources = resources if resources is not None else account_limits.ServerResources()
        self.resources.members.append(self)
        self._limits_bytes = account_limits.limits_bytes(self.limits, self.resources)
        # Unix ns; another clock than the wall clock stamps the stored messages too
        self.clock = clock if clock is not None else time.time_ns
        self.bus = Bus()            # what this JetStream sends out (answers, advisories, ...)
        # timed work runs by itself on the wall clock unless turned off; tick() runs it
        self._timers_wanted = clock is None if timers is None else timers
        self._timers: TimerThread | None = None   # started with the first timed stream
        self.domain = domain or None     # the JetStream domain named in answers
        self.server_name = ""       # named in advisories; a server sets its own
        self.closed = False
        self.unrecovered: dict[str, str] = {}  # stream dirs skipped on open, and why
        self._streams: dict[str, Stream] = {}
        self._routes: dict[str, Stream] = {}  # publish subject -> the stream capturing it
        self.routes_version = 0     # changes whenever a stream is added, changed or removed
        self.route_watchers: list = []  # ... and each of these is called then
        self._capture_tree: SubjectTree | None = None   # every stream's subjects (_captures)
        # the lock every stream and consumer runs under (reentrant): ``with js.lock:``;
        # methods named ``..._locked`` expect it held
        self.lock = threading.RLock()
        self._api = None  # the wire API router, made on the first request()
        self._buckets = None  # the KV and object store calls, made on the first one
        self._buckets_closed = False     # close() has begun: no buckets made any more
        self._batch_ids = itertools.count(1)   # publish_batch's batch ids
        self._sources = None  # the SourceManager, once a stream has a mirror or sources
        self._batch_registry = None     # the atomic batches being staged (_batches)
        # consumers that may deliver more gather at once, or once the read being handled
        # is done (jsstore.jetstream.signals)
        self.signals = Signals(self.lock)
        self.consumers = ConsumerRegistry(self)   # every consumer of every stream
        if self.directory is not None:
            self._recover()

    # -- opening ------------------------------------------------------------------------
    def _recover(self) -> None:
        # what a restore killed half way left beside the streams (its spooled upload, its
        # extracted snapshot) goes; a live process's is kept
        for name in remove_stale_staging(os.path.join(self.directory, "jetstream")):
            log.warning("removed %s, left by a restore that did not finish", name)
        for found in recovery.stream_directories(self.directory, self.account):
            if found.reason:
                self.unrecovered[found.name] = found.reason
                continue
            store = self.stores.reopen(found.directory,
                                       streamconfig.to_store_config(found.config))
            for damage in getattr(store, "damage", ()):
                # what recovery could not read, said where it is seen first (the stream's
                # state carries it too: STREAM.INFO's "lost", as nats-server's)
                lost = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in damage.lost_seqs)
                log.warning("stream '%s > %s': %s: %s%s", self.account, found.name,
                            damage.path, damage.problem,
                            f"; messages lost: {lost}" if lost else "")
            self._streams[found.name] = self._new_stream(found.config, store, found.created,
                                                         recovered=True)
        for stream in list(self._streams.values()):
            self._stream_changed(stream)
        for stream in list(self._streams.values()):
            self.consumers.recover_locked(stream)

    def _new_stream(self, config: StreamConfig, store, created: str, *,
                    recovered: bool = False) -> Stream:
        stream = stream_module.Stream(config, store, created, recovered=recovered,
                                      clock=self.clock, wall_clock=self.clock is time.time_ns,
                                      emit=self._emit, domain=self.domain)
        stream.on_due = self.schedule
        if self._limits_bytes:
            stream.usage_check = self._check_usage
        stream.on_plain_change = self._reroute     # (the server's plans are made again)
        return stream

    @functools.cached_property
    def consumer_limits(self):
        """The account's limits on consumers (``consumer.config.ServerLimits``), made with
        the first consumer."""
        return account_limits.consumer_limits(self.limits)

    @property
    def _batches(self) -> batches.BatchRegistry:
        """The atomic batches being staged (the registry is made on first use)."""
        registry = self._batch_registry
        if registry is None:
            registry = self._batch_registry = batches.BatchRegistry()
        return registry

    def _check_usage(self, storage: str, size: int) -> None:
        """A message of `size` bytes into a stream of `storage`: refused when the account
        would hold more there than its limit allows."""
        account_limits.check_usage(self.limits, self.resources, storage,
                                   self.bytes_used(storage), size)

    def bytes_used(self, storage: str) -> int:
        """What the account's streams of `storage` hold."""
        memory = storage == "memory"
        return sum(s.store.fast_state().bytes for s in list(self._streams.values())
                   if (s.config.storage == "memory") == memory)

    def stream_configs(self) -> list[StreamConfig]:
        return [s.config for s in list(self._streams.values())]

    @property
    def wall_clock(self) -> bool:
        """Whether the clock is the wall clock (timed work then runs by itself)."""
        return self.clock is time.time_ns

    def schedule(self, at: int) -> None:
        """Some stream or consumer has timed work at `at` (Unix ns)."""
        if self._timers is not None:
            self._timers.wake(at)

    def need_timers(self) -> None:
        """A consumer has timed work: start the timer thread (when timed work runs by
        itself) and let it look now."""
        if self._timers is None and self._timers_wanted and not self.closed:
            self._timers = TimerThread(self.tick)
        if self._timers is not None:
            self._timers.wake(self.clock())

    def _start_timers(self, stream: Stream) -> None:
        cfg = stream.config
        if self._timers is None and self._timers_wanted and not self.closed and (
                cfg.max_age > 0 or cfg.allow_msg_ttl or cfg.allow_msg_schedules
                or cfg.allow_atomic):
            self._timers = TimerThread(self.tick)
            self._timers.wake(self.clock())

    def tick(self, now: int | None = None) -> int | None:
        """Do the timed work due at `now` (default: the clock) — max_age and TTL expiry
        with subject delete markers, due schedules — and return when more is due (Unix
        ns; None: nothing is scheduled). Runs by itself with the wall clock; with a clock
        of your own, call it."""
        with self.lock:
            if self.closed:
                return None
            now = self.clock() if now is None else now
            next_due = None
            for name, batch_id in self._batches.expire(now):
                self._batches.abandoned.append(
                    batches.Abandoned(name, batch_id, batches.ABANDONED_TIMEOUT))
            self._batches_abandoned()
            batch_due = self._batches.next_expiry()
            if batch_due is not None:
                next_due = batch_due
            for stream in list(self._streams.values()):
                for due in (expiry.expire(stream, now), stream.fire_schedules(now)):
                    if due is not None and (next_due is None or due < next_due):
                        next_due = due
            due = self.consumers.tick_locked(now)
            if due is not None and (next_due is None or due < next_due):
                next_due = due
            return next_due

    def _stream_changed(self, stream: Stream) -> None:
        """A stream was added, recovered or updated: start the timers if it has timed
        work; (re)wire its mirror and sources, and it as an origin of others. Nothing is
        wired until some stream has a mirror or sources."""
        self._start_timers(stream)
        if self._sources is None:
            if stream.config.mirror is None and not stream.config.sources:
                return
            self._sources = stream_sources.SourceManager(self)
            for other in self._streams.values():
                if other is not stream:
                    self._sources.attach(other)
        self._sources.attach(stream)

    def _emit(self, subject: str, hdr: bytes | None, payload: bytes) -> None:
        self.bus.publish(Msg(subject, payload, hdr))

    def check_open(self) -> None:
        """StoreClosed once the JetStream is closed."""
        if self.closed:
            raise StoreClosed()

    def find_stream_locked(self, name: str) -> Stream | None:
        """The stream `name`, or None."""
        return self._streams.get(name)

    def lookup_stream_locked(self, name: str) -> Stream:
        """The stream `name`; StoreClosed, or JSStreamNotFoundErr when there is none."""
        self.check_open()
        stream = self._streams.get(name)
        if stream is None:
            raise api_errors.JSStreamNotFoundErr()
        return stream

    def other_stream_configs_locked(self, name: str) -> list[StreamConfig]:
        """The configurations of every stream but `name` (what a new one may not overlap)."""
        return [s.config for s in self._streams.values() if s.config.name != name]

    def _info(self, stream: Stream, state: StreamState | None = None) -> StreamInfo:
        mirror = sources = None
        if self._sources is not None:
            mirror = self._sources.mirror_info(stream.name)
            sources = self._sources.sources_info(stream.name) or None
        state = state if state is not None else stream.store.state()
        state.consumer_count = self.consumers.consumer_count(stream.name)
        return StreamInfo(config=stream.config, created=stream.created, state=state,
                          mirror=mirror, sources=sources)

    # -- streams ------------------------------------------------------------------------
    def add_stream(self, config: StreamConfig | None = None, *, pedantic: bool = False,
                   **params) -> StreamInfo:
        """Create a stream (nats-server's checks and defaults; `pedantic` refuses what they
        would correct); creating an existing stream with the same configuration answers
        its info, with another one fails."""
        cfg = streamconfig.from_call(config, params)
        with self.lock:
            self.check_open()
            others = self.other_stream_configs_locked(cfg.name)
            normalized = configchecks.check_create(
                cfg, existing_streams=others, pedantic=pedantic,
                max_bytes=account_limits.max_bytes_rule(self.limits))
            existing = self._streams.get(cfg.name)
            if existing is not None:
                if existing.config != normalized:
                    raise api_errors.JSStreamNameExistErr()
                return self._info(existing)
            account_limits.check_new_stream(self.limits, others, normalized, self.resources)
            configchecks.check_overlap(normalized, others)
            created = rfc3339_nano(time.time_ns())
            store_cfg = streamconfig.to_store_config(normalized)
            try:
                store = self.stores.create(cfg.name, normalized.storage, store_cfg,
                                           meta_info_json(normalized, created))
            except (OSError, ValueError) as exc:
                # as nats-server: the cause in the log, the client told the store failed
                # (a name the file system cannot take, such as one with a NUL, a full or
                # read-only disk)
                log.warning("stream create failed for '%s > %s': %s", self.account,
                            cfg.name, exc)
                raise api_errors.JSStreamCreateErrF(err=STORE_FAILED) from exc
            stream = self._new_stream(normalized, store, created)
            self._streams[cfg.name] = stream
            self._reroute()
            self._stream_changed(stream)
            self._advise_stream(stream.name, "create")
            return self._info(stream)

    def adopt_stream(self, config: StreamConfig, store, created: str) -> StreamInfo:
        """Make an already filled store (a restored snapshot) one of the streams; announced
        like a created stream."""
        with self.lock:
            self.check_open()
            if config.name in self._streams:
                raise api_errors.JSStreamNameExistErr()
            stream = self._new_stream(config, store, created)
            self._streams[config.name] = stream
            self._reroute()
            self._stream_changed(stream)
            self.consumers.recover_locked(stream)   # the snapshot's consumers (obs/)
            self._advise_stream(stream.name, "create")
            return self._info(stream)

    def update_stream(self, config: StreamConfig | None = None, *, pedantic: bool = False,
                      **params) -> StreamInfo:
        """Change a stream's configuration (nats-server's update checks: the new
        configuration's own, then whether it may replace the stream's)."""
        cfg = streamconfig.from_call(config, params)
        with self.lock:
            others = self.other_stream_configs_locked(cfg.name)
            rule = account_limits.max_bytes_rule(self.limits)
            configchecks.check_config(cfg, existing_streams=others, pedantic=pedantic,
                                      max_bytes=rule)
            stream = self.lookup_stream_locked(cfg.name)
            updated = configchecks.check_update(
                stream.config, cfg, existing_streams=others, pedantic=pedantic,
                consumers=self.consumers.configs_locked(stream.name), max_bytes=rule)
            account_limits.check_update(self.limits, others, stream.config, updated,
                                        self.resources)
            self.stores.update(stream.store, stream.name, stream.config.storage,
                               streamconfig.to_store_config(updated),
                               meta_info_json(updated, stream.created))
            stream.set_config(updated)
            self._reroute()
            self._stream_changed(stream)
            self._advise_stream(stream.name, "modify")
            return self._info(stream)

    def delete_stream(self, name: str) -> bool:
        """Remove a stream and its messages (and its directory)."""
        with self.lock:
            stream = self.lookup_stream_locked(name)
            del self._streams[name]
            self._reroute()
            if self._sources is not None:
                self._sources.detach(name)
            self._batches.discard(name)
            self.consumers.stream_deleted_locked(name)
            self.stores.delete(stream.store, name, stream.config.storage)
            self._advise_stream(name, "delete")
            return True

    def stream_info(self, name: str, *, subjects_filter: str | None = None,
                    deleted_details: bool = False) -> StreamInfo:
        """Configuration and state; the deleted sequences only with deleted_details, the
        per-subject counts only for a subjects_filter."""
        with self.lock:
            stream = self.lookup_stream_locked(name)
            state = stream.store.state()
            if not deleted_details:
                state.deleted = None
            state.subjects = stream.store.subjects_totals(subjects_filter) if subjects_filter else None
            return self._info(stream, state)

    def has_streams(self) -> bool:
        """Whether the account has a stream (a publish outside ``$JS.`` may be captured)."""
        return bool(self._streams)

    def stream_names(self) -> list[str]:
        with self.lock:
            self.check_open()
            return sorted(self._streams)

    def streams_info(self) -> list[StreamInfo]:
        """Every stream's info, by name."""
        with self.lock:
            return [self.stream_info(name) for name in self.stream_names()]

    def account_info(self) -> AccountInfo:
        with self.lock:
            self.check_open()
            memory = storage = consumers = 0
            for stream in self._streams.values():
                state = stream.store.fast_state()
                consumers += self.consumers.consumer_count(stream.name)
                if stream.config.storage == "memory":
                    memory += state.bytes
                else:
                    storage += state.bytes
            reserved_memory, reserved_storage = account_limits.reserved(
                s.config for s in self._streams.values())
            return AccountInfo(memory=memory, storage=storage, reserved_memory=reserved_memory,
                               reserved_storage=reserved_storage, streams=len(self._streams),
                               consumers=consumers, limits=self.limits)

    # -- messages -----------------------------------------------------------------------
    def capturing_stream_locked(self, subject: str) -> Stream | None:
        """The stream a publish on `subject` goes to, or None (also for a subject that
        can not be published to)."""
        try:
            return self._route(subject)
        except (NoStreamResponseError, ValueError):
            return None

    def stream_for_subject_locked(self, subject: str) -> Stream | None:
        """The stream capturing `subject`, else the first whose subjects overlap it (a
        filter with wildcards), or None."""
        found = self.capturing_stream_locked(subject) if subject else None
        if found is None and subject:
            found = self._first(self._captures().overlapping(subject))
        return found

    def captures_any_under_locked(self, head: str) -> bool:
        """Whether some stream captures a subject ``<head>.<token>``."""
        return self._captures().takes_any_under(head)

    def _captures(self) -> SubjectTree:
        """Every stream's subjects, each to its stream (made again after _reroute)."""
        tree = self._capture_tree
        if tree is None:
            tree = self._capture_tree = SubjectTree()
            for stream in self._streams.values():
                for subject in stream.config.subjects:
                    tree.insert(subject, stream)
        return tree

    def _first(self, streams) -> Stream | None:
        """Of `streams`, the one created first (stream subjects do not overlap, so there is
        one at most, but for a store whose files say otherwise)."""
        found = list(dict.fromkeys(streams))
        if len(found) <= 1:
            return found[0] if found else None
        order = {name: i for i, name in enumerate(self._streams)}
        return min(found, key=lambda stream: order.get(stream.name, len(order)))

    def _reroute(self) -> None:
        """Streams were added, changed or removed: publishes are routed afresh."""
        self._routes.clear()
        self._capture_tree = None
        self.routes_version += 1
        for watcher in self.route_watchers:
            watcher()

    def _route(self, subject: str) -> Stream:
        stream = self._routes.get(subject)
        if stream is not None:
            return stream
        self.check_open()
        if not is_routable(subject):
            raise ValueError(f"invalid publish subject {subject!r}")
        # as nats-server's sublist matches a publish against a stream's subscriptions (in
        # a tree of their tokens, whatever the number of subjects): a `*` or `>` token of
        # the subject is an ordinary token that only a wildcard of the stream's subjects
        # takes ("kv.a.*" goes to a stream of "kv.>" or "kv.a.*", not to one of "kv.a.b")
        candidate = self._first(self._captures().match(subject))
        if candidate is None:
            raise NoStreamResponseError(f"no stream captures subject {subject!r}")
        if len(self._routes) >= ROUTE_CACHE_LIMIT:
            self._routes.clear()
        self._routes[subject] = candidate
        return candidate

    def publish(self, subject: str, payload: bytes = b"", *,
                headers: Mapping[str, str | list[str]] | bytes | None = None) -> PubAck:
        """Store a message in the stream whose subjects capture `subject`."""
        hdr = encode_headers(headers)
        with self.lock:
            return self.publish_locked(self._route(subject), subject, hdr, payload)

    def publish_locked(self, stream: Stream, subject: str, hdr: bytes | None,
                       payload: bytes) -> PubAck | None:
        """One publish into `stream`; a message of an atomic batch is staged (None) until
        its commit, which stores the whole batch."""
        if hdr and header_block.get(hdr, BATCH_ID) is not None:
            now = self.clock()
            staged = self._batches.stage(stream.name, hdr, subject, payload, now,
                                         bool(stream.config.allow_atomic))
            self._batches_abandoned()
            if isinstance(staged, batches.Staged):
                self.schedule(now + self._batches.limits.timeout_ns)
                return None
            return stream.commit_batch(staged.batch_id, staged.messages, now)
        return stream.publish(subject, hdr, payload)

    def publish_batch(self, messages) -> PubAck:
        """Store messages atomically, all or none: `messages` are (subject, payload) or
        (subject, payload, headers) tuples, all captured by one stream with allow_atomic.
        The PubAck has the last sequence, the batch id and the count."""
        items = [tuple(m) + (None,) * (3 - len(m)) for m in messages]
        if not items:
            raise api_errors.JSAtomicPublishIncompleteBatchErr()
        batch_id = f"embedded-{next(self._batch_ids)}"
        with self.lock:
            stream = self._route(items[0][0])
            staged = []
            for index, (subject, payload, headers) in enumerate(items, 1):
                if self._route(subject) is not stream:
                    raise api_errors.JSAtomicPublishInvalidBatchIDErr()
                hdr = encode_headers(headers)
                hdr = header_block.set_header(hdr, batches.BATCH_ID, batch_id)
                hdr = header_block.set_header(hdr, batches.BATCH_SEQ, str(index))
                if index == len(items):
                    hdr = header_block.set_header(hdr, batches.BATCH_COMMIT, "1")
                staged.append((subject, hdr, payload or b""))
            ack = None
            for subject, hdr, payload in staged:
                ack = self.publish_locked(stream, subject, hdr, payload)
            return ack

    def _batches_abandoned(self) -> None:
        """Announce the batches given up on."""
        for gone in self._batches.take_abandoned():
            if self.bus.has_interest(advisories.ADVISORY_PREFIX + ".STREAM.BATCH_ABANDONED." + gone.stream):
                self.advise(advisories.batch_abandoned(gone.stream, gone.batch_id, gone.reason,
                                                        account=self.account, now=self.clock()))

    def advise(self, advisory: tuple[str, bytes]) -> None:
        """Send an advisory (a builder's (subject, JSON)) on the bus."""
        subject, data = advisory
        self.bus.publish(Msg(subject, data))

    def _advise_stream(self, name: str, action: str) -> None:
        subject = advisories.ADVISORY_PREFIX + ".STREAM." + _STREAM_ADVISORY[action] + "." + name
        if self.bus.has_interest(subject):
            self.advise(advisories.stream_action(name, action, now=self.clock()))

    def get_msg(self, name: str, seq: int = 0, *, last_by_subject: str | None = None,
                next_by_subject: str | None = None) -> StoredMsg:
        """The message at seq; the last on a subject; or the first at or after seq
        (default 1) matching next_by_subject (the STREAM.MSG.GET request's forms)."""
        if (seq > 0 and last_by_subject) or (seq <= 0 and not last_by_subject
                                              and not next_by_subject) \
                or (last_by_subject and next_by_subject):
            raise api_errors.JSBadRequestErr()
        with self.lock:
            msg = self.lookup_stream_locked(name).get_msg(seq, last_by_subject, next_by_subject)
        return StoredMsg(subject=msg.subject, seq=msg.seq, data=bytes(msg.msg),
                         headers=decode_headers(msg.hdr), time=msg.ts,
                         hdr=bytes(msg.hdr) if msg.hdr else None)

    def delete_msg(self, name: str, seq: int, *, no_erase: bool = False) -> bool:
        """Remove one message; erased (overwritten) unless no_erase."""
        with self.lock:
            stream = self.lookup_stream_locked(name)
            subject = stream.delete_msg(seq, no_erase=no_erase,
                                        want_subject=bool(self.consumers.consumer_count(name)))
            if subject is not None:
                self.consumers.message_removed_locked(stream, seq, subject)
            return True

    def purge_stream(self, name: str, *, filter: str | None = None, seq: int = 0,
                     keep: int = 0) -> int:
        """Remove messages: all; or those matching filter, below seq, or all but the last
        `keep` (per subject with a filter). Returns how many were removed."""
        if seq > 0 and keep > 0:
            raise api_errors.JSBadRequestErr()
        with self.lock:
            stream = self.lookup_stream_locked(name)
            purged = stream.purge(filter or "", seq, keep)
            self.consumers.stream_purged_locked(stream, filter or "")
            return purged

    # -- messages in, answers out ---------------------------------------------------------
    def router(self):
        """The wire API router over this JetStream (``jsstore.api.router.Router``, plugged
        in by ``use_api``)."""
        if self._api is None:
            if plugs.api_factory is None:
                raise RuntimeError("no wire API: jsstore.api is plugged in by use_api "
                                   "(importing jsstore does it)")
            with self.lock:
                if self._api is None:
                    self._api = plugs.api_factory(self)
        return self._api

    def handle(self, msg: Msg) -> bool:
        """Take a message sent into JetStream — an API request, a publish to a subject a
        stream captures, a snapshot chunk — and send the answers to ``msg.reply`` on the bus.
        False when nothing serves the subject (over NATS: no responders)."""
        return self.router().handle(msg)

    def request_msgs(self, subject: str, payload: bytes = b"",
                     headers: Mapping[str, str | list[str]] | bytes | None = None) -> list[Msg]:
        """Every answer to a message sent into JetStream (see ``handle``), in order; empty
        when nothing serves the subject."""
        return self.router().request_msgs(subject, payload, headers)

    def request(self, subject: str, payload: bytes = b"",
                headers: Mapping[str, str | list[str]] | bytes | None = None) -> bytes | None:
        """The first answer's payload: for ``$JS.API.*`` the JSON nats-server would send, for
        a stream subject the PubAck JSON. None when nothing answers (nats-server leaves an
        unknown API subject unanswered; no stream captures the subject)."""
        answers = self.request_msgs(subject, payload, headers)
        return answers[0].data if answers else None

    def buckets(self):
        """What the key-value and object store calls go through (``jsstore.buckets.Buckets``,
        plugged in by ``use_buckets``), made on the first call."""
        with self.lock:
            if self._buckets_closed:
                raise StoreClosed()
            if self._buckets is None:
                if plugs.buckets_factory is None:
                    raise RuntimeError("no buckets: jsstore.buckets is plugged in by "
                                       "use_buckets (importing jsstore does it)")
                self._buckets = plugs.buckets_factory(self)
            return self._buckets

    # -- lifecycle ----------------------------------------------------------------------
    def close(self) -> None:
        """Stop every stream (file streams write their state for a fast reopen); the
        buckets' thread first, outside the lock (its work needs it)."""
        with self.lock:
            self._buckets_closed = True
            buckets, self._buckets = self._buckets, None
        if buckets is not None:
            buckets.close()
        with self.lock:
            if self.closed:
                return
            self.closed = True
            self._reroute()
            if self in self.resources.members:
                self.resources.members.remove(self)
            timers, self._timers = self._timers, None
        if timers is not None:
            timers.stop()           # outside the lock: a tick in progress needs it
        if self._api is not None:
            self._api.close()       # pending snapshot/restore transfers
        with self.lock:
            self.consumers.stop_locked()
            for stream in self._streams.values():
                stream.store.stop()

    def __enter__(self) -> JetStream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open(directory: str | os.PathLike | None = None,
         options: StoreOptions | None = None, *,
         clock: Callable[[], int] | None = None, timers: bool | None = None,
         account: str = ACCOUNT, limits: AccountLimits | None = None,
         domain: str | None = None,
         resources: account_limits.ServerResources | None = None,
         store_factory: StreamStoreFactory | None = None) -> JetStream:
    """The streams of a store directory (created when missing); None keeps them in memory.
    `clock` (Unix ns) replaces the wall clock for everything timed: stamps, windows,
    expiry. Timed work (expiry, schedules) runs on a thread of its own with the wall clock,
    unless `timers` is False; with a clock of your own, call ``js.tick()``.  `account`
    names the account whose streams these are (``<directory>/jetstream/<account>/``),
    `limits` its JetStream limits, `domain` the JetStream domain its answers name,
    `resources` the server's limits it shares with other accounts' JetStreams.
    `store_factory` makes the store of every file-storage stream instead of FileStore
    (``jsstore.store.contract.StreamStoreFactory``: ``factory(directory, config, options)``;
    memory streams keep MemStore); it needs a directory."""
    return JetStream(directory, options, clock=clock, timers=timers, account=account,
                     limits=limits, domain=domain, resources=resources,
                     store_factory=store_factory)
