"""Which publishes of a client the core's plain publish run may take
(``jsstore._core.plainpub``): the Python side of that run.

A client's read that starts with plain PUBs -- no headers, on a subject nobody subscribes
to, captured by a stream that does nothing with a message beyond storing it, answered (if
at all) on the publisher's own subscription -- has them stored and answered by the core
without a Python object per message; the run stops at the first frame that needs more, and
that frame and everything after it go to the parser and the Python path as before.  What
the core caches for subjects and replies holds while the account's subscriptions and
streams stay the same (``SubjectTable.version``, the JetStream's ``routes_version``); a
stream and a reply are checked again on every run.
"""

from __future__ import annotations

from jsstore._core.plainpub import PlainPublisher
from jsstore.server.permissions import RESERVED_REPLY

JS_PREFIX = "$JS."


def _matches_nothing(subject: str) -> bool:
    return ".." in subject or subject[:1] == "." or subject[-1:] == "."


class PlainRuns:
    """One client's plain publish runs."""

    def __init__(self, client):
        self.client = client
        self.core = PlainPublisher(self._stream_for, self._target, self._reply_to,
                                   self._replies_under, self._reply_ok)

    def usable(self) -> bool:
        """Whether this read may start with a run (the caller has checked _quick)."""
        client = self.client
        return (client.authorized and not client.acks and client.server.durable is None
                and client.parser.error is None)

    def run(self, data):
        """Store and answer the leading plain PUBs of `data` (after what the parser holds
        of the last read); returns what the parser is to read instead."""
        client = self.client
        account = client.account
        router = account.router
        parser = client.parser
        if parser.pending:      # a frame the last read began: read on from its start
            data = bytes(parser.pending) + bytes(data)
            parser.pending = bytearray()
        key = (account, account.table.version, router.js.routes_version)
        with router.lock:
            consumed, msgs, size, answered, answered_size, failure = self.core.run(
                data, client, key, parser.max_payload, parser.max_control_line)
        if msgs:
            client.tally_in(msgs, size)
        if answered:
            client.tally_out(answered, answered_size)
        if failure is not None:
            client.internal_error(("PUB", "plain publish run"))
        return data[consumed:] if consumed else data

    # -- what the core asks ---------------------------------------------------------------
    def _stream_for(self, subject: str):
        """The stream a plain PUB on `subject` may be stored in by the core, or None."""
        account = self.client.account
        if (subject.startswith(JS_PREFIX) or _matches_nothing(subject)
                or account.table.has_interest(subject)):
            return None
        try:
            subject.encode()
        except UnicodeEncodeError:      # (bytes that are not UTF-8: the Python path)
            return None
        return account.router.js.capturing_stream_locked(subject)

    def _target(self, stream):
        """For a stream the run is about to store into: what the core needs, or None when
        a publish into it needs Python (see Stream.publish_plain, which this agrees with)."""
        js = self.client.account.router.js
        store = stream.store
        if (js.closed or js.find_stream_locked(stream.name) is not stream
                or not stream.stores_only() or stream.usage_check is not None
                or "store_msg" in vars(store)):     # (sync always: held for an fsync)
            return None
        cfg = stream.config
        return (store, stream.ack_head(), stream.listeners,
                stream.on_due if cfg.max_age > 0 else None, cfg.max_age,
                cfg.max_msg_size, stream.dedupe_loaded)

    def _reply_to(self, reply: str):
        """(subscription, b" <sid> ") when the publisher's own subscription, alone, takes
        answers sent to `reply`; else None."""
        client = self.client
        if reply.startswith(RESERVED_REPLY):
            return None
        subs = client.account.table.matching(reply)     # (no queue member picked)
        if len(subs) != 1:
            return None
        sub = subs[0]
        if sub.client is not client or sub.queue:
            return None
        return self._answered_by(sub)

    def _replies_under(self, head: str):
        """(subscription, b" <sid> ") when the publisher's own subscription to
        ``<head>.*`` alone takes answers sent to any ``<head>.<token>`` (an inbox); else
        None."""
        if (head + ".").startswith(RESERVED_REPLY):
            return None
        sub = self.client.account.table.sole_star(head)
        if sub is None or sub.client is not self.client:
            return None
        return self._answered_by(sub)

    @staticmethod
    def _answered_by(sub):
        try:
            return sub, b" %s " % sub.sid.encode()
        except UnicodeEncodeError:
            return None

    def _reply_ok(self, sub) -> bool:
        client = self.client
        return (not sub.max and not client.closed and client.guard is None
                and client.subs.get(sub.sid) is sub)
