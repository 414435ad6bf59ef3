"""One consumer of a stream: what it delivers next, and what its acknowledgements mean.

The semantics are nats-server's ``consumer`` (server/consumer.go), run synchronously:

* ``sseq``/``dseq`` are the next stream and delivery (consumer) sequences.  Every delivery
  attempt takes a new delivery sequence; a redelivery keeps its stream sequence.
* The pending and ack-floor state is the consumer store's ``AckState`` (the Cython core):
  a delivery is ``update_delivered``, an ack ``update_acks``; ``consumer info`` reports its
  delivered pair and ack floor, as nats-server does.  Beside it the consumer keeps its own
  ack floor (``adflr``/``asflr``, what decides whether an ack or nak is stale), the
  redelivery counts (``rdc``) and the redelivery queue (``rdq``).
* Timers (ack wait and backoff, pull request expiry, heartbeats, inactivity, pause, pins)
  are due times in Unix ns on the owner's clock; ``tick(now)`` runs what is due and
  returns when the next thing is.  Nothing sleeps.
* Messages go out through the owner's bus (a delivery is a ``Msg`` whose ``to`` is the
  pull request's reply or the deliver subject, carrying the stored message's subject and
  the ack reply subject), or to the sink of an embedded fetch.

Where jsstore differs: the pending timestamps written to ``o.dat`` are delivery times
(nats-server writes the message's own timestamp there and keeps delivery times in
memory only), so the ack wait runs from the delivery across a restart too.

Delivery (gather, the next message, deliverMsg) lives in
``consumerdelivery.DeliveryMixin``, acks and redelivery in ``consumeracks.AckMixin``, pull
requests in ``consumerpull.PullMixin``, push delivery (interest, heartbeats, flow control,
replay and rate pacing) in ``consumerpush.PushMixin``.  Every method runs
under the owning JetStream's lock.
"""

from __future__ import annotations

import random
from collections import OrderedDict

from jsstore.consumer import events as consumerevents
from jsstore.stream.advisories import ADVISORY_PREFIX
from jsstore._core.subjects import _subject_matches, is_subset_match
from jsstore.gocompat.times import parse_time_ns
from jsstore.wire.bus import Msg
from jsstore.consumer.acknowledgements import AckMixin
from jsstore.consumer.delivery import DeliveryMixin
from jsstore.consumer.pull import PullMixin
from jsstore.consumer.push import PushMixin
from jsstore.consumer.acknowledgements import TERM_LIMITS_REASON
from jsstore.errors import StoreError

from jsstore.gocompat.durations import MILLISECOND as MS, SECOND

ACK_WAIT_DELAY = MS                     # ackWaitDelay: lets a burst expire together
DELETE_WAIT_DEFAULT = 5 * SECOND        # JsDeleteWaitTimeDefault (ephemerals)
PINNED_TTL_DEFAULT = 120 * SECOND       # JsDefaultPinnedTTL


def gather_filters(config) -> list[str]:
    """filter_subject and filter_subjects as one list (empty: every subject)."""
    filters = list(config.filter_subjects or ())
    if config.filter_subject:
        filters.append(config.filter_subject)
    return filters


def sample_frequency(text: str | None) -> int:
    """The percentage of acks to sample ("80%" or "80"); 0 for none or a bad value."""
    if not text:
        return 0
    try:
        return int(text.removesuffix("%"))
    except ValueError:
        return 0


def rfc3339_ns(text: str | None) -> int:
    """Unix ns of an RFC 3339 config time; 0 for none (or Go's zero time)."""
    if not text:
        return 0
    ns = parse_time_ns(text)
    return ns if ns > 0 else 0


class Consumer(DeliveryMixin, AckMixin, PullMixin, PushMixin):
    """A consumer of one stream (pull when it has no deliver_subject, else push)."""

    def __init__(self, js, stream, name: str, config, store, created_ns: int):
        self.js = js                    # the owning JetStream: bus, clock, timers, advisories
        self.stream = stream            # jsstore.stream.stream.Stream
        self.name = name
        self.store = store              # the ConsumerStore
        self.acks = store.ack_state     # its AckState, read directly (changes go via store)
        self.created = created_ns
        self.closed = False
        self.sseq = 1                   # next stream sequence to look at
        self.dseq = 1                   # next delivery sequence
        self.adflr = 0                  # consumer's ack floor: delivery sequence
        self.asflr = 0                  # ... and stream sequence
        self.rdc: dict[int, int] = {}   # stream seq -> redeliveries so far
        self.rdq: OrderedDict[int, None] = OrderedDict()  # queued for redelivery, in order
        self.npc = 0                    # messages left to deliver (num_pending)
        self.npf = 0                    # stream seq npc is valid up to
        self.lss: list[int] | None = None  # last_per_subject start: seqs still to deliver
        self.lss_resume = 0             # ... and where to carry on after them
        self.ldt = 0                    # Unix ns of the last delivery (0: none)
        self.lat = 0                    # Unix ns of the last ack (0: none)
        self.ptmr_due = 0               # when pending acks are next checked (0: no timer)
        self.dtmr_due = 0               # when inactivity is next checked (0: no timer)
        self.pause_due = 0              # when a pause ends (0: not paused)
        self.pin_id = ""                # pinned_client: the current pin
        self.pinned_ts = 0
        self.pin_due = 0                # when the pin expires
        self._configure(config)
        self._init_pull()
        self._init_push()
        if store.has_state():
            self._apply_state(store.state())
        else:
            self._select_starting_seq()
        self._stream_num_pending()
        if self.dthresh > 0 and (self.is_pull or not self.active):
            self._set_dtmr(self.js.clock() + self.dthresh)
        self._update_pause_state()

    # -- configuration --------------------------------------------------------------------
    def _configure(self, config) -> None:
        self.config = config
        self.filters = gather_filters(config)
        # what the store's filtered loads take: all, one filter, or a list
        self.load_filter = (">" if not self.filters else
                            self.filters[0] if len(self.filters) == 1 else list(self.filters))
        self.ack_policy = config.ack_policy or "none"
        self.explicit = self.ack_policy == "explicit"
        self.ack_wait = config.ack_wait or 0
        self.backoff = list(config.backoff or ())
        self.maxdc = max(config.max_deliver or 0, 0)
        self.maxp = config.max_ack_pending or 0
        self.sfreq = sample_frequency(config.sample_freq)
        self.is_pull = not config.deliver_subject
        self.headers_only = bool(config.headers_only)
        self.pinned_client = config.priority_policy == "pinned_client"
        # pull requests need no pins, priorities or overflow checks
        self.plain_pull = self.is_pull and (config.priority_policy or "none") == "none"
        self.ack_prefix = f"$JS.ACK.{self.stream.name}.{self.name}."
        # advisories sent per ack are only built when someone listens
        self.naked_subject = f"{ADVISORY_PREFIX}.CONSUMER.MSG_NAKED.{self.stream.name}.{self.name}"
        self.terminated_subject = (f"{ADVISORY_PREFIX}.CONSUMER.MSG_TERMINATED."
                                   f"{self.stream.name}.{self.name}")
        self._update_inactive_threshold()

    @property
    def durable(self) -> bool:
        return bool(self.config.durable_name)

    def _update_inactive_threshold(self) -> None:
        threshold = self.config.inactive_threshold or 0
        jitter = 100 * MS + random.randrange(900) * MS
        if not self.durable and threshold <= 0:
            self.dthresh = DELETE_WAIT_DEFAULT + jitter
        elif threshold > 0:
            self.dthresh = threshold + jitter if self.is_pull else threshold
        else:
            self.dthresh = 0

    def is_equal_or_subset(self, subject: str) -> bool:
        """isEqualOrSubsetMatch: one of the filters lies inside `subject` (none: False)."""
        return any(f == subject or is_subset_match(f, subject) for f in self.filters)

    def is_filtered_match(self, subject: str) -> bool:
        if not self.filters:
            return True
        return any(_subject_matches(subject, f) for f in self.filters)

    # -- start and recovery ---------------------------------------------------------------
    def _select_starting_seq(self) -> None:
        """selectStartingSeqNo: where a new consumer starts."""
        cfg, store = self.config, self.stream.store
        state = store.fast_state()
        first, last = state.first_seq, state.last_seq
        start_seq = cfg.opt_start_seq or 0
        policy = cfg.deliver_policy or "all"
        if start_seq:
            sseq = start_seq
        elif policy == "all":
            sseq = first
        elif policy == "last":
            sseq = last if not self.filters else max(
                [store.filtered_state(1, f).last for f in self.filters] + [0])
        elif policy == "last_per_subject":
            if (self.stream.config.max_msgs_per_subject or 0) == 1:
                sseq = first
            else:
                seqs = store.multi_last_seqs(self.filters or [">"], 0, 0)
                self.lss_resume = last
                self.lss = list(seqs) if seqs else None
                sseq = seqs[0] if seqs else last
        elif cfg.opt_start_time:
            sseq = store.get_seq_from_time(rfc3339_ns(cfg.opt_start_time))
            if self.filters:
                nearest = last
                for f in self.filters:
                    found = store.filtered_state(first, f).first
                    if sseq <= found < nearest:
                        nearest = found
                if sseq < nearest < last:
                    sseq = nearest
        else:                                   # new
            sseq = last + 1
        if first == 0 and not start_seq:
            sseq = 1
        elif sseq > last and not start_seq:
            sseq = last + 1
        elif sseq < first:
            sseq = first
        self.sseq, self.dseq = sseq, 1
        self.adflr, self.asflr = 0, sseq - 1
        if sseq > 0:
            self.store.set_starting(sseq - 1)

    def _apply_state(self, state) -> None:
        """applyState: carry on from a stored state (a restart)."""
        self.sseq = state.delivered.stream_seq + 1
        self.dseq = state.delivered.consumer_seq + 1
        self.adflr = state.ack_floor.consumer_seq
        self.asflr = state.ack_floor.stream_seq
        self.rdc = dict(state.redelivered or {})
        if state.pending:
            delay = min(self.ack_wait + ACK_WAIT_DELAY, SECOND) if self.ack_wait else SECOND
            self._reset_ptmr(self.js.clock() + delay)
        first = self.stream.store.fast_state().first_seq
        for seq in [s for s in self.rdc if s < first]:
            del self.rdc[seq]

    # -- num pending ----------------------------------------------------------------------
    def _stream_num_pending(self) -> int:
        """Recount num_pending from the store (streamNumPending)."""
        count, valid_through = self.stream.store.num_pending(
            self.sseq, self.load_filter, (self.config.deliver_policy or "") == "last_per_subject")
        self.npc, self.npf = count, valid_through
        return count

    def num_pending(self) -> int:
        return self.npc if self.npc > 0 else 0

    def check_num_pending(self) -> int:
        """checkNumPending: never more than the stream can still hold for us."""
        state = self.stream.store.fast_state()
        if self.sseq > state.last_seq:
            self.npc = 0
        elif self.npc > 0:
            self.npc = min(self.npc, state.messages, state.last_seq - self.sseq + 1)
        return self.num_pending()

    # -- the stream told us ---------------------------------------------------------------
    def on_stored(self, seq: int, subject: str) -> None:
        """A new message was stored (processStreamSignal)."""
        if self.closed or not self.is_filtered_match(subject):
            return
        if seq > self.npf:
            self.npc += 1
        if seq >= self.sseq:
            self.gather()

    def on_removed(self, seq: int, subject: str) -> None:
        """A message was deleted (decStreamPending): one fewer to deliver, or, when it was
        waiting for an ack, it is terminated as deleted."""
        if self.closed:
            return
        if seq >= self.sseq and self.is_filtered_match(subject):
            self.npc -= 1
        if self.ack_policy != "none":
            entry = self.acks.pending_entry(seq)
            if entry is not None:
                self._process_term(seq, entry[0], self.delivery_count(seq),
                                   TERM_LIMITS_REASON, "")

    def on_purged(self, first_seq: int, last_seq: int, wider: bool) -> None:
        """The stream was purged up to first_seq (purge): drop what can no longer be
        delivered; `wider` when the purge was filtered (some pending may remain)."""
        if self.closed:
            return
        sseq = first_seq
        if sseq == 0 and not wider:
            sseq = last_seq + 1
        if self.sseq < sseq:
            self.sseq = sseq
        store = self.stream.store
        if self.asflr < sseq:
            self.asflr = sseq - 1
            for seq, (dseq, _ts) in self._pending_items():
                gone = seq <= self.asflr
                if not gone and wider:
                    try:
                        store.load_msg(seq)
                    except (StoreError, ValueError):
                        gone = True
                if gone:
                    if dseq > self.adflr:
                        self.adflr = dseq
                        if self.adflr > self.dseq:
                            self.dseq = self.adflr
                    self.rdc.pop(seq, None)
                    self._store_ack(dseq, seq)
        if not self.acks.num_pending:
            self.rdc.clear()
            self.adflr, self.asflr = self.dseq - 1, self.sseq - 1
        for seq in [s for s in self.rdq if s < self.sseq]:
            del self.rdq[seq]
        self._write_state()
        self._stream_num_pending()

    # -- timers ---------------------------------------------------------------------------
    def tick(self, now: int) -> int | None:
        """Run whatever is due at `now`; returns when something is next due (or None)."""
        if self.closed:
            return None
        if self.ptmr_due and now >= self.ptmr_due:
            self.check_pending(now)
        if self.pause_due and now >= self.pause_due:
            self.pause_due = 0
            self._advise_pause(now)
        if self.pin_due and now >= self.pin_due and self.pin_id:
            self.unpin("timeout", now)
        if self.is_pull:
            self.process_waiting(True, now)
        else:
            self._push_tick(now)
        self.gather()
        if self.dtmr_due and now >= self.dtmr_due:
            self._check_inactive(now)
            if self.closed:
                return None
        dues = [d for d in (self.ptmr_due, self.dtmr_due, self.pause_due, self.pin_due,
                            self._pull_due() if self.is_pull else self._push_due()) if d]
        return min(dues) if dues else None

    def _check_inactive(self, now: int) -> None:
        """deleteNotActive: delete an inactive consumer once its threshold passed."""
        self.dtmr_due = 0
        if self.dthresh <= 0:
            return
        if not self.is_pull:
            if self.active:
                return
        else:
            elapsed = now - self.waiting.last
            if elapsed < self.dthresh:
                self._set_dtmr(now + self.dthresh - elapsed)
                return
            self.process_waiting(True, now)
            if self.waiting:
                self._set_dtmr(now + self.dthresh)
                return
            delay = 0
            for seq, (_dseq, ts) in self._pending_items():
                deadline = ts + self._ack_wait_for(self.rdc.get(seq, 0)) + self.dthresh
                delay = max(delay, deadline - now)
            if delay > 0:
                self._set_dtmr(now + delay)
                return
        self.js._consumer_inactive(self)

    def _ack_activity(self) -> None:
        """suppressDeletion: an ack restarts the inactivity countdown."""
        if self.closed or self.dthresh <= 0 or (self.config.inactive_threshold or 0) <= 0:
            return
        now = self.js.clock()
        if self.is_pull:
            self.waiting.last = now
            if self.dtmr_due:
                self._set_dtmr(now + self.dthresh)
        elif self.dtmr_due:
            self._set_dtmr(now + self.dthresh)

    # -- pause ----------------------------------------------------------------------------
    def _update_pause_state(self) -> None:
        until = rfc3339_ns(self.config.pause_until)
        now = self.js.clock()
        self.pause_due = until if until > now else 0
        if self.pause_due:
            self._schedule(self.pause_due)

    def _advise_pause(self, now: int) -> None:
        self._advise(consumerevents.consumer_pause(
            self.stream.name, self.name, rfc3339_ns(self.config.pause_until), now=now))

    def paused(self, now: int) -> bool:
        return bool(self.pause_due) and now < self.pause_due

    # -- configuration updates ------------------------------------------------------------
    def update_config(self, config) -> None:
        """updateConfig: adopt an allowed change (checked by the caller)."""
        old = self.config
        self.store.update_config(_config_dict(config))
        old_filters = self.filters
        old_pause = old.pause_until
        self._configure(config)
        self._reconfigure_pull(old)
        self._reconfigure_push(old)
        if (config.ack_wait or 0) != (old.ack_wait or 0) and self.ptmr_due:
            self._reset_ptmr(self.js.clock() + 100 * MS)
        if (config.inactive_threshold or 0) != (old.inactive_threshold or 0):
            self.dtmr_due = 0
            if self.dthresh > 0:
                self._set_dtmr(self.js.clock() + self.dthresh)
        if config.pause_until != old_pause:
            self._update_pause_state()
            self._advise_pause(self.js.clock())
        if sorted(self.filters) != sorted(old_filters):
            self._stream_num_pending()
        self.gather()

    # -- advisories -----------------------------------------------------------------------
    def _advise(self, advisory: tuple[str, bytes]) -> None:
        subject, data = advisory
        if self.js.bus.has_interest(subject):
            self.js.bus.publish(Msg(subject, data))

    def _status(self, reply: str, hdr: bytes, sink=None) -> None:
        """A header-only status message to a request's reply subject."""
        out = Msg(reply, b"", hdr)
        if sink is not None:
            sink(out)
        else:
            self.js.bus.publish(out)

    # -- end ------------------------------------------------------------------------------
    def stop(self, *, delete: bool) -> None:
        """Stop delivering; with delete, answer waiting requests 409 Consumer Deleted and
        remove the store's files, else keep them (a clean shutdown)."""
        if self.closed:
            return
        if delete and self.is_pull:
            self.release_requests()
        self.closed = True
        if delete:
            self.store.delete()
        else:
            self.store.stop()


def _config_dict(config) -> dict:
    import msgspec
    return msgspec.to_builtins(config)
