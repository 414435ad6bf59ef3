"""Object stores with nats-py's face: ``create_object_store``, ``object_store`` and
``delete_object_store`` on the context, and ``ObjectStore`` with put, get, get_info,
delete, list, watch, update_meta, seal, status, add_link and add_bucket_link.

A store is the stream ``OBJ_<bucket>``: an object's content is chunk messages on
``$O.<bucket>.C.<nuid>``, its info one JSON message on ``$O.<bucket>.M.<base64url name>``
(a rollup keeps only the last), its digest the SHA-256 of the content.  Reading an
object is an ordered push consumer over its chunks.  A link is an info with no chunks whose
``options.link`` names another store's object (or, without a name, the whole store), as
the Go client writes them (nats-py 2.16 reads links but has no calls to make one); get
of a link reads its target.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import secrets
import string
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Optional

from jsstore.aio import api, errors
from jsstore.aio.kv import ROLLUP, ROLLUP_SUBJECT, VALID_BUCKET
from jsstore.aio.watcher import Watcher

DEFAULT_CHUNK_SIZE = 128 * 1024
DIGEST_TYPE = "SHA-256="
_NUID_ALPHABET = string.ascii_letters + string.digits


def stream_name(bucket: str) -> str:
    if not bucket or VALID_BUCKET.match(bucket) is None:
        raise errors.InvalidBucketNameError()
    return f"OBJ_{bucket}"


def _nuid() -> str:
    return "".join(secrets.choice(_NUID_ALPHABET) for _ in range(22))


async def create_object_store(ctx, bucket: str | None = None,
                              config: api.ObjectStoreConfig | None = None,
                              **params) -> ObjectStore:
    """Create the store's stream (nats-py's configuration of it)."""
    config = api.ObjectStoreConfig(bucket=bucket) if config is None else config.evolve(
        bucket=bucket)
    config = config.evolve(**params)
    name = stream_name(config.bucket)
    await ctx.add_stream(api.StreamConfig(
        name=name, description=config.description,
        subjects=[f"$O.{config.bucket}.C.>", f"$O.{config.bucket}.M.>"],
        max_age=config.ttl, max_bytes=-1 if config.max_bytes == 0 else config.max_bytes,
        max_consumers=0, storage=config.storage, num_replicas=config.replicas,
        placement=config.placement, discard=api.DiscardPolicy.NEW, allow_rollup_hdrs=True,
        allow_direct=True))
    return ObjectStore(config.bucket, name, ctx)


async def object_store(ctx, bucket: str) -> ObjectStore:
    """The store; errors.BucketNotFoundError when there is none."""
    name = stream_name(bucket)
    try:
        await ctx.stream_info(name)
    except errors.NotFoundError:
        raise errors.BucketNotFoundError() from None
    return ObjectStore(bucket, name, ctx)


async def delete_object_store(ctx, bucket: str) -> bool:
    return await ctx.delete_stream(stream_name(bucket))


@dataclass
class ObjectResult:
    """An object read back: its info and content."""
    info: api.ObjectInfo
    data: Optional[bytes] = field(default_factory=bytes)


@dataclass(frozen=True)
class ObjectStoreStatus:
    """A store's stream info, with the store's view of it."""
    stream_info: api.StreamInfo
    bucket: str

    @property
    def description(self) -> Optional[str]:
        return self.stream_info.config.description

    @property
    def ttl(self) -> Optional[float]:
        return self.stream_info.config.max_age

    @property
    def storage_type(self):
        return self.stream_info.config.storage

    @property
    def replicas(self) -> Optional[int]:
        return self.stream_info.config.num_replicas

    @property
    def sealed(self) -> bool:
        return self.stream_info.config.sealed

    @property
    def size(self) -> int:
        return self.stream_info.state.bytes


class ObjectWatcher(Watcher):
    """The infos of a watch: one per object, then None once those there at the start came
    (unless only updates were asked for), then each change."""


class ObjectStore:
    """One object store."""

    ObjectResult = ObjectResult
    ObjectStoreStatus = ObjectStoreStatus
    ObjectWatcher = ObjectWatcher

    def __init__(self, name: str, stream: str, ctx):
        self._name = name
        self._stream = stream
        self._js = ctx

    def _meta_subject(self, name: str) -> str:
        return f"$O.{self._name}.M.{base64.urlsafe_b64encode(name.encode()).decode()}"

    def _chunk_subject(self, nuid: str) -> str:
        return f"$O.{self._name}.C.{nuid}"

    async def _publish_info(self, subject: str, info: api.ObjectInfo) -> None:
        await self._js.publish(subject, json.dumps(info.as_dict()).encode(),
                               headers={ROLLUP: ROLLUP_SUBJECT})

    async def get_info(self, name: str, show_deleted: bool | None = False) -> api.ObjectInfo:
        """The object's info; ObjectNotFoundError when there is none (or it was deleted,
        unless show_deleted)."""
        try:
            msg = await self._js.get_last_msg(self._stream, self._meta_subject(name))
        except errors.NotFoundError:
            raise errors.ObjectNotFoundError() from None
        try:
            info = api.ObjectInfo.from_response(json.loads(msg.data))
        except Exception as exc:
            raise errors.BadObjectMetaError() from exc
        if info.deleted and not show_deleted:
            raise errors.ObjectNotFoundError()
        return info

    async def get(self, name: str, writeinto=None,
                  show_deleted: bool | None = False) -> ObjectResult:
        """The object (a link's target); its content written into `writeinto` when given
        (off the event loop), else in ``result.data``."""
        info = await self.get_info(name, show_deleted)
        if not info.nuid:
            raise errors.BadObjectMetaError()
        if info.is_link():
            if not info.options.link.name:
                raise errors.LinkIsABucketError()
            other = await object_store(self._js, info.options.link.bucket)
            return await other.get(info.options.link.name)
        result = ObjectResult(info=info)
        if info.size == 0:
            return result
        write = None
        if writeinto is not None:
            write = writeinto.buffer.write if hasattr(writeinto, "buffer") else writeinto.write
        loop = asyncio.get_running_loop()
        digest = hashlib.sha256()
        parts = []
        sub = await self._js.subscribe(self._chunk_subject(info.nuid), stream=self._stream,
                                       ordered_consumer=True)
        try:
            while True:
                msg = await sub.next_msg(timeout=None)
                digest.update(msg.data)
                if write is not None:
                    await loop.run_in_executor(None, write, msg.data)
                else:
                    parts.append(msg.data)
                if msg.metadata.num_pending == 0:
                    break
        finally:
            await sub.unsubscribe()
        result.data = b"".join(parts)
        expected = (info.digest or "").replace(DIGEST_TYPE, "").replace(DIGEST_TYPE.upper(), "")
        if digest.digest() != base64.urlsafe_b64decode(expected):
            raise errors.DigestMismatchError()
        return result

    async def put(self, name: str, data, meta: api.ObjectMeta | None = None) -> api.ObjectInfo:
        """Store an object from bytes, text or a binary file (read off the event loop),
        replacing one of that name; its info."""
        if meta is None:
            meta = api.ObjectMeta(name=name)
        elif name:
            meta.name = name
        if meta.options is None:
            meta.options = api.ObjectMetaOptions(max_chunk_size=DEFAULT_CHUNK_SIZE)
        try:
            existing = await self.get_info(meta.name)
        except errors.NotFoundError:
            existing = None
        threaded = False
        if isinstance(data, str):
            data = io.BytesIO(data.encode())
        elif isinstance(data, bytes):
            data = io.BytesIO(data)
        elif hasattr(data, "readinto") or isinstance(data, io.BufferedIOBase):
            threaded = True
        elif hasattr(data, "buffer") or isinstance(data, io.TextIOWrapper):
            data = data.buffer
        else:
            raise TypeError("nats: invalid type for object store")
        nuid = _nuid()
        chunks_subject = self._chunk_subject(nuid)
        info = api.ObjectInfo(name=meta.name, description=meta.description,
                              headers=meta.headers, options=meta.options, bucket=self._name,
                              nuid=nuid, size=0, chunks=0,
                              mtime=datetime.now(timezone.utc).isoformat())
        digest = hashlib.sha256()
        chunk = bytearray(meta.options.max_chunk_size)
        loop = asyncio.get_running_loop()
        try:
            while True:
                n = (await loop.run_in_executor(None, data.readinto, chunk) if threaded
                     else data.readinto(chunk))
                if not n:
                    break
                payload = bytes(chunk[:n])
                digest.update(payload)
                await self._js.publish(chunks_subject, payload)
                info.chunks += 1
                info.size += n
            info.digest = DIGEST_TYPE + base64.urlsafe_b64encode(digest.digest()).decode()
            await self._publish_info(self._meta_subject(meta.name), info)
        except Exception:
            await self._js.purge_stream(self._stream, subject=chunks_subject)
            raise
        info.mtime = datetime.now(timezone.utc).isoformat()
        if existing is not None and not existing.deleted:
            await self._js.purge_stream(self._stream,
                                        subject=self._chunk_subject(existing.nuid))
        return info

    async def update_meta(self, name: str, meta: api.ObjectMeta) -> None:
        """Change an object's name, description and headers."""
        try:
            info = await self.get_info(name)
        except errors.ObjectNotFoundError:
            raise errors.ObjectDeletedError() from None
        if name != meta.name:
            other = await self.get_info(name, show_deleted=True)
            if not other.deleted:
                raise errors.ObjectAlreadyExists()
        info.name, info.description, info.headers = meta.name, meta.description, meta.headers
        subject = self._meta_subject(name)
        await self._publish_info(subject, info)
        if name != meta.name:
            await self._js.purge_stream(self._stream, subject=subject)

    async def delete(self, name: str) -> None:
        """Mark the object deleted and remove its chunks."""
        info = await self.get_info(name)
        if not info.nuid:
            raise errors.BadObjectMetaError()
        chunks_subject = self._chunk_subject(info.nuid)
        info.deleted, info.size, info.chunks, info.digest, info.mtime = True, 0, 0, "", ""
        try:
            await self._publish_info(self._meta_subject(name), info)
        finally:
            await self._js.purge_stream(self._stream, subject=chunks_subject)

    async def add_link(self, name: str, obj: api.ObjectInfo) -> api.ObjectInfo:
        """Make `name` a link to the object `obj` is the info of (in this store or
        another); its info.  A link may replace a link, not an object."""
        if obj is None or not obj.name:
            raise errors.ObjectRequiredError()
        if obj.deleted:
            raise errors.NoLinkToDeletedError()
        if obj.is_link():
            raise errors.NoLinkToLinkError()
        return await self._add_link(name, api.ObjectLink(bucket=obj.bucket, name=obj.name))

    async def add_bucket_link(self, name: str, bucket: ObjectStore) -> api.ObjectInfo:
        """Make `name` a link to the whole store `bucket`; its info."""
        if bucket is None:
            raise errors.BucketRequiredError()
        return await self._add_link(name, api.ObjectLink(bucket=bucket._name))

    async def _add_link(self, name: str, link: api.ObjectLink) -> api.ObjectInfo:
        if not name:
            raise errors.InvalidObjectNameError()
        try:
            existing = await self.get_info(name, show_deleted=True)
        except errors.ObjectNotFoundError:
            existing = None
        if existing is not None and not existing.is_link():
            raise errors.ObjectAlreadyExists()
        info = api.ObjectInfo(name=name, bucket=self._name, nuid=_nuid(),
                              mtime=datetime.now(timezone.utc).isoformat(),
                              options=api.ObjectMetaOptions(link=link))
        await self._publish_info(self._meta_subject(name), info)
        return info

    async def status(self) -> ObjectStoreStatus:
        return ObjectStoreStatus(stream_info=await self._js.stream_info(self._stream),
                                 bucket=self._name)

    async def seal(self) -> None:
        """Refuse every change from now on (the stream is sealed)."""
        config = (await self._js.stream_info(self._stream)).config
        config.sealed = True
        await self._js.update_stream(config)

    async def list(self, ignore_deletes: bool = False) -> list[api.ObjectInfo]:
        """Every object's info; NotFoundError when there is none."""
        watcher = await self.watch(ignore_deletes=ignore_deletes)
        infos = []
        async for info in watcher:
            if info is None:
                break
            infos.append(info)
        await watcher.stop()
        if not infos:
            raise errors.NotFoundError()
        return infos

    async def watch(self, ignore_deletes: bool = False, include_history: bool = False,
                    meta_only: bool = False, updates_only: bool = False) -> ObjectWatcher:
        """The objects' infos as they change (see ObjectWatcher)."""
        all_meta = f"$O.{self._name}.M.>"
        watcher = ObjectWatcher()

        async def on_msg(msg) -> None:
            info = api.ObjectInfo.from_response(json.loads(msg.data))
            if not ignore_deletes or not info.deleted:
                watcher._put(info)
            if msg.metadata.num_pending == 0 and not updates_only:
                watcher._caught_up()

        try:
            await self._js.get_last_msg(self._stream, all_meta)
        except errors.NotFoundError:
            watcher._caught_up(announce=not updates_only)
        policy = (api.DeliverPolicy.NEW if updates_only else
                  None if include_history else api.DeliverPolicy.LAST_PER_SUBJECT)
        watcher._sub = await self._js.subscribe(all_meta, stream=self._stream, cb=on_msg,
                                                ordered_consumer=True, deliver_policy=policy)
        return watcher
