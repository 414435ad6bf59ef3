"""JetStream advisories: the JSON events nats-server publishes under ``$JS.EVENT.ADVISORY``.

Every builder returns ``(subject, json_bytes)`` in nats-server's shape: the typed-event head
(``type``, ``id``, ``timestamp``) first, then the advisory's fields in nats-server's order,
``omitempty`` fields left out when empty, Go's HTML-safe string escapes.  ``id`` is a
nuid-like unique id (22 base-62 characters); ``timestamp`` and the other times are RFC 3339
UTC with nanoseconds.  Each builder takes ``now`` (Unix ns) for the timestamp; the wall
clock when it is None.

What an embedded store fills in the ``client`` object (nats-server's ClientInfo): only
``acc``, the account (``$G``), since an in-process caller has no connection, host, id,
language, version, RTT or user.  A server layer that forwards real client requests passes
its own ``ClientInfo`` with whatever it knows.  The API audit's ``server`` is the id or name
the caller gives (the embedded JetStream has no NATS server; it passes its own id).

Advisory subjects and types (nats-server's constants):

    API audit               $JS.EVENT.ADVISORY.API                               api_audit
    stream create/delete/update  ...STREAM.CREATED|DELETED|UPDATED.<stream>       stream_action
    consumer create/delete  ...CONSUMER.CREATED|DELETED.<stream>.<consumer>      consumer_action
    max deliveries          ...CONSUMER.MAX_DELIVERIES.<stream>.<consumer>       max_deliver
    NAK                     ...CONSUMER.MSG_NAKED.<stream>.<consumer>            nak
    TERM                    ...CONSUMER.MSG_TERMINATED.<stream>.<consumer>       terminated
    snapshot start/end      ...STREAM.SNAPSHOT_CREATE|SNAPSHOT_COMPLETE.<stream> snapshot_create|_complete
    restore start/end       ...STREAM.RESTORE_CREATE|RESTORE_COMPLETE.<stream>   restore_create|_complete
    atomic batch abandoned  ...STREAM.BATCH_ABANDONED.<stream>                   stream_batch_abandoned

The snapshot_create advisory carries the stream ``state`` as nats-server sends it, not the
``blocks``/``block_size`` pair of the older published schema.
"""

from __future__ import annotations

import secrets
import threading
import time
from typing import Any

import msgspec

from jsstore.gocompat import json as gojson
from jsstore.gocompat.times import rfc3339_nano

ADVISORY_PREFIX = "$JS.EVENT.ADVISORY"
ADVISORY_TYPE_PREFIX = "io.nats.jetstream.advisory.v1."
ACCOUNT = "$G"

API_AUDIT_TYPE = ADVISORY_TYPE_PREFIX + "api_audit"
STREAM_ACTION_TYPE = ADVISORY_TYPE_PREFIX + "stream_action"
CONSUMER_ACTION_TYPE = ADVISORY_TYPE_PREFIX + "consumer_action"
MAX_DELIVER_TYPE = ADVISORY_TYPE_PREFIX + "max_deliver"
NAK_TYPE = ADVISORY_TYPE_PREFIX + "nak"
TERMINATED_TYPE = ADVISORY_TYPE_PREFIX + "terminated"
SNAPSHOT_CREATE_TYPE = ADVISORY_TYPE_PREFIX + "snapshot_create"
SNAPSHOT_COMPLETE_TYPE = ADVISORY_TYPE_PREFIX + "snapshot_complete"
RESTORE_CREATE_TYPE = ADVISORY_TYPE_PREFIX + "restore_create"
RESTORE_COMPLETE_TYPE = ADVISORY_TYPE_PREFIX + "restore_complete"
BATCH_ABANDONED_TYPE = ADVISORY_TYPE_PREFIX + "stream_batch_abandoned"

CREATE, DELETE, MODIFY = "create", "delete", "modify"     # action values
# why an atomic batch was abandoned (nats-server's BatchAbandonReason values)
BATCH_TIMEOUT, BATCH_LARGE, BATCH_INCOMPLETE, BATCH_UNSUPPORTED = (
    "timeout", "large", "incomplete", "unsupported")
_STREAM_ACTION_SUBJECTS = {CREATE: "CREATED", DELETE: "DELETED", MODIFY: "UPDATED"}
_CONSUMER_ACTION_SUBJECTS = {CREATE: "CREATED", DELETE: "DELETED"}

# -- unique ids ---------------------------------------------------------------------------
_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_BASE = 62
_PREFIX_LEN, _SEQ_LEN = 12, 10
_MAX_SEQ = _BASE ** _SEQ_LEN
_MIN_INC, _MAX_INC = 33, 333


class _IdSource:
    """nuid's scheme: a random 12-character prefix and a 10-character sequence that grows
    by a random step; a new prefix when the sequence runs out."""

    def __init__(self):
        self._lock = threading.Lock()
        self._new_prefix()

    def _new_prefix(self) -> None:
        self.prefix = "".join(_DIGITS[secrets.randbelow(_BASE)] for _ in range(_PREFIX_LEN))
        self.seq = secrets.randbelow(_MAX_SEQ)
        self.step = _MIN_INC + secrets.randbelow(_MAX_INC - _MIN_INC)

    def next(self) -> str:
        with self._lock:
            self.seq += self.step
            if self.seq >= _MAX_SEQ:
                self._new_prefix()
            seq, prefix = self.seq, self.prefix
        tail = []
        for _ in range(_SEQ_LEN):
            seq, digit = divmod(seq, _BASE)
            tail.append(_DIGITS[digit])
        return prefix + "".join(reversed(tail))


_ids = _IdSource()


def next_id() -> str:
    """A unique 22-character base-62 id, as nats-server's nuid.Next() makes them."""
    return _ids.next()


def _timestamp(now: int | None) -> str:
    return rfc3339_nano(time.time_ns() if now is None else now)


# -- shapes -------------------------------------------------------------------------------
class ClientInfo(msgspec.Struct, omit_defaults=True):
    """nats-server's ClientInfo, every field omitempty, in its order."""
    start: str = ""            # when the client connected (RFC 3339)
    host: str = ""             # its remote address
    id: int = 0                # the server's id for the connection
    acc: str = ""              # the account
    svc: str = ""              # the service account, for imported services
    user: str = ""
    name: str = ""             # the name the client gave
    lang: str = ""             # client library language
    ver: str = ""              # client library version
    rtt: int = 0               # last measured round trip, ns
    server: str = ""           # the server it is connected to
    cluster: str = ""
    alts: list[str] = []       # alternative clusters
    stop: str = ""             # when it disconnected
    jwt: str = ""
    issuer_key: str = ""
    name_tag: str = ""
    tags: list[str] = []
    kind: str = ""             # Client, Leafnode, Router, Gateway, JetStream, Account, System
    client_type: str = ""      # nats, mqtt, websocket
    client_id: str = ""        # the MQTT client id
    nonce: str = ""


def embedded_client(account: str = ACCOUNT) -> ClientInfo:
    """What an in-process caller can truthfully report: its account."""
    return ClientInfo(acc=account)


class ApiAudit(msgspec.Struct, omit_defaults=True, kw_only=True):
    type: str
    id: str
    timestamp: str
    server: str
    client: ClientInfo | None
    subject: str
    request: str = ""          # the request body (omitted when empty)
    response: str              # the response body (always written)
    domain: str = ""


class StreamAction(msgspec.Struct, omit_defaults=True, kw_only=True):
    type: str
    id: str
    timestamp: str
    stream: str
    action: str
    domain: str = ""


class ConsumerAction(msgspec.Struct, omit_defaults=True, kw_only=True):
    type: str
    id: str
    timestamp: str
    stream: str
    consumer: str
    action: str
    domain: str = ""


class MaxDeliveries(msgspec.Struct, omit_defaults=True, kw_only=True):
    type: str
    id: str
    timestamp: str
    stream: str
    consumer: str
    stream_seq: int
    deliveries: int
    domain: str = ""


class MsgNaked(msgspec.Struct, omit_defaults=True, kw_only=True):
    type: str
    id: str
    timestamp: str
    stream: str
    consumer: str
    consumer_seq: int
    stream_seq: int
    deliveries: int
    domain: str = ""


class MsgTerminated(msgspec.Struct, omit_defaults=True, kw_only=True):
    type: str
    id: str
    timestamp: str
    stream: str
    consumer: str
    consumer_seq: int
    stream_seq: int
    deliveries: int
    reason: str = ""
    domain: str = ""


class SnapshotCreate(msgspec.Struct, omit_defaults=True, kw_only=True):
    type: str
    id: str
    timestamp: str
    stream: str
    state: Any          # the stream's state as STREAM.INFO writes it (a msgspec Struct)
    client: ClientInfo | None
    domain: str = ""


class SnapshotComplete(msgspec.Struct, omit_defaults=True, kw_only=True):
    type: str
    id: str
    timestamp: str
    stream: str
    start: str
    end: str
    client: ClientInfo | None
    domain: str = ""
    error: str = ""            # why the transfer ended early (e.g. "no flow response")


class RestoreCreate(msgspec.Struct, omit_defaults=True, kw_only=True):
    type: str
    id: str
    timestamp: str
    stream: str
    client: ClientInfo | None
    domain: str = ""


class RestoreComplete(msgspec.Struct, omit_defaults=True, kw_only=True):
    type: str
    id: str
    timestamp: str
    stream: str
    start: str
    end: str
    bytes: int
    client: ClientInfo | None
    domain: str = ""


class BatchAbandoned(msgspec.Struct, omit_defaults=True, kw_only=True):
    type: str
    id: str
    timestamp: str
    account: str = ""
    stream: str
    domain: str = ""
    batch: str                 # the Nats-Batch-Id
    reason: str                # timeout, large, incomplete or unsupported


# -- builders -----------------------------------------------------------------------------
def api_audit(server: str, subject: str, request: bytes | str, response: bytes | str, *,
              client: ClientInfo | None = None, domain: str = "",
              now: int | None = None) -> tuple[str, bytes]:
    """The audit of one API request: the request and response bodies as text."""
    if isinstance(request, (bytes, bytearray, memoryview)):
        request = bytes(request).decode("utf-8", "replace")
    if isinstance(response, (bytes, bytearray, memoryview)):
        response = bytes(response).decode("utf-8", "replace")
    event = ApiAudit(type=API_AUDIT_TYPE, id=next_id(), timestamp=_timestamp(now),
                     server=server, client=client or embedded_client(), subject=subject,
                     request=request, response=response, domain=domain)
    return f"{ADVISORY_PREFIX}.API", gojson.encode(event)


def stream_action(stream: str, action: str, *, domain: str = "",
                  now: int | None = None) -> tuple[str, bytes]:
    """STREAM.CREATED / DELETED / UPDATED for action create / delete / modify."""
    suffix = _STREAM_ACTION_SUBJECTS.get(action)
    if suffix is None:
        raise ValueError(f"unknown stream action {action!r}")
    event = StreamAction(type=STREAM_ACTION_TYPE, id=next_id(), timestamp=_timestamp(now),
                         stream=stream, action=action, domain=domain)
    return f"{ADVISORY_PREFIX}.STREAM.{suffix}.{stream}", gojson.encode(event)


def consumer_action(stream: str, consumer: str, action: str, *, domain: str = "",
                    now: int | None = None) -> tuple[str, bytes]:
    """CONSUMER.CREATED / DELETED for action create / delete."""
    suffix = _CONSUMER_ACTION_SUBJECTS.get(action)
    if suffix is None:
        raise ValueError(f"unknown consumer action {action!r}")
    event = ConsumerAction(type=CONSUMER_ACTION_TYPE, id=next_id(), timestamp=_timestamp(now),
                           stream=stream, consumer=consumer, action=action, domain=domain)
    return f"{ADVISORY_PREFIX}.CONSUMER.{suffix}.{stream}.{consumer}", gojson.encode(event)


def max_deliveries(stream: str, consumer: str, stream_seq: int, deliveries: int, *,
                   domain: str = "", now: int | None = None) -> tuple[str, bytes]:
    """A message reached the consumer's max_deliver."""
    event = MaxDeliveries(type=MAX_DELIVER_TYPE, id=next_id(), timestamp=_timestamp(now),
                          stream=stream, consumer=consumer, stream_seq=stream_seq,
                          deliveries=deliveries, domain=domain)
    return f"{ADVISORY_PREFIX}.CONSUMER.MAX_DELIVERIES.{stream}.{consumer}", gojson.encode(event)


def msg_naked(stream: str, consumer: str, consumer_seq: int, stream_seq: int,
              deliveries: int, *, domain: str = "", now: int | None = None) -> tuple[str, bytes]:
    """A delivery was negatively acknowledged."""
    event = MsgNaked(type=NAK_TYPE, id=next_id(), timestamp=_timestamp(now), stream=stream,
                     consumer=consumer, consumer_seq=consumer_seq, stream_seq=stream_seq,
                     deliveries=deliveries, domain=domain)
    return f"{ADVISORY_PREFIX}.CONSUMER.MSG_NAKED.{stream}.{consumer}", gojson.encode(event)


def msg_terminated(stream: str, consumer: str, consumer_seq: int, stream_seq: int,
                   deliveries: int, *, reason: str = "", domain: str = "",
                   now: int | None = None) -> tuple[str, bytes]:
    """A delivery was terminated (+TERM, with the reason the client gave)."""
    event = MsgTerminated(type=TERMINATED_TYPE, id=next_id(), timestamp=_timestamp(now),
                          stream=stream, consumer=consumer, consumer_seq=consumer_seq,
                          stream_seq=stream_seq, deliveries=deliveries, reason=reason,
                          domain=domain)
    return f"{ADVISORY_PREFIX}.CONSUMER.MSG_TERMINATED.{stream}.{consumer}", gojson.encode(event)


def snapshot_create(stream: str, state: Any, *, client: ClientInfo | None = None,
                    domain: str = "", now: int | None = None) -> tuple[str, bytes]:
    """A snapshot started; `state` is the stream state it captures."""
    event = SnapshotCreate(type=SNAPSHOT_CREATE_TYPE, id=next_id(), timestamp=_timestamp(now),
                           stream=stream, state=state, client=client or embedded_client(),
                           domain=domain)
    return f"{ADVISORY_PREFIX}.STREAM.SNAPSHOT_CREATE.{stream}", gojson.encode(event)


def snapshot_complete(stream: str, start: int, end: int, *, client: ClientInfo | None = None,
                      error: str = "", domain: str = "",
                      now: int | None = None) -> tuple[str, bytes]:
    """A snapshot transfer ended (start and end in Unix ns; error when it failed)."""
    event = SnapshotComplete(type=SNAPSHOT_COMPLETE_TYPE, id=next_id(),
                             timestamp=_timestamp(end if now is None else now), stream=stream,
                             start=rfc3339_nano(start), end=rfc3339_nano(end),
                             client=client or embedded_client(), domain=domain, error=error)
    return f"{ADVISORY_PREFIX}.STREAM.SNAPSHOT_COMPLETE.{stream}", gojson.encode(event)


def restore_create(stream: str, *, client: ClientInfo | None = None, domain: str = "",
                   now: int | None = None) -> tuple[str, bytes]:
    """A restore is ready to receive chunks."""
    event = RestoreCreate(type=RESTORE_CREATE_TYPE, id=next_id(), timestamp=_timestamp(now),
                          stream=stream, client=client or embedded_client(), domain=domain)
    return f"{ADVISORY_PREFIX}.STREAM.RESTORE_CREATE.{stream}", gojson.encode(event)


def restore_complete(stream: str, start: int, end: int, size: int, *,
                     client: ClientInfo | None = None, domain: str = "",
                     now: int | None = None) -> tuple[str, bytes]:
    """A restore ended (successfully or not); `size` is the bytes received."""
    event = RestoreComplete(type=RESTORE_COMPLETE_TYPE, id=next_id(),
                            timestamp=_timestamp(end if now is None else now), stream=stream,
                            start=rfc3339_nano(start), end=rfc3339_nano(end), bytes=size,
                            client=client or embedded_client(), domain=domain)
    return f"{ADVISORY_PREFIX}.STREAM.RESTORE_COMPLETE.{stream}", gojson.encode(event)


def batch_abandoned(stream: str, batch: str, reason: str, *, account: str = "",
                    domain: str = "", now: int | None = None) -> tuple[str, bytes]:
    """An atomic publish batch was dropped (reason: timeout, large, incomplete, unsupported)."""
    event = BatchAbandoned(type=BATCH_ABANDONED_TYPE, id=next_id(), timestamp=_timestamp(now),
                           account=account, stream=stream, domain=domain, batch=batch,
                           reason=reason)
    return f"{ADVISORY_PREFIX}.STREAM.BATCH_ABANDONED.{stream}", gojson.encode(event)
