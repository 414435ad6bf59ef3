"""Key-value buckets with nats-py's face: ``create_key_value``, ``key_value`` and
``delete_key_value`` on the context, and ``KeyValue`` with get, put, create, update,
delete, purge, purge_deletes, status, keys, history and watch.

Per-key TTLs: ``create`` and ``purge`` take ``msg_ttl`` (the message's ``Nats-TTL``; the
bucket's stream always allows them, as nats-py makes it).  ``limit_marker_ttl`` in the
bucket's configuration makes the server leave a marker (header ``Nats-Marker-Reason``)
when a key's last value ages out or is purged; a watch reads one as a purge or delete.

A bucket is the stream ``KV_<bucket>`` capturing ``$KV.<bucket>.>``: a put is a publish
to ``$KV.<bucket>.<key>``, a revision a stream sequence, a delete or purge a marker
message (header ``KV-Operation``), a purge also a rollup of the key's subject.  A watch is
an ordered push consumer (the last entry of each key, or every one with history).
"""

from __future__ import annotations

import asyncio
import datetime
import re
import warnings
from dataclasses import dataclass
from typing import Optional

from jsstore.aio import api, errors
from jsstore.aio.watcher import Watcher

KV_OP = "KV-Operation"
KV_DEL = "DEL"
KV_PURGE = "PURGE"
ROLLUP = "Nats-Rollup"
ROLLUP_SUBJECT = "sub"
MARKER_REASON = "Nats-Marker-Reason"    # on a subject delete marker (TTL, limits)
EXPECTED_LAST_SUBJECT_SEQUENCE = "Nats-Expected-Last-Subject-Sequence"
MAX_HISTORY = 64
DEFAULT_DUPLICATE_WINDOW = 120.0        # seconds
WATCH_INACTIVE_THRESHOLD = 300.0        # seconds

VALID_BUCKET = re.compile(r"^[a-zA-Z0-9_-]+$")
VALID_KEY = re.compile(r"^[-/_=\.a-zA-Z0-9]+$")


def stream_name(bucket: str) -> str:
    if VALID_BUCKET.match(bucket) is None:
        raise errors.InvalidBucketNameError()
    return f"KV_{bucket}"


def key_is_valid(key: str) -> bool:
    return bool(key) and key[0] != "." and key[-1] != "." and VALID_KEY.match(key) is not None


async def create_key_value(ctx, config: api.KeyValueConfig | None = None,
                           **params) -> KeyValue:
    """Create the bucket's stream (nats-py's configuration of it)."""
    config = (config or api.KeyValueConfig(bucket=params["bucket"])).evolve(**params)
    name = stream_name(config.bucket)
    window = DEFAULT_DUPLICATE_WINDOW
    if config.ttl and config.ttl < window:
        window = config.ttl
    if config.history > MAX_HISTORY:
        raise errors.KeyHistoryTooLargeError()
    marker_ttl = None
    if config.limit_marker_ttl is not None and config.limit_marker_ttl > 0:
        level = (await ctx.account_info()).api.level
        if not level or level < 1:
            raise errors.KeyValueLimitMarkerTTLNotSupportedError()
        marker_ttl = config.limit_marker_ttl
    info = await ctx.add_stream(api.StreamConfig(
        name=name, description=config.description, subjects=[f"$KV.{config.bucket}.>"],
        allow_direct=config.direct, allow_rollup_hdrs=True, allow_msg_ttl=True,
        deny_delete=True, discard=api.DiscardPolicy.NEW, duplicate_window=window,
        max_age=config.ttl, max_bytes=config.max_bytes, max_consumers=-1,
        max_msg_size=config.max_value_size, max_msgs=-1,
        max_msgs_per_subject=config.history, num_replicas=config.replicas,
        storage=config.storage, republish=config.republish,
        subject_delete_marker_ttl=marker_ttl))
    return KeyValue(config.bucket, name, ctx, bool(info.config.allow_direct))


async def key_value(ctx, bucket: str) -> KeyValue:
    """The bucket; BucketNotFoundError when there is none."""
    name = stream_name(bucket)
    try:
        info = await ctx.stream_info(name)
    except errors.NotFoundError:
        raise errors.BucketNotFoundError() from None
    if info.config.max_msgs_per_subject < 1:
        raise errors.BadBucketError()
    return KeyValue(bucket, name, ctx, bool(info.config.allow_direct))


async def delete_key_value(ctx, bucket: str) -> bool:
    return await ctx.delete_stream(stream_name(bucket))


@dataclass
class Entry:
    """One revision of a key."""
    bucket: str
    key: str
    value: Optional[bytes]
    revision: Optional[int]
    delta: Optional[int]
    created: Optional[datetime.datetime]
    operation: Optional[str]


@dataclass(frozen=True)
class BucketStatus:
    """A bucket's stream info, with the bucket's view of it."""
    stream_info: api.StreamInfo
    bucket: str

    @property
    def values(self) -> int:
        return self.stream_info.state.messages

    @property
    def history(self) -> int:
        return self.stream_info.config.max_msgs_per_subject

    @property
    def ttl(self) -> Optional[float]:
        return self.stream_info.config.max_age

    @property
    def marker_ttl(self) -> Optional[float]:
        return self.stream_info.config.subject_delete_marker_ttl


class KeyWatcher(Watcher):
    """The updates of a watch: entries, then None once the entries there were at the
    start have come (None at once when there were none)."""


class KeyValue:
    """One bucket."""

    Entry = Entry
    BucketStatus = BucketStatus
    KeyWatcher = KeyWatcher

    def __init__(self, name: str, stream: str, ctx, direct: bool):
        self._name = name
        self._stream = stream
        self._pre = f"$KV.{name}."
        self._js = ctx
        self._direct = direct

    def _check(self, key: str, validate: bool) -> None:
        if validate and not key_is_valid(key):
            raise errors.InvalidKeyError(key)

    async def get(self, key: str, revision: int | None = None,
                  validate_keys: bool = True) -> Entry:
        """The key's last revision, or revision `revision`; KeyNotFoundError when there
        is none or it was deleted."""
        self._check(key, validate_keys)
        try:
            return await self._get(key, revision)
        except errors.KeyDeletedError as deleted:
            raise errors.KeyNotFoundError(deleted.entry, deleted.op) from None

    async def _get(self, key: str, revision: int | None = None) -> Entry:
        subject = self._pre + key
        try:
            if revision:
                msg = await self._js.get_msg(self._stream, seq=revision, direct=self._direct)
            else:
                msg = await self._js.get_msg(self._stream, subject=subject, seq=revision,
                                             direct=self._direct)
        except errors.NotFoundError:
            raise errors.KeyNotFoundError() from None
        if msg.subject != subject:
            raise errors.KeyNotFoundError(message=f"expected '{subject}', but got "
                                                  f"'{msg.subject}'")
        entry = Entry(self._name, key, msg.data, msg.seq, None, None, None)
        op = (msg.headers or {}).get(KV_OP)
        if op in (KV_DEL, KV_PURGE):
            raise errors.KeyDeletedError(entry, op)
        return entry

    async def put(self, key: str, value: bytes, validate_keys: bool = True) -> int:
        """Store a value; its revision."""
        self._check(key, validate_keys)
        return (await self._js.publish(self._pre + key, value)).seq

    async def create(self, key: str, value: bytes, validate_keys: bool = True,
                     msg_ttl: float | None = None) -> int:
        """Store a value only if the key has none (or was deleted); its revision.
        KeyWrongLastSequenceError when it has one."""
        self._check(key, validate_keys)
        try:
            return await self._update(key, value, 0, msg_ttl)
        except errors.KeyWrongLastSequenceError as wrong:
            try:
                await self._get(key)
            except errors.KeyDeletedError as deleted:
                return await self._update(key, value, deleted.entry.revision, msg_ttl)
            raise wrong

    async def update(self, key: str, value: bytes, last: int | None = None,
                     validate_keys: bool = True) -> int:
        """Store a value if `last` is the key's last revision; its revision."""
        self._check(key, validate_keys)
        return await self._update(key, value, last, None)

    async def _update(self, key: str, value: bytes, last: int | None,
                      msg_ttl: float | None) -> int:
        headers = {EXPECTED_LAST_SUBJECT_SEQUENCE: str(last or 0)}
        try:
            ack = await self._js.publish(self._pre + key, value, headers=headers,
                                         msg_ttl=msg_ttl)
        except errors.APIError as err:
            if err.err_code in (10071, 10164):
                raise errors.KeyWrongLastSequenceError(description=err.description) from None
            raise
        return ack.seq

    async def delete(self, key: str, last: int | None = None,
                     validate_keys: bool = True, msg_ttl: float | None = None) -> bool:
        """Mark the key deleted (its history stays).  `msg_ttl` is ignored with a
        DeprecationWarning, as nats-py 2.16 does: a delete marker takes no TTL."""
        if msg_ttl is not None:
            warnings.warn("msg_ttl on delete() is deprecated and ignored; use create() or "
                          "purge() for TTL", DeprecationWarning, stacklevel=2)
        self._check(key, validate_keys)
        headers = {KV_OP: KV_DEL}
        if last and last > 0:
            headers[EXPECTED_LAST_SUBJECT_SEQUENCE] = str(last)
        await self._js.publish(self._pre + key, headers=headers)
        return True

    async def purge(self, key: str, msg_ttl: float | None = None) -> bool:
        """Mark the key purged, removing its history."""
        headers = {KV_OP: KV_PURGE, ROLLUP: ROLLUP_SUBJECT}
        await self._js.publish(self._pre + key, headers=headers, msg_ttl=msg_ttl)
        return True

    async def purge_deletes(self, olderthan: float = 30 * 60) -> bool:
        """Remove the delete and purge markers of the bucket: those older than
        `olderthan` seconds with everything of their key, the younger ones keeping only
        the marker (every one entirely when `olderthan` <= 0)."""
        watcher = await self.watchall()
        markers = []
        async for entry in watcher:
            if entry is None:
                break
            if entry.operation in (KV_DEL, KV_PURGE):
                markers.append(entry)
        await watcher.stop()
        now = datetime.datetime.now(datetime.timezone.utc)
        for entry in markers:
            young = olderthan > 0 and olderthan > (now - entry.created).total_seconds()
            await self._js.purge_stream(self._stream, subject=self._pre + entry.key,
                                        keep=1 if young else 0)
        return True

    async def status(self) -> BucketStatus:
        return BucketStatus(stream_info=await self._js.stream_info(self._stream),
                            bucket=self._name)

    async def keys(self, filters: list[str] | None = None, **_kwargs) -> list[str]:
        """The keys with a value (those containing one of `filters`, when given);
        NoKeysError when there is none.  Other keyword arguments are taken and ignored, as
        nats-py does."""
        watcher = await self.watchall(ignore_deletes=True, meta_only=True)
        keys = []
        async for entry in watcher:
            if entry is None:
                break
            if not filters or any(f in entry.key for f in filters):
                keys.append(entry.key)
        await watcher.stop()
        if not keys:
            raise errors.NoKeysError()
        return keys

    async def history(self, key: str) -> list[Entry]:
        """Every revision the bucket keeps of the key; NoKeysError when there is none."""
        watcher = await self.watch(key, include_history=True)
        entries = []
        async for entry in watcher:
            if entry is None:
                break
            entries.append(entry)
        await watcher.stop()
        if not entries:
            raise errors.NoKeysError()
        return entries

    async def watchall(self, **kwargs) -> KeyWatcher:
        return await self.watch(">", **kwargs)

    async def watch(self, keys: str, headers_only: bool = False,
                    include_history: bool = False, ignore_deletes: bool = False,
                    meta_only: bool = False,
                    inactive_threshold: float | None = None) -> KeyWatcher:
        """Updates of the keys `keys` matches: the last entry of each (every kept one
        with include_history), None, then each change as it comes."""
        watcher = KeyWatcher()
        started = asyncio.Event()

        async def on_msg(msg) -> None:
            await started.wait()
            meta = msg.metadata
            headers = msg.headers or {}
            op = headers.get(KV_OP)
            if op is None and MARKER_REASON in headers:
                reason = headers[MARKER_REASON]
                op = {"MaxAge": KV_PURGE, "Purge": KV_PURGE, "Remove": KV_DEL}.get(reason)
                if op is None:
                    if meta.num_pending == 0:
                        watcher._caught_up()
                    return
            if not (ignore_deletes and op in (KV_DEL, KV_PURGE)):
                watcher._put(Entry(
                    self._name, msg.subject[len(self._pre):], msg.data,
                    meta.sequence.stream, meta.num_pending, meta.timestamp, op))
            if meta.num_pending == 0:
                watcher._caught_up()

        watcher._sub = await self._js.subscribe(
            self._pre + keys, stream=self._stream, cb=on_msg, ordered_consumer=True,
            deliver_policy=None if include_history else api.DeliverPolicy.LAST_PER_SUBJECT,
            headers_only=meta_only,
            inactive_threshold=inactive_threshold or WATCH_INACTIVE_THRESHOLD)
        try:
            info = await watcher._sub.consumer_info()
        except Exception:
            await watcher._sub.unsubscribe()
            raise
        if info.num_pending == 0 and watcher._sub.delivered == 0:
            watcher._caught_up()
        started.set()
        return watcher
