"""Mirrors and sources between the streams of one JetStream, as nats-server runs them.

nats-server feeds a mirror or a source through an ordered push consumer on the origin
stream; here the origin is in the same process, so a link reads the origin's store to
catch up and then follows it through the origin's stored-message listener, synchronously,
under the JetStream lock.

A **mirror** stores the origin's messages at the SAME sequences with the same timestamps
(``store_raw_msg``). Sequences the mirror does not receive (deleted in the origin, or not
matching its filter) become skipped sequences; an empty mirror starts at the first sequence
it receives (its store is compacted up to it, as nats-server purges to the consumer's
starting point). A mirror resumes after its own last sequence.

A **source** publishes each message into the sourcing stream through its publish path
(Msg-Id dedupe, counters, limits), with the origin's ``Nats-Stream-Source`` header removed,
the ``Nats-Expected-*`` headers removed, its subject mapped by the source's transforms, and
the header nats-server 2.15 adds::

    Nats-Stream-Source: <origin> <origin seq> <filter|srcs> <dest|dests> <origin subject> <ident>

(``>`` for no filter or destination; several transforms joined by form feeds; ``ident`` names
the origin stream's incarnation.) A source resumes after the last origin sequence found in
those headers, scanning the stream backwards as nats-server's startingSequenceForSources
does, so a reopen neither duplicates nor loses messages; without one it starts at
opt_start_seq, at opt_start_time, or at the origin's first message.

A link whose origin does not exist (yet, or any more) waits for it and reports nats-server's
"stream not found" error in its info; the copied messages stay.
"""

from __future__ import annotations

import base64
import hashlib
import logging

from jsstore._core.storage.subjects import _subject_matches
from jsstore.errors import StoreError
from jsstore.gocompat.times import parse_time_ns
from jsstore.stream.config import StreamSource, source_index_parts
from jsstore.stream.counters import STREAM_SOURCE
from jsstore.stream.transform import SubjectTransform
from jsstore.wire import apierrors as api_errors
from jsstore.wire import headers as header_block

log = logging.getLogger(__name__)

FULL_WILDCARD = ">"
EXPECTED_PREFIX = "Nats-Expected-"   # headers a sourced message loses (not validated again)
IDENT_LENGTH = 8


def index_name(source: StreamSource) -> str:
    """nats-server's index name of a source: ``<name> <sources> <destinations>``."""
    return " ".join(source_index_parts(source))


def parse_source_header(value: str) -> tuple[str, int] | None:
    """(index name, origin sequence) of a ``Nats-Stream-Source`` value in the space-separated
    form, or None for another form (the old ack-reply one) or a malformed one."""
    fields = value.split(" ")
    if len(fields) < 4 or not fields[1].isdigit():
        return None
    return f"{fields[0]} {fields[2]} {fields[3]}", int(fields[1])


def origin_ident(origin) -> str:
    """A short name for one incarnation of an origin stream (its name and creation time):
    a stream deleted and created again under the same name gets another one."""
    digest = hashlib.sha256(f"{origin.name} {origin.created}".encode()).digest()
    return base64.urlsafe_b64encode(digest).decode()[:IDENT_LENGTH]


def strip_source_headers(hdr: bytes | None) -> bytes | None:
    """A sourced message's headers before the new Nats-Stream-Source is added: without the
    origin's own Nats-Stream-Source and without any Nats-Expected-* header."""
    if not hdr:
        return hdr
    return strip_expected_headers(header_block.remove_header(hdr, STREAM_SOURCE))


def strip_expected_headers(hdr: bytes | None) -> bytes | None:
    """`hdr` without any Nats-Expected-* header (mirrored and sourced messages are not
    checked against them again, and nats-server does not store them there)."""
    if not hdr or EXPECTED_PREFIX.encode() not in hdr:
        return hdr
    try:
        keys = {key for key, _ in header_block.parse(hdr).fields if key.startswith(EXPECTED_PREFIX)}
    except header_block.HeaderError:
        return hdr
    for key in keys:
        hdr = header_block.remove_headers(hdr, key)
        if not hdr:
            break
    return hdr


class Link:
    """One mirror or one source of a stream: where it reads from and how far it got."""
    __slots__ = ("target", "config", "mirror", "iname", "parts", "filters", "transforms",
                 "position", "lag", "last_contact", "error", "origin", "ident", "busy")

    def __init__(self, target: str, config: StreamSource, mirror: bool):
        self.target = target            # the mirroring / sourcing stream's name
        self.config = config            # its StreamSource
        self.mirror = mirror            # True: a mirror; False: a source
        self.parts = source_index_parts(config)
        self.iname = " ".join(self.parts)
        # the origin subjects it takes and, for each, the transform (None: kept as is)
        if config.subject_transforms:
            self.filters = [t.src or FULL_WILDCARD for t in config.subject_transforms]
            self.transforms = [SubjectTransform(t.src or FULL_WILDCARD, t.dest) if t.dest
                               else None for t in config.subject_transforms]
        else:
            self.filters = [config.filter_subject or FULL_WILDCARD]
            self.transforms = [None]
        self.position: int | None = None  # the last origin sequence taken (None: not known)
        self.lag = 0                    # origin messages still to take, when last known
        self.last_contact = 0           # Unix ns the origin was last reachable (0: never)
        self.error: api_errors.ApiError | None = None  # why it is not following
        self.origin = None              # the origin Stream while following it
        self.ident = ""                 # the origin's incarnation (origin_ident)
        self.busy = False               # catching up: live notifications are read by the loop

    @property
    def key(self) -> tuple[bool, str]:
        return self.mirror, self.iname

    @property
    def filter_arg(self):
        return self.filters[0] if len(self.filters) == 1 else self.filters

    def map_subject(self, subject: str) -> str | None:
        """The subject the message gets, or None when the link does not take it."""
        for pattern, transform in zip(self.filters, self.transforms):
            if transform is not None:
                mapped = transform.match(subject)
                if mapped is not None:
                    return mapped
            elif pattern == FULL_WILDCARD or _matches(subject, pattern):
                return subject
        return None

    def header_value(self, seq: int, subject: str) -> str:
        name, srcs, dests = self.parts
        return f"{name} {seq} {srcs} {dests} {subject} {self.ident}"


def _matches(subject: str, pattern: str) -> bool:
    return bool(_subject_matches(subject, pattern))


class SourceManager:
    """Every mirror and source of a JetStream's streams. JetStream calls ``attach`` for
    each stream that exists, is added, recovered or updated and ``detach`` for a deleted
    one, under its lock."""

    def __init__(self, js):
        self.js = js
        self.streams: dict = {}              # name -> the attached Stream
        self.links: dict[str, list[Link]] = {}  # stream name -> its mirror or sources
        self.following: dict[str, list[Link]] = {}  # origin name -> links reading it

    # -- wiring -------------------------------------------------------------------------
    def attach(self, stream) -> None:
        """Take a stream in: (re)wire its own mirror and sources, and connect the links
        waiting for it as their origin."""
        name = stream.name
        previous = self.streams.get(name)
        if previous is not stream:
            if previous is not None and self._on_stored in previous.listeners:
                previous.listeners.remove(self._on_stored)
            self.streams[name] = stream
            stream.listeners.append(self._on_stored)
        self._rewire(stream)
        self._index()
        for link in list(self.following.get(name, ())):
            if link.origin is not stream:
                self._connect(link, stream)
        for link in self.links.get(name, ()):
            origin = self.streams.get(link.config.name)
            if link.origin is None and origin is not None and link.config.external is None:
                self._connect(link, origin)

    def detach(self, name: str) -> None:
        """A stream is being deleted: stop its links; links reading it keep their data and
        report the origin as not found."""
        stream = self.streams.pop(name, None)
        if stream is not None and self._on_stored in stream.listeners:
            stream.listeners.remove(self._on_stored)
        self.links.pop(name, None)
        now = self.js.clock()
        for link in self.following.get(name, ()):
            if link.origin is not None:
                link.lag = self._lag(link)
                link.last_contact = now
            link.origin = None
            link.error = api_errors.JSStreamNotFoundErr()
        self._index()

    def _rewire(self, stream) -> None:
        cfg = stream.config
        wanted = [(True, cfg.mirror)] if cfg.mirror is not None else []
        wanted += [(False, source) for source in cfg.sources]
        old = {link.key: link for link in self.links.get(stream.name, ())}
        links, unplaced = [], []
        for mirror, source in wanted:
            link = old.pop((mirror, index_name(source)), None)
            if link is None:
                link = Link(stream.name, source, mirror)
                unplaced.append(link)
            link.config = source
            links.append(link)
        if links:
            self.links[stream.name] = links
        else:
            self.links.pop(stream.name, None)
        for link in unplaced:
            origin = self.streams.get(link.config.name)
            if link.config.external is None and origin is None:
                link.error = api_errors.JSStreamNotFoundErr()
            if link.mirror and stream.store.last_seq > 0:
                link.position = stream.store.last_seq
        sources = [link for link in unplaced if not link.mirror]
        if sources and stream.store.msgs:
            self._recover_positions(stream, sources)

    def _index(self) -> None:
        following: dict[str, list[Link]] = {}
        for links in self.links.values():
            for link in links:
                following.setdefault(link.config.name, []).append(link)
        self.following = following

    @staticmethod
    def _recover_positions(stream, links: list[Link]) -> None:
        """The last origin sequence of each source, from the newest Nats-Stream-Source
        header of its index name (nats-server's startingSequenceForSources)."""
        missing = {link.iname: link for link in links}
        store = stream.store
        seq = store.last_seq
        while missing and seq >= max(store.first_seq, 1):
            try:
                msg = store.load_prev_msg(">", seq)
            except (StoreError, ValueError):
                break
            value = header_block.get_str(msg.hdr, STREAM_SOURCE) if msg.hdr else None
            found = parse_source_header(value) if value else None
            if found is not None and found[0] in missing:
                missing.pop(found[0]).position = found[1]
            seq = msg.seq - 1

    def _start_position(self, link: Link, origin) -> int:
        """The origin sequence before the first one a new link takes."""
        config = link.config
        if config.opt_start_seq > 0:
            return config.opt_start_seq - 1
        if config.opt_start_time:
            try:
                start = origin.store.get_seq_from_time(parse_time_ns(config.opt_start_time))
            except ValueError:
                start = origin.store.first_seq
            return max(start, 1) - 1
        return max(origin.store.first_seq, 1) - 1

    def _connect(self, link: Link, origin) -> None:
        link.origin = origin
        link.error = None
        link.ident = origin_ident(origin)
        link.last_contact = self.js.clock()
        if link.position is None:
            link.position = self._start_position(link, origin)
        self._catch_up(link)

    # -- copying ------------------------------------------------------------------------
    def _catch_up(self, link: Link) -> None:
        origin, target = link.origin, self.streams.get(link.target)
        if origin is None or target is None or link.busy:
            return
        link.busy = True
        try:
            cursor = link.position + 1
            store = target.store
            if link.mirror and store.msgs == 0 and cursor - 1 > store.last_seq:
                store.compact(cursor)     # an empty mirror starts where its origin does
            while link.origin is origin:
                try:
                    msg, seq = origin.store.load_next_msg(link.filter_arg, cursor)
                except (StoreError, ValueError):
                    break
                self._take(link, target, seq, msg.subject,
                           bytes(msg.hdr) if msg.hdr else None, bytes(msg.msg), msg.ts)
                cursor = seq + 1
        finally:
            link.busy = False

    def _on_stored(self, origin, seq: int, subject: str, hdr, payload, ts: int) -> None:
        for link in self.following.get(origin.name, ()):
            if link.origin is origin and not link.busy:
                target = self.streams.get(link.target)
                if target is not None:
                    link.busy = True
                    try:
                        self._take(link, target, seq, subject, hdr, payload, ts)
                    finally:
                        link.busy = False

    def _take(self, link: Link, target, seq: int, subject: str, hdr, payload, ts: int) -> None:
        if seq <= link.position:
            return
        mapped = link.map_subject(subject)
        if mapped is None:
            return
        link.position = seq
        link.last_contact = self.js.clock()
        if link.mirror:
            self._mirror(target, seq, mapped, strip_expected_headers(hdr), payload, ts)
        else:
            self._source(link, target, seq, subject, mapped, hdr, payload)

    def _mirror(self, target, seq: int, subject: str, hdr, payload, ts: int) -> None:
        store = target.store
        last = store.last_seq
        if seq <= last:
            return                        # the mirror holds that sequence already
        try:
            if seq > last + 1:
                if store.msgs == 0:
                    store.compact(seq)
                else:
                    store.skip_msgs(last + 1, seq - last - 1)
            store.store_raw_msg(subject, hdr, payload, seq, ts)
        except StoreError as exc:
            log.warning("mirror %s: message %d not stored: %s", target.name, seq, exc)
            return
        on_due = getattr(target, "on_due", None)
        if on_due is not None and target.config.max_age > 0 and store.msgs == 1:
            on_due(ts + target.config.max_age)   # the first message to age out
        for listener in list(target.listeners):
            listener(target, seq, subject, hdr, payload, ts)

    def _source(self, link: Link, target, seq: int, origin_subject: str, subject: str,
                hdr, payload) -> None:
        hdr = header_block.append_header(strip_source_headers(hdr), STREAM_SOURCE,
                                         link.header_value(seq, origin_subject))
        now = self.js.clock()
        try:
            target.apply(target.check(subject, hdr, payload, now, internal=True), now)
        except api_errors.ApiError as exc:
            log.warning("stream %s: message %d of source %s not stored: %s", target.name,
                        seq, link.config.name, exc.description)

    # -- info ---------------------------------------------------------------------------
    def _lag(self, link: Link) -> int:
        origin = link.origin
        if origin is None:
            return link.lag
        start = (link.position or 0) + 1
        if start > origin.store.last_seq:
            return 0
        try:
            return origin.store.num_pending(start, link.filter_arg)[0]
        except (StoreError, ValueError):
            return link.lag

    def _info(self, link: Link, now: int) -> dict:
        config = link.config
        info: dict = {"name": config.name}
        if config.external is not None:
            info["external"] = {"api": config.external.api, "deliver": config.external.deliver}
        info["lag"] = self._lag(link)
        if not link.mirror and link.position:
            info["seq"] = link.position
        if link.origin is not None:
            info["active"] = 0            # in process: the origin is in contact right now
        else:
            info["active"] = now - link.last_contact if link.last_contact else -1
        if link.error is not None:
            info["error"] = link.error.to_dict()
        if config.filter_subject:
            info["filter_subject"] = config.filter_subject
        if config.subject_transforms:
            info["subject_transforms"] = [{"src": t.src, "dest": t.dest}
                                          for t in config.subject_transforms]
        return info

    def mirror_info(self, name: str) -> dict | None:
        """The stream's mirror as nats-server's StreamSourceInfo JSON fields, or None."""
        with self.js.lock:
            now = self.js.clock()
            for link in self.links.get(name, ()):
                if link.mirror:
                    return self._info(link, now)
            return None

    def sources_info(self, name: str) -> list[dict]:
        """The stream's sources as StreamSourceInfo JSON fields, in configuration order."""
        with self.js.lock:
            now = self.js.clock()
            return [self._info(link, now) for link in self.links.get(name, ()) if not link.mirror]
