"""The in-process back end (``--store DIR``): the store directory's JetStream answers the
same ``$JS.API`` requests nats-server answers, through ``JetStream.request_msgs``."""

from __future__ import annotations

import asyncio
import itertools
import os
import threading

from jsstore.aio.context import JetStreamContext
from jsstore.cli.answer import Answer
from jsstore.cli.errors import CliError, UsageError
from jsstore.jetstream import account as jetstream
from jsstore.wire.bus import Msg

PULL_PREFIX = "$JS.API.CONSUMER.MSG.NEXT."
_inboxes = itertools.count(1)


class LocalBackend:
    """A store directory opened in this process (created when missing)."""

    where = "store"

    def __init__(self, directory: str):
        parent = os.path.dirname(os.path.abspath(directory))
        if not os.path.isdir(parent):
            raise CliError(f"store directory {directory!r}: {parent!r} does not exist")
        try:
            self.js = jetstream.open(directory, timers=False)
        except OSError as exc:
            raise CliError(f"store directory {directory!r}: {exc}") from None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.context: JetStreamContext | None = None

    def run(self, coro):
        """Run a coroutine of the asyncio API (``jetstream()``'s) to its end."""
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
        return self.loop.run_until_complete(coro)

    def jetstream(self) -> JetStreamContext:
        """The store as jsstore.aio's JetStreamContext (nats-py's names), for ``run``."""
        if self.context is None:
            self.context = JetStreamContext(self.js, owns=False)
        return self.context

    def request_all(self, subject: str, payload: bytes = b"",
                    headers: dict | None = None) -> list[Answer]:
        """Every answer to a request, in order (empty when nothing serves the subject)."""
        return [Answer.from_block(m.subject, m.data, m.hdr, m.reply)
                for m in self.js.request_msgs(subject, payload, headers or None)]

    def request(self, subject: str, payload: bytes = b"", headers: dict | None = None,
                timeout: float = 5.0) -> Answer:
        """The first answer; CliError "no responders" when nothing answers."""
        answers = self.request_all(subject, payload, headers)
        if not answers:
            raise CliError(f"no responders available for request on {subject}")
        return answers[0]

    def publish(self, subject: str, payload: bytes, headers: dict | None = None) -> None:
        """A message sent without waiting for an answer (a stream still stores it)."""
        self.request_all(subject, payload, headers)

    def fetch(self, stream: str, consumer: str, batch: int, timeout: float) -> list[Answer]:
        """Up to `batch` messages of a pull consumer: what it has now (a store directory
        has no publisher to wait for)."""
        answers = self.request_all(f"{PULL_PREFIX}{stream}.{consumer}",
                                   b'{"batch":%d,"no_wait":true}' % batch)
        if not answers:
            raise CliError(f"no responders: consumer {consumer!r} of stream {stream!r} "
                           "does not exist")
        return [a for a in answers if not a.status]

    def subscribe(self, subject: str, count: int, timeout: float, each):
        raise UsageError("sub listens to live traffic: it needs --server")

    def receive_chunks(self, subject: str, body: bytes, timeout: float, each) -> Answer:
        """A request whose answer is followed by chunks on its deliver subject (a stream
        snapshot): each chunk handed to `each` and acked, until the empty one that ends it.
        The request's answer is returned once the transfer ended."""
        inbox = f"_INBOX.snapshot.{next(_inboxes)}"
        ended = threading.Event()
        failed: list[str] = []

        def on_chunk(msg: Msg) -> None:
            if not msg.data:
                status = Answer.from_block(msg.subject, b"", msg.hdr)
                if status.status not in ("", "204"):
                    failed.append(f"{status.status} {status.description}".strip())
                ended.set()
                return
            each(bytes(msg.data))
            if msg.reply:
                self.js.request_msgs(msg.reply, b"")
        sub = self.js.bus.subscribe(inbox, on_chunk)
        try:
            answer = self.request(subject, body.replace(b"{INBOX}", inbox.encode()))
            answer.json()               # an error answer: no transfer follows
            if not ended.wait(timeout):
                raise CliError(f"snapshot transfer stalled ({timeout:g}s without a chunk)")
        finally:
            sub.unsubscribe()
        if failed:
            raise CliError(f"snapshot failed: {failed[0]}")
        return answer

    def close(self) -> None:
        try:
            if self.context is not None:
                self.run(self.context.close())
            if self.loop is not None:
                self.loop.close()
        finally:
            self.js.close()
