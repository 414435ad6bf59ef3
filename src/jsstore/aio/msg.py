"""A message a consumer delivered, with nats-py's ``Msg`` face: ``subject``, ``data``,
``headers``, ``reply``, ``metadata`` read from the ack subject, and the awaitable
acknowledgements ``ack``, ``ack_sync``, ``nak``, ``in_progress`` and ``term``.

An acknowledgement is the ack subject's message handed to the JetStream, as a NATS client
publishes it; it runs on the worker thread and is applied when the call returns.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from typing import Optional

from jsstore.aio import errors
from jsstore.wire.headers import decode_headers

ACK = b"+ACK"
NAK = b"-NAK"
PROGRESS = b"+WPI"
TERM = b"+TERM"

_V1_TOKENS = 9          # $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>
_V2_TOKENS = 11         # $JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<the same five>


@dataclass(frozen=True)
class SequencePair:
    consumer: int
    stream: int


@dataclass(frozen=True)
class Metadata:
    """What a delivered message's ack subject tells (nats-py's Msg.Metadata)."""
    sequence: SequencePair
    num_pending: int
    num_delivered: int
    timestamp: datetime.datetime        # when the message was stored
    stream: str
    consumer: str
    domain: Optional[str] = None

    SequencePair = SequencePair

    @classmethod
    def from_reply(cls, reply: str | None) -> Metadata:
        """The metadata of an ack subject; errors.NotJSMessageError for anything else."""
        tokens = reply.split(".") if reply else []
        if tokens[:2] != ["$JS", "ACK"] or not (len(tokens) == _V1_TOKENS
                                                or len(tokens) >= _V2_TOKENS):
            raise errors.NotJSMessageError()
        domain = None
        if len(tokens) >= _V2_TOKENS:
            domain = "" if tokens[2] == "_" else tokens[2]
            tokens = tokens[:2] + tokens[4:]
        stamp = datetime.datetime.fromtimestamp(int(tokens[7]) / 1e9, datetime.timezone.utc)
        return cls(sequence=SequencePair(stream=int(tokens[5]), consumer=int(tokens[6])),
                   num_delivered=int(tokens[4]), num_pending=int(tokens[8]),
                   timestamp=stamp, stream=tokens[2], consumer=tokens[3], domain=domain)


class Msg:
    """One delivered message."""

    __slots__ = ("subject", "reply", "data", "hdr", "_acker", "_metadata", "_ackd",
                 "_headers")

    def __init__(self, subject: str, data: bytes, hdr: bytes | None, reply: str | None,
                 acker):
        self.subject = subject
        self.reply = reply
        self.data = data
        self.hdr = hdr                  # the raw NATS header block
        self._acker = acker             # sends an ack subject's message into the JetStream
        self._metadata = None
        self._ackd = False
        self._headers = False

    @property
    def headers(self) -> dict[str, str] | None:
        if self._headers is False:
            self._headers = decode_headers(self.hdr)
        return self._headers

    header = headers

    @property
    def metadata(self) -> Metadata:
        if self._metadata is None:
            self._metadata = Metadata.from_reply(self.reply)
        return self._metadata

    @property
    def is_acked(self) -> bool:
        """Whether a terminal acknowledgement (ack, nak, term) was sent."""
        return self._ackd

    def _check_reply(self) -> None:
        if not self.reply:
            raise errors.NotJSMessageError()
        if self._ackd:
            raise errors.MsgAlreadyAckdError(self)

    async def ack(self) -> None:
        """Acknowledge."""
        self._check_reply()
        await self._acker.send(self.reply, b"")
        self._ackd = True

    async def ack_sync(self, timeout: float = 1.0) -> Msg:
        """Acknowledge and wait for JetStream's confirmation (its reply message);
        errors.TimeoutError when the ack was not applied (a stale one)."""
        self._check_reply()
        answers = await self._acker.request(self.reply, b"")
        if not answers:
            raise errors.TimeoutError()
        self._ackd = True
        answer = answers[0]
        return Msg(answer.subject, answer.data, answer.hdr, None, self._acker)

    async def nak(self, delay: float | None = None) -> None:
        """Redeliver now, or after `delay` seconds."""
        self._check_reply()
        payload = NAK
        if delay:
            payload += b" " + json.dumps({"delay": int(delay * 10**9)}).encode()
        await self._acker.send(self.reply, payload)
        self._ackd = True

    async def in_progress(self) -> None:
        """Still working on it: the ack wait starts again (may be repeated)."""
        if not self.reply:
            raise errors.NotJSMessageError()
        await self._acker.send(self.reply, PROGRESS)

    async def term(self) -> None:
        """Never redeliver."""
        self._check_reply()
        await self._acker.send(self.reply, TERM)
        self._ackd = True

    def __repr__(self) -> str:
        return f"<Msg: subject='{self.subject}' reply='{self.reply}' data='{self.data[:10]!r}...'>"
