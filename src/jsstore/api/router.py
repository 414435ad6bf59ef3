"""Where a message sent into JetStream goes: the ``$JS.API.*`` handlers, direct gets, the
snapshot subjects, or a stream that captures the subject (a publish).

``Router(js).dispatch(subject, payload, hdr, send)`` answers through ``send(hdr, data)``
(zero, one or several messages to the request's reply subject) and returns whether
anything serves the subject: False is what a NATS client sees as "no responders".

As in nats-server, JetStream takes every subject under ``$JS.API.>``: one no handler
serves (an unknown subject, a system account subject, a reset of a missing consumer)
goes unanswered and its requester times out.  Direct gets and pull requests are the
exception: streams and consumers subscribe those themselves, so nobody serving one is
"no responders".
"""

from __future__ import annotations

import itertools
from typing import Callable, Mapping

from jsstore._core.wire.ackparse import plain_v1_acks
from jsstore.api import schemas
from jsstore.api.cluster import cluster_only_type
from jsstore.api.consumers import ConsumerApi
from jsstore.api.direct import direct_get
from jsstore.api.streams import StreamApi
from jsstore.consumer import pullrequests
from jsstore.deferred import deferred
from jsstore.gocompat import json as gojson
from jsstore.stream import advisories
from jsstore.stream.puback import pub_error_json, unanswered
from jsstore.wire import apierrors as api_errors
from jsstore.wire import headers as header_block
from jsstore.wire.api import ACK_PREFIX, NO_ANSWER, PULL_REQUEST_PREFIX, api_level_too_high
from jsstore.wire.bus import Msg

# snapshots and restores (the file store, archives, compression) load with the first one
snapshot = deferred("jsstore.api.snapshot")

Send = Callable[["bytes | None", bytes], None]   # send(header block, payload) to the reply

DIRECT_GET = schemas.API_PREFIX + "DIRECT.GET"
DIRECT_GET_PREFIX = DIRECT_GET + "."
RESET_PREFIX = schemas.API_PREFIX + "CONSUMER.RESET."
CONSUMER_PREFIX = schemas.API_PREFIX + "CONSUMER."
FLOW_CONTROL_PREFIX = "$JS.FC."
SNAPSHOT_PREFIX = "$JS.SNAPSHOT."
AUDIT_SUBJECT = advisories.ADVISORY_PREFIX + ".API"


class Router:
    """Routes the messages sent into one embedded JetStream."""

    def __init__(self, js):
        self.js = js
        self.lock = js.lock     # JetStream's lock: what ..._locked methods expect held
        self.streams = StreamApi(js)
        self.consumers = ConsumerApi(js)
        self._snapshots = None      # the snapshot/restore sessions, made on first use
        self._inboxes = itertools.count(1)   # request_msgs' reply subjects

    def snapshots(self) -> snapshot.SnapshotApi:
        if self._snapshots is None:
            self._snapshots = snapshot.SnapshotApi(self.js)
        return self._snapshots

    def close(self) -> None:
        """End the pending snapshot and restore transfers."""
        if self._snapshots is not None:
            self._snapshots.close()

    # -- messages in, answers out ---------------------------------------------------------
    def handle(self, msg: Msg) -> bool:
        """A message sent into JetStream, its answers sent to ``msg.reply`` on the bus."""
        reply = msg.reply
        bus = self.js.bus

        def send(hdr: bytes | None, data: bytes) -> None:
            if reply:
                bus.publish(Msg(reply, data, hdr))
        return self.dispatch(msg.subject, bytes(msg.data or b""), msg.hdr, send, reply)

    def request_msgs(self, subject: str, payload: bytes = b"",
                     headers: Mapping[str, str | list[str]] | bytes | None = None) -> list[Msg]:
        """Every answer to a message sent into JetStream, in order; empty when nothing
        serves the subject."""
        js = self.js
        inbox = f"_INBOX.{next(self._inboxes)}"
        answers: list[Msg] = []

        def send(hdr: bytes | None, data: bytes) -> None:
            answers.append(Msg(inbox, data, hdr))
        js.check_open()
        # a pull request is served on the bus (now and as messages arrive): listen to its
        # reply subject while the request is answered, then let the request go
        pull = subject.startswith(PULL_REQUEST_PREFIX)
        sub = js.bus.subscribe(inbox, answers.append) if pull else None
        try:
            self.dispatch(subject, bytes(payload or b""), header_block.encode_headers(headers),
                          send, inbox)
        finally:
            if sub is not None:
                sub.unsubscribe()
                js.consumers.reader_gone(subject, inbox)
        return answers

    def dispatch(self, subject: str, payload: bytes, hdr: bytes | None, send: Send,
                 reply: str | None = None) -> bool:
        if subject.startswith(schemas.API_PREFIX):
            return self._api(subject, payload, hdr, send, reply)
        if subject.startswith(SNAPSHOT_PREFIX):
            return self.snapshots().handle(Msg(subject, payload, hdr, reply), send)
        if subject.startswith(ACK_PREFIX):
            return self._ack(subject, payload, reply, send)
        if subject.startswith(FLOW_CONTROL_PREFIX):
            return self._flow_control(subject, hdr)
        return self._publish(subject, payload, hdr, send)

    # -- $JS.API.* ----------------------------------------------------------------------
    def _api(self, subject: str, payload: bytes, hdr: bytes | None, send: Send,
             reply: str | None) -> bool:
        """A $JS.API.> subject: False only for an unserved direct get or pull request."""
        if subject == DIRECT_GET:
            return False
        if subject.startswith(DIRECT_GET_PREFIX):
            return self._direct_get(subject[len(DIRECT_GET_PREFIX):], payload, hdr, send)
        if subject.startswith(PULL_REQUEST_PREFIX):
            return self._pull_request(subject[len(PULL_REQUEST_PREFIX):], payload, hdr, reply,
                                      send)
        if subject.startswith(RESET_PREFIX):
            return self._consumer_reset(subject[len(RESET_PREFIX):], payload, hdr, send)
        cluster_type = cluster_only_type(subject)
        if cluster_type is not None:
            return self._cluster_only(cluster_type, subject, payload, send)
        if subject.startswith(CONSUMER_PREFIX):
            return self._consumer_api(subject, payload, hdr, send)
        resolved = self.streams.resolve(subject)
        if resolved is None:
            self._snapshot_request(subject, payload, reply, send)
            return True
        if api_level_too_high(hdr):
            response_type = resolved[0]
            send(None, gojson.encode(self.streams.error_response(
                response_type, api_errors.JSRequiredApiLevelErr())))
            return True
        answer = self.streams.answer(resolved, payload)
        send(None, answer)
        self._audit(subject, payload, answer)
        return True

    def _consumer_api(self, subject: str, payload: bytes, hdr: bytes | None,
                      send: Send) -> bool:
        resolved = self.consumers.resolve(subject)
        if resolved is None:
            return True                 # taken by $JS.API.>, unanswered
        if api_level_too_high(hdr):
            send(None, gojson.encode(self.consumers.error_response(
                resolved[0], api_errors.JSRequiredApiLevelErr())))
            return True
        with self.lock:
            answer = self.consumers.answer(resolved, payload, subject)
        self.streams.count(error=answer.find(b'"error":') >= 0)
        send(None, answer)
        self._audit(subject, payload, answer)
        return True

    def _cluster_only(self, response_type: str, subject: str, payload: bytes,
                      send: Send) -> bool:
        """A clustering subject (jsstore.api.cluster): one server needs a cluster for it."""
        answer = gojson.encode(schemas.ErrorResponse(
            type=response_type, error=api_errors.JSClusterRequiredErr().to_dict()))
        self.streams.count(error=True)
        send(None, answer)
        self._audit(subject, payload, answer)
        return True

    def _consumer_reset(self, rest: str, payload: bytes, hdr: bytes | None,
                        send: Send) -> bool:
        """$JS.API.CONSUMER.RESET.<stream>.<consumer>: served by the consumer (no consumer:
        unanswered, as nats-server's $JS.API.> takes the subject); answered, then the
        consumer delivers from where it was reset to."""
        stream, dot, name = rest.partition(".")
        with self.lock:
            consumer = self.js.consumers.find_locked(stream, name) if dot else None
            if consumer is None:
                return True
            send(None, self.consumers.reset(consumer, payload, hdr))
            consumer.gather()
        return True

    # -- consumers: pull requests, acks, flow control ---------------------------------------
    def _pull_request(self, rest: str, payload: bytes, hdr: bytes | None, reply: str | None,
                      send: Send) -> bool:
        """$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>: a pull request; its answers go to
        the reply subject on the bus (now and as messages arrive)."""
        stream, dot, name = rest.partition(".")
        with self.lock:
            consumer = self.js.consumers.find_locked(stream, name) if dot else None
            if consumer is None:
                return False            # nats-server has no subscription there: no responders
            if not reply:
                return True
            if api_level_too_high(hdr):
                send(pullrequests.required_api_level(), b"")
                return True
            consumer.request_next(reply, payload)
        return True

    def _ack(self, subject: str, payload: bytes, reply: str | None, send: Send) -> bool:
        """$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>: an ack."""
        with self.lock:
            consumer = self._ack_consumer_locked(subject.split("."))
            if consumer is None:
                return False
            if consumer.acknowledgements.process(subject, payload, reply or "") and reply:
                send(None, b"")         # the double ack: applied
        return True

    def ack_many(self, subjects: list[str]) -> None:
        """Plain acks (empty or ``+ACK``, no reply subject) of one read, under one lock:
        each consumer's in the order sent (Acknowledgements.ack_run) when all are v1 ack
        subjects (taken apart in C), else one by one in order."""
        with self.lock:
            parsed = plain_v1_acks(subjects)
            if parsed is None:
                for subject in subjects:
                    consumer = self._ack_consumer_locked(subject.split("."))
                    if consumer is not None:
                        consumer.acknowledgements.process(subject, b"")
                return
            find = self.js.consumers.find_locked
            for stream, name, stream_seqs, delivery_seqs, acked in parsed:
                consumer = find(stream, name)
                if consumer is not None:
                    consumer.acknowledgements.ack_run(stream_seqs, delivery_seqs, acked)

    def _ack_consumer_locked(self, tokens: list[str]):
        """The consumer an ack subject's tokens name (v1 or v2 form), or None."""
        if len(tokens) >= 11:
            stream, name = tokens[4], tokens[5]
        elif len(tokens) == 9:
            stream, name = tokens[2], tokens[3]
        else:
            return None
        return self.js.consumers.find_locked(stream, name)

    def pull_may_precede_acks(self, subject: str, payload: bytes) -> bool:
        """Whether the pull request on `subject` may be served before plain acks that
        came ahead of it (see PullRequests.may_precede_acks)."""
        stream, dot, name = subject[len(PULL_REQUEST_PREFIX):].partition(".")
        with self.lock:
            consumer = self.js.consumers.find_locked(stream, name) if dot else None
            return (consumer is not None and consumer.pull is not None
                    and consumer.pull.may_precede_acks(payload))

    def _flow_control(self, subject: str, hdr: bytes | None) -> bool:
        """$JS.FC.<stream>.<consumer>.<id>: a push client answered a flow control request."""
        tokens = subject.split(".")
        if len(tokens) != 5:
            return False
        with self.lock:
            consumer = self.js.consumers.find_locked(tokens[2], tokens[3])
            if consumer is None:
                return False
            if consumer.push is not None:
                consumer.push.process_flow_control(subject, hdr)
        return True

    def _audit(self, subject: str, request: bytes, response: bytes) -> None:
        """The $JS.EVENT.ADVISORY.API audit of one request, when someone listens."""
        js = self.js
        if js.bus.has_interest(AUDIT_SUBJECT):
            js.advise(advisories.api_audit(js.server_name, subject, request, response,
                                            now=js.clock()))

    def _snapshot_request(self, subject: str, payload: bytes, reply: str | None,
                          send: Send) -> bool:
        """STREAM.SNAPSHOT.<stream> and STREAM.RESTORE.<stream>; False for another subject."""
        rest = subject[len(schemas.API_PREFIX):]
        for prefix, method in (("STREAM.SNAPSHOT.", "snapshot"), ("STREAM.RESTORE.", "restore")):
            if rest.startswith(prefix):
                name = rest[len(prefix):]
                if not name or "." in name:
                    return False
                api = self.snapshots()
                if method == "snapshot":
                    answer = api.snapshot(name, payload, reply, send)
                else:
                    answer = api.restore(name, payload)
                if answer is not None:
                    send(None, answer)
                return True
        return False

    def _direct_get(self, rest: str, payload: bytes, hdr: bytes | None, send: Send) -> bool:
        name, dot, subject = rest.partition(".")
        if not name:
            return False
        suffix = subject if dot else None   # "S." is the subject form with an empty subject
        js = self.js
        with self.lock:
            stream = js.find_stream_locked(name)
            # without allow_direct nats-server has no subscription: nobody answers
            if stream is None or not stream.config.allow_direct:
                return False
            replies = direct_get(stream.store, name, suffix, hdr, payload, now=js.clock())
        for reply_hdr, reply_data in replies:
            send(reply_hdr or None, reply_data)   # b"": the message goes without headers
        return True

    # -- publishes ----------------------------------------------------------------------
    def _publish(self, subject: str, payload: bytes, hdr: bytes | None, send: Send) -> bool:
        with self.lock:
            answer = self.capture_locked(subject, payload, hdr)
        if answer is None:
            return False
        if answer is not NO_ANSWER:
            send(None, answer)
        return True

    def capture_locked(self, subject: str, payload: bytes, hdr: bytes | None) -> bytes | None:
        """A publish on a subject outside ``$JS.``, the lock held: stored in the stream
        that captures it, answered with its PubAck (or error); None when no stream
        captures the subject; NO_ANSWER when the publisher is to get nothing."""
        js = self.js
        stream = js.capturing_stream_locked(subject)
        if stream is None:
            return None
        try:
            if not hdr:
                answer = stream.publish_plain(subject, payload)
                if answer is not None:
                    return answer
            ack = js.publish_locked(stream, subject, hdr, payload)
            return b"" if ack is None else ack.to_json()   # staged: an empty answer
        except api_errors.ApiError as exc:
            if unanswered(exc):
                return NO_ANSWER
            return pub_error_json(stream.name, exc)
