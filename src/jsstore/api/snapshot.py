"""STREAM.SNAPSHOT and STREAM.RESTORE over the wire API, with nats-server's chunk protocol.

Snapshot (``$JS.API.STREAM.SNAPSHOT.<stream>``, body ``{"deliver_subject": ..., "no_consumers",
"chunk_size", "window_size", "jsck"}``): the answer is ``{"type", "config", "state"}``; then
the snapshot (the store's S2-framed tar) goes to ``deliver_subject`` on ``js.bus`` in chunks
of ``chunk_size`` bytes (default 128 KiB, clamped to 1 KiB..1 MiB).  Each full chunk has the
reply subject ``$JS.SNAPSHOT.ACK.<stream>.<id>.<chunk size>.<index>``; at most
``window_size // chunk_size`` of them (window default 8 MiB, clamped to 1 KiB..32 MiB, never
below one chunk) wait for an ack at a time.  The last, shorter chunk has no reply.  The end
is an empty message: with the header ``NATS/1.0 204`` once flow-controlled chunks were sent
(after their acks arrived), without one otherwise.  No ack for ``ack_timeout`` seconds ends
the transfer with ``NATS/1.0 408 No Flow Response``.  SNAPSHOT_CREATE / SNAPSHOT_COMPLETE
advisories frame the transfer.

Restore (``$JS.API.STREAM.RESTORE.<stream>``, body ``{"config": ..., "state": ...}``): the
answer is ``{"type", "deliver_subject": "$JS.SNAPSHOT.RESTORE.<stream>.<id>"}``; every chunk
sent there (with a reply subject) is acked with an empty message; the empty message that
ends it restores the stream under the request's configuration and answers with the stream
info (a stream_create_response) or ``restore failed: ...``.  A restore that receives nothing
for ``idle_timeout`` seconds is dropped.

Embedded differences: memory streams are snapshotted by writing their messages to a
temporary file store first (nats-server 2.15 has its own archive for them); a snapshot
restored into a memory stream has its messages copied into the new store and loses its
consumers; ``jsck`` loads every message before the snapshot.  A restore also takes
nats-server 2.15's own archive (``NATSARC1``: jsstore.api.archiverestore).  A plug-in store (a
JetStream's store factory) is snapshotted like a memory stream, without its consumers, and
a restore into a file stream of such a JetStream goes through the factory the same way
(messages copied, consumers not restored).  As nats-server does with a tar
snapshot, the stream's name in the snapshot must be the restored stream's name.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from typing import Callable

import msgspec

from jsstore._core.storage.subjects import is_literal, is_valid_subject
from jsstore.api import requests, schemas
from jsstore.api.archiverestore import restore_archive
from jsstore.api.restoreintake import RestoreIntake
from jsstore.api.streams import go_time, is_empty_request, state_body, wire_config
from jsstore.errors import StoreError
from jsstore.gocompat import json as gojson
from jsstore.gocompat.times import rfc3339_nano
from jsstore.jetstream import limits as account_limits
from jsstore.jetstream.info import meta_info_json
from jsstore.store.archive import MAGIC, is_archive
from jsstore.store.contract import StreamState
from jsstore.store.filestore import FileStore
from jsstore.store.layout import META_FILE, META_SUM_FILE, stream_dir
from jsstore.store.snapshot import extract_tar
from jsstore.store.staging import staging_prefix
from jsstore.stream import advisories, configchecks
from jsstore.stream import config as streamconfig
from jsstore.stream.config import StreamConfig
from jsstore.wire import apierrors as api_errors
from jsstore.wire.bus import Msg

SNAPSHOT_TYPE = schemas.TYPE_PREFIX + "stream_snapshot_response"
RESTORE_TYPE = schemas.TYPE_PREFIX + "stream_restore_response"
SNAPSHOT_PREFIX = schemas.API_PREFIX + "STREAM.SNAPSHOT."
RESTORE_API_PREFIX = schemas.API_PREFIX + "STREAM.RESTORE."
ACK_PREFIX = "$JS.SNAPSHOT.ACK."
RESTORE_PREFIX = "$JS.SNAPSHOT.RESTORE."
DEFAULT_CHUNK_SIZE, MIN_CHUNK_SIZE, MAX_CHUNK_SIZE = 128 * 1024, 1024, 1024 * 1024
DEFAULT_WINDOW, MIN_WINDOW, MAX_WINDOW = 8 * 1024 * 1024, 1024, 32 * 1024 * 1024
END_HEADER = b"NATS/1.0 204\r\n\r\n"
NO_FLOW_HEADER = b"NATS/1.0 408 No Flow Response\r\n\r\n"
NO_FLOW_ERROR = "no flow response"
# the account's limits, answered as they are (nats-server's RestoreStream returns them)
LIMIT_ERRORS = (api_errors.JSStorageResourcesExceededErr,
                api_errors.JSMemoryResourcesExceededErr)


class SnapshotRequest(msgspec.Struct, forbid_unknown_fields=True):
    deliver_subject: str = ""
    no_consumers: bool = False     # leave the consumers out
    chunk_size: int = 0
    window_size: int = 0           # bytes of chunks awaiting acks
    jsck: bool = False             # check every message first


class RestoreRequest(msgspec.Struct):
    config: StreamConfig | None = None
    state: dict | None = None      # the snapshot's state (informative; not checked)


class SnapshotResponse(msgspec.Struct):
    type: str
    config: StreamConfig
    state: schemas.StreamStateBody


class RestoreResponse(msgspec.Struct):
    type: str
    deliver_subject: str


class RestoreErrorResponse(msgspec.Struct):
    type: str
    error: dict
    deliver_subject: str = ""      # nats-server writes it, empty, with an error


def clamp_flow(chunk_size: int, window_size: int) -> tuple[int, int]:
    """nats-server's chunk size and number of chunks in flight for a request."""
    chunk = min(max(MIN_CHUNK_SIZE, chunk_size or DEFAULT_CHUNK_SIZE), MAX_CHUNK_SIZE)
    window = min(max(MIN_WINDOW, window_size or DEFAULT_WINDOW), MAX_WINDOW)
    window = max(window, chunk)
    return chunk, window // chunk



# -- the data ---------------------------------------------------------------------------
def _check_messages(store) -> None:
    """jsck: load every message once; a damaged one fails the snapshot."""
    state = store.fast_state()
    seq, seen = state.first_seq, 0
    while seen < state.messages:
        try:
            _, found = store.load_next_msg(">", seq)
        except (StoreError, ValueError) as exc:
            raise api_errors.JSStreamSnapshotErrF(err=f"message check failed: {exc}") from exc
        seen += 1
        seq = found + 1


def _copy_messages(source, target) -> None:
    """Every message of `source` into the empty `target` under the same sequence and time;
    the gaps (deleted messages) become skipped sequences."""
    last = source.fast_state().last_seq
    seq = 1
    while seq <= last:
        try:
            msg, found = source.load_next_msg(">", seq)
        except (StoreError, ValueError):
            break
        if found > last:
            break
        gap = found - (target.last_seq + 1)
        if gap > 0:
            target.skip_msgs(target.last_seq + 1, gap)
        target.store_raw_msg(msg.subject, msg.hdr, msg.msg, found, msg.ts)
        seq = found + 1
    if target.last_seq < last:
        target.skip_msgs(target.last_seq + 1, last - target.last_seq)


def snapshot_bytes(stream, include_consumers: bool, check_msgs: bool) -> tuple[StreamState, bytes]:
    """The stream's state and its whole snapshot (taken under the JetStream lock, so the
    two agree).  A memory stream is written to a temporary file store first."""
    store = stream.store
    if check_msgs:
        _check_messages(store)
    state = store.state()
    if isinstance(store, FileStore):
        return state, b"".join(store.snapshot(include_consumers))
    staging = tempfile.mkdtemp(prefix="jsstore-snapshot-")
    try:
        copy = FileStore(os.path.join(staging, stream.config.name),
                         streamconfig.to_store_config(stream.config),
                         meta=meta_info_json(stream.config, stream.created))
        try:
            _copy_messages(store, copy)
            data = b"".join(copy.snapshot(False))
        finally:
            copy.stop()
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return state, data


def adopt_stream(js, config: StreamConfig, store, created: str) -> None:
    """Make a restored store one of js's streams, and say so (STREAM.CREATED)."""
    js.adopt_stream(config, store, created)


def restore_stream(js, config: StreamConfig, plain_path: str):
    """Create the stream `config` names from a snapshot's plain (decoded) bytes, in the
    file `plain_path` (a RestoreIntake's spool); its info.  The request's
    configuration replaces the one in the snapshot, as in nats-server, but the names must
    agree.  A file stream takes the snapshot's files (consumers included); a memory stream,
    or a file stream of a JetStream with a store factory, gets a copy of the messages."""
    name = config.name
    with js.lock:
        js.check_open()
        if js.find_stream_locked(name) is not None:
            raise api_errors.JSStreamNameExistRestoreFailedErr()
        normalized = configchecks.validate(
            config, existing_streams=js.other_stream_configs_locked(name))
    to_file = js.directory is not None and normalized.storage == "file"
    parent = os.path.join(js.directory, "jetstream") if js.directory is not None else None
    if parent is not None:
        os.makedirs(parent, exist_ok=True)
    with open(plain_path, "rb") as plain:
        if is_archive(plain.read(len(MAGIC))):  # nats-server 2.15's archive: stored straight in
            plain.seek(0)
            created = rfc3339_nano(js.clock() if callable(getattr(js, "clock", None))
                                   else time.time_ns())
            restore_archive(js, normalized, plain.read(), created, adopt_stream)
            return js.stream_info(name)
    staging = tempfile.mkdtemp(prefix=staging_prefix(), dir=parent)
    store = None
    try:
        source_dir = os.path.join(staging, "stream")
        with open(plain_path, "rb") as plain:
            extract_tar(plain, source_dir)
        with open(os.path.join(source_dir, META_FILE), "rb") as f:
            original = streamconfig.normalize(streamconfig.decode(f.read()))
        if original.name != name:       # nats-server's check for a tar snapshot
            raise ValueError("stream names do not match")
        created = rfc3339_nano(js.clock() if callable(getattr(js, "clock", None))
                               else time.time_ns())
        store_cfg = streamconfig.to_store_config(normalized)
        meta = meta_info_json(normalized, created)
        target = stream_dir(js.directory, name, js.account) if to_file else None
        if target is not None and os.path.exists(target):
            raise api_errors.JSStreamNameExistRestoreFailedErr()
        if to_file and js.stores.factory is None:
            for fname in (META_FILE, META_SUM_FILE):
                os.remove(os.path.join(source_dir, fname))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.rename(source_dir, target)
            store = FileStore(target, store_cfg, js.options, meta=meta)
        else:
            # a memory stream, or a plug-in store (made by the JetStream's store factory):
            # the messages are copied in, the snapshot's consumers are not
            source = FileStore(source_dir, streamconfig.to_store_config(original))
            try:
                store = js.stores.create(name, normalized.storage, store_cfg, meta)
                _copy_messages(source, store)
            finally:
                source.stop()
        adopt_stream(js, normalized, store, created)
    except BaseException:
        if store is not None:
            js.stores.delete(store, name, normalized.storage)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return js.stream_info(name)


class _Outgoing:
    """One snapshot being sent: its bytes, position and the chunks awaiting acks."""
    __slots__ = ("api", "stream", "deliver", "ack_subject", "data", "chunk_size",
                 "max_inflight", "offset", "index", "unacked", "flow_controlled",
                 "pumping", "done", "timer", "start")

    def __init__(self, api: SnapshotApi, stream: str, deliver: str, data: bytes,
                 chunk_size: int, max_inflight: int):
        self.api = api
        self.stream = stream                # the stream's name
        self.deliver = deliver              # where the chunks go
        self.ack_subject = f"{ACK_PREFIX}{stream}.{advisories.next_id()}"
        self.data = data                    # the whole snapshot
        self.chunk_size = chunk_size
        self.max_inflight = max_inflight    # chunks that may await an ack at once
        self.offset = 0                     # bytes of data sent
        self.index = 0                      # flow-controlled chunks sent (their numbering)
        self.unacked: set[int] = set()      # indexes of the chunks awaiting an ack
        self.flow_controlled = False        # whether any chunk asked for an ack
        self.pumping = False                # re-entrancy guard of pump()
        self.done = False
        self.timer: threading.Timer | None = None   # ack timeout while waiting
        self.start = time.time_ns()

    def pump(self) -> None:
        """Send what the window allows; an ack arriving while this runs (a subscriber that
        acks from its callback) only updates the counts and the loop here goes on."""
        if self.pumping or self.done:
            return
        self.pumping = True
        try:
            bus, data, size = self.api.js.bus, self.data, self.chunk_size
            while not self.done:
                remaining = len(data) - self.offset
                if remaining <= 0:
                    if self.unacked:
                        self._arm()
                        return
                    self.finish()
                    return
                if remaining < size:        # the short last chunk needs no ack
                    bus.publish(Msg(self.deliver, data[self.offset:]))
                    self.offset = len(data)
                    continue
                if len(self.unacked) >= self.max_inflight:
                    self._arm()
                    return
                self.index += 1
                self.unacked.add(self.index)
                self.flow_controlled = True
                chunk = data[self.offset:self.offset + size]
                self.offset += size
                bus.publish(Msg(self.deliver, chunk,
                                reply=f"{self.ack_subject}.{size}.{self.index}"))
        finally:
            self.pumping = False

    def ack(self, subject: str) -> None:
        """An ack on <ack subject>.<size>.<index>: that chunk is no longer in flight."""
        try:
            index = int(subject.rsplit(".", 1)[1])
        except (IndexError, ValueError):
            return
        if index in self.unacked:
            self.unacked.discard(index)
            self._disarm()
            self.pump()

    def _arm(self) -> None:
        self._disarm()
        timer = threading.Timer(self.api.ack_timeout, self._expired)
        timer.daemon = True
        self.timer = timer
        timer.start()

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _expired(self) -> None:
        with self.api.js.lock:
            if not self.done and self.timer is not None:
                self.timer = None
                self.finish(NO_FLOW_ERROR)

    def finish(self, error: str = "") -> None:
        """The end-of-snapshot message, then the SNAPSHOT_COMPLETE advisory."""
        self.done = True
        self._disarm()
        self.api._sending.pop(self.ack_subject, None)
        if error:
            header = NO_FLOW_HEADER
        else:
            header = END_HEADER if self.flow_controlled else None
        self.api.js.bus.publish(Msg(self.deliver, b"", header))
        self.api._advise(advisories.snapshot_complete(
            self.stream, self.start, time.time_ns(), error=error, domain=self.api.domain))


class _Incoming:
    """One restore being received."""
    __slots__ = ("config", "subject", "intake", "start", "timer")

    def __init__(self, config: StreamConfig, subject: str, intake: RestoreIntake):
        self.config = config                # the configuration to restore under
        self.subject = subject              # where the chunks arrive
        self.intake = intake                # the upload so far, spooled and checked
        self.start = time.time_ns()
        self.timer: threading.Timer | None = None  # inactivity timeout


class SnapshotApi:
    """Snapshot and restore requests of one embedded JetStream, and their chunk traffic."""

    ack_timeout = 5.0       # seconds a snapshot waits for an ack before giving up
    idle_timeout = 5.0      # seconds a restore waits for its next chunk

    def __init__(self, js):
        self.js = js                                   # the embedded JetStream
        self._sending: dict[str, _Outgoing] = {}       # ack subject -> snapshot in flight
        self._receiving: dict[str, _Incoming] = {}     # deliver subject -> restore

    @property
    def domain(self) -> str:
        return getattr(self.js, "domain", None) or ""

    def _advise(self, advisory: tuple[str, bytes]) -> None:
        subject, data = advisory
        self.js.bus.publish(Msg(subject, data))

    @staticmethod
    def error_answer(response_type: str, exc: api_errors.ApiError) -> bytes:
        if response_type == RESTORE_TYPE:
            return gojson.encode(RestoreErrorResponse(type=RESTORE_TYPE, error=exc.to_dict()))
        return gojson.encode(schemas.ErrorResponse(type=response_type, error=exc.to_dict()))

    # -- snapshot -----------------------------------------------------------------------
    def snapshot(self, name: str, payload: bytes, reply: str | None,
                 send: Callable[[bytes | None, bytes], None] | None = None) -> bytes | None:
        """Answer a snapshot request.  An error is returned (for the caller to send).  A
        success must reach the requester before the first chunk, so it is delivered here
        and None returned: through `send(header, data)` when given, else published to
        `reply` on the bus."""
        js = self.js
        with js.lock:
            try:
                if is_empty_request(payload):
                    raise api_errors.JSBadRequestErr()
                stream = js.lookup_stream_locked(name)
                request = requests.decode(payload, requests.SNAPSHOT, SnapshotRequest)
                deliver = request.deliver_subject
                if not deliver or not is_valid_subject(deliver) or not is_literal(deliver):
                    raise api_errors.JSSnapshotDeliverSubjectInvalidErr()
                try:
                    state, data = snapshot_bytes(stream, not request.no_consumers,
                                                 request.jsck)
                except api_errors.ApiError:
                    raise
                except Exception as exc:
                    raise api_errors.JSStreamSnapshotErrF(err=exc) from exc
            except api_errors.ApiError as exc:
                return self.error_answer(SNAPSHOT_TYPE, exc)
            body = state_body(state, details=False)
            answer = gojson.encode(SnapshotResponse(type=SNAPSHOT_TYPE, config=wire_config(stream.config),
                                                state=body))
            if send is not None:
                send(None, answer)
            elif reply:
                js.bus.publish(Msg(reply, answer))
            self._advise(advisories.snapshot_create(name, body, domain=self.domain))
            chunk_size, max_inflight = clamp_flow(request.chunk_size, request.window_size)
            transfer = _Outgoing(self, name, deliver, data, chunk_size, max_inflight)
            self._sending[transfer.ack_subject] = transfer
            transfer.pump()
            return None

    # -- restore ------------------------------------------------------------------------
    def restore(self, name: str, payload: bytes) -> bytes:
        """Answer a restore request: where to send the chunks, or the error."""
        js = self.js
        with js.lock:
            try:
                if is_empty_request(payload):
                    raise api_errors.JSBadRequestErr()
                request = requests.decode(payload, requests.RESTORE, RestoreRequest)
                config = request.config or StreamConfig(name=name)
                if not config.name:
                    config = msgspec.structs.replace(config, name=name)
                if config.name != name:
                    raise api_errors.JSStreamMismatchErr()
                # as nats-server: path separators, then the configuration's own checks
                # (checkStreamCfg), before anything is looked up
                if "/" in name or "\\" in name:
                    raise api_errors.JSStreamNameContainsPathSeparatorsErr()
                others = js.other_stream_configs_locked(config.name)
                config = configchecks.check_config(config, existing_streams=others)
                # as nats-server (jsNonClusteredStreamLimitsCheck): the account's stream
                # count and the bytes the stream reserves, before any chunk is taken
                account_limits.check_new_stream(js.limits, others, config, js.resources)
                js.check_open()
                if js.find_stream_locked(name) is not None or any(t.config.name == name
                                              for t in self._receiving.values()):
                    raise api_errors.JSStreamNameExistRestoreFailedErr()
            except api_errors.ApiError as exc:
                return self.error_answer(RESTORE_TYPE, exc)
            subject = f"{RESTORE_PREFIX}{name}.{advisories.next_id()}"
            incoming = _Incoming(config, subject, RestoreIntake(
                self._spool_directory(), self._bytes_check(config)))
            self._receiving[subject] = incoming
            self._advise(advisories.restore_create(name, domain=self.domain))
            self._watch(incoming)
            return gojson.encode(RestoreResponse(type=RESTORE_TYPE, deliver_subject=subject))

    def _spool_directory(self) -> str | None:
        """Where uploads are spooled: beside the streams (the system's temp directory for
        a JetStream without a directory)."""
        if self.js.directory is None:
            return None
        parent = os.path.join(self.js.directory, "jetstream")
        os.makedirs(parent, exist_ok=True)
        return parent

    def _bytes_check(self, config: StreamConfig) -> Callable[[int], None]:
        """What an upload's members may add up to: nats-server's checkAllLimits with the
        bytes so far on top of the stream's reservation (10047 past the account's or the
        server's storage). Called with the JetStream's lock held."""
        js = self.js

        def check(members_bytes: int) -> None:
            account_limits.check_reservation(
                js.limits, js.other_stream_configs_locked(config.name),
                max(config.max_bytes, 1) + members_bytes, config.storage, js.resources)
        return check

    def _watch(self, incoming: _Incoming) -> None:
        if incoming.timer is not None:
            incoming.timer.cancel()
        timer = threading.Timer(self.idle_timeout, self._stalled, (incoming,))
        timer.daemon = True
        incoming.timer = timer
        timer.start()

    def _stalled(self, incoming: _Incoming) -> None:
        with self.js.lock:
            if self._receiving.get(incoming.subject) is incoming:
                del self._receiving[incoming.subject]
                incoming.intake.close()

    def _chunk(self, incoming: _Incoming, msg: Msg, respond) -> None:
        if not msg.reply:       # nothing to answer to: nats-server drops the restore
            self._complete(incoming, None, "requires reply subject for each chunk")
            return
        if not msg.data:
            self._complete(incoming, respond, "")
            return
        try:
            incoming.intake.feed(msg.data)
        except Exception:       # (kept by the intake: the restore's answer at the end)
            pass
        self._watch(incoming)
        respond(b"")

    def _complete(self, incoming: _Incoming, respond, failure: str) -> None:
        self._receiving.pop(incoming.subject, None)
        if incoming.timer is not None:
            incoming.timer.cancel()
        name = incoming.config.name
        error = None
        info = None
        if failure:
            error = api_errors.JSStreamRestoreErrF(
                err=f"restore for stream '{self.js.account} > {name}' {failure}")
        elif not incoming.intake.received:
            error = api_errors.JSStreamRestoreErrF(err="EOF")
        else:
            try:
                info = restore_stream(self.js, incoming.config, incoming.intake.finish())
            except api_errors.ApiError as exc:
                error = exc if isinstance(exc, LIMIT_ERRORS) else api_errors.JSStreamRestoreErrF(
                    err=f"error adding stream: {exc.description} ({exc.err_code})")
            except Exception as exc:
                error = api_errors.JSStreamRestoreErrF(err=exc)
        incoming.intake.close()
        self._advise(advisories.restore_complete(name, incoming.start, time.time_ns(),
                                                 incoming.intake.received, domain=self.domain))
        if respond is None:
            return
        if error is not None:
            answer = self.error_answer(schemas.STREAM_CREATE_TYPE, error)
        else:
            answer = gojson.encode(schemas.StreamCreateResponse(
                type=schemas.STREAM_CREATE_TYPE, config=wire_config(info.config), created=info.created,
                state=state_body(info.state, details=False), ts=go_time(time.time_ns())))
        respond(answer)

    # -- chunk traffic ------------------------------------------------------------------
    def handle(self, msg: Msg,
               send: Callable[[bytes | None, bytes], None] | None = None) -> bool:
        """A message on $JS.SNAPSHOT.ACK.> or $JS.SNAPSHOT.RESTORE.>; False when no
        transfer waits for it.  Answers (chunk acks, the restore's result) go through
        `send(header, data)` when given, else to msg.reply on the bus."""
        subject = msg.subject
        reply = msg.reply
        if send is not None:
            def respond(data: bytes) -> None:
                send(None, data)
        else:
            def respond(data: bytes) -> None:
                if reply:
                    self.js.bus.publish(Msg(reply, data))
        with self.js.lock:
            if subject.startswith(ACK_PREFIX):
                prefix = subject.rsplit(".", 2)[0]
                transfer = self._sending.get(prefix)
                if transfer is None:
                    return False
                transfer.ack(subject)
                return True
            if subject.startswith(RESTORE_PREFIX):
                incoming = self._receiving.get(subject)
                if incoming is None:
                    return False
                self._chunk(incoming, msg, respond)
                return True
        return False

    def close(self) -> None:
        """Stop every transfer's timers (the JetStream is closing)."""
        with self.js.lock:
            for transfer in list(self._sending.values()):
                transfer.done = True
                transfer._disarm()
            self._sending.clear()
            for incoming in self._receiving.values():
                if incoming.timer is not None:
                    incoming.timer.cancel()
                incoming.intake.close()
            self._receiving.clear()
