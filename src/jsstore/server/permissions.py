"""What a user may do, as nats-server decides it: publish and subscribe rules (allow and
deny), queue-group rules, and the responses a user without publish rights may send.

The configuration's forms (nats-server's parseUserPermissions): ``publish`` (or ``pub``,
``import``) and ``subscribe`` (``sub``, ``export``) each a subject, a list of subjects, or
``{allow, deny}``; a subscribe entry ``"foo.* q.*"`` is a subject and a queue-group
pattern; ``allow_responses`` (or ``publish_allow_responses``) ``true`` or ``{max,
expires}`` (defaults: 1 response, within 2 minutes; a negative value is no limit), which
also turns publishing off where no publish allow list was given.  They parse into a plain
dict ({publish, subscribe: {allow, deny}, responses: {max, expires}}); `compiled` turns it
into the `Permissions` that check subjects, shared by every client of the user.

The checks are nats-server's: a published subject must match an allowed rule (when there
is an allow list) and no denied one; a subscription's own wildcards are matched as the
tokens they are written as (canSubscribe looks its subject up among the rules, so "foo"
is not allowed by "foo.>"); a queue subscription matching queue rules is decided by its
group (a plain subscription never passes by a queue rule).  `Guard` is one client's
state: the reply subjects it may answer and the deny filter a wildcard subscription
loads (see `Guard.watch`).
"""

from __future__ import annotations

import time

from jsstore._core.storage.subjects import _subject_matches, filters_overlap, is_literal
from jsstore.gocompat.durations import SECOND, parse_go_duration
from jsstore.server.config import ConfigError

DEFAULT_RESPONSE_MAX = 1            # DEFAULT_ALLOW_RESPONSE_MAX_MSGS
DEFAULT_RESPONSE_EXPIRES = 120.0    # DEFAULT_ALLOW_RESPONSE_EXPIRATION, seconds
REPLY_PRUNE = 4096                  # reply subjects tracked between two prunings
CACHE_LIMIT = 1024                  # published subjects' verdicts cached per user

RESERVED_REPLY = "_R_."               # service import replies: no client may use them
_PUBLISH_KEYS = ("pub", "publish", "import")
_SUBSCRIBE_KEYS = ("sub", "subscribe", "export")
_RESPONSE_KEYS = ("publish_allow_responses", "allow_responses")


def publish_violation(subject: str) -> str:
    return f'Permissions Violation for Publish to "{subject}"'


def reply_violation(reply: str) -> str:
    return f'Permissions Violation for Publish with Reply of "{reply}"'


def subscribe_violation(subject: str, queue: str | None) -> str:
    if queue:
        return f'Permissions Violation for Subscription to "{subject}" using queue "{queue}"'
    return f'Permissions Violation for Subscription to "{subject}"'


# -- the configuration's forms ---------------------------------------------------------------
def parse_permissions(raw) -> dict | None:
    """A user's (or a default) ``permissions`` block as a dict: publish and subscribe as
    {allow, deny} (allow None: not restricted), responses as {max, expires (seconds)}."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ConfigError(f"Expected permissions to be a map/struct, got {raw!r}")
    out: dict = {}
    responses = None
    for key, value in raw.items():
        word = str(key).lower()
        if word in _PUBLISH_KEYS:
            out["publish"] = _subject_permission("publish", value)
        elif word in _SUBSCRIBE_KEYS:
            out["subscribe"] = _subject_permission("subscribe", value)
        elif word in _RESPONSE_KEYS:
            responses = _responses(value)
        else:
            raise ConfigError(f'Unknown field "{key}" parsing permissions')
    if responses is not None:
        out["responses"] = responses
        publish = out.get("publish") or {"allow": None, "deny": []}
        if publish["allow"] is None:
            publish = {**publish, "allow": []}      # the blanket allow is turned off
        out["publish"] = publish
    return out


def _subject_permission(kind: str, value) -> dict | None:
    if isinstance(value, dict):
        if not value:
            return None
        out = {"allow": None, "deny": []}
        for key, subjects in value.items():
            word = str(key).lower()
            if word not in ("allow", "deny"):
                raise ConfigError(f'Unknown field name "{key}" parsing subject permissions, '
                                  f"only 'allow' or 'deny' are permitted")
            out[word] = _subjects(f"{kind} {word}", subjects) or ([] if word == "deny"
                                                                  else None)
        return out
    return {"allow": _subjects(kind, value) or None, "deny": []}


def _subjects(key: str, value) -> list[str]:
    """A permission's subjects: one subject or an array of them."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ConfigError(f"{key}: expected a subject or an array of subjects, got {value!r}")


def _responses(value) -> dict | None:
    """allow_responses: true (the defaults), false (none), or {max, expires}."""
    if isinstance(value, bool):
        return ({"max": DEFAULT_RESPONSE_MAX, "expires": DEFAULT_RESPONSE_EXPIRES}
                if value else None)
    if not isinstance(value, dict):
        raise ConfigError("error parsing response permissions, expected a boolean or a map")
    out = {"max": DEFAULT_RESPONSE_MAX, "expires": DEFAULT_RESPONSE_EXPIRES}
    for key, raw in value.items():
        word = str(key).lower()
        if word in ("max", "max_msgs", "max_messages", "max_responses"):
            if isinstance(raw, bool) or not isinstance(raw, int):
                raise ConfigError(f"allow_responses {key}: expected an integer, got {raw!r}")
            if raw != 0:                # 0 keeps the default, a negative one: no limit
                out["max"] = raw
        elif word in ("expires", "expiration", "ttl"):
            if not isinstance(raw, str):
                raise ConfigError("error parsing expires, not a duration string")
            try:
                expires = parse_go_duration(raw)
            except ValueError as exc:
                raise ConfigError(f"error parsing expires: {exc}") from None
            if expires != 0:
                out["expires"] = expires / SECOND
        else:
            raise ConfigError(f'Unknown field "{key}" parsing permissions')
    return out


def with_defaults(users: list[dict], default: dict | None) -> None:
    """Give the users without permissions of their own the default ones (nats-server's
    applyDefaultPermissions)."""
    if default is not None:
        for user in users:
            if user.get("permissions") is None:
                user["permissions"] = default


# -- checking -----------------------------------------------------------------------------
class Rules:
    """One direction's allow and deny rules.  `allow` None: everything not denied passes
    (an empty list: nothing does).  Subscribe rules may carry a queue-group pattern."""

    __slots__ = ("allow", "allow_queues", "deny", "deny_queues")

    def __init__(self, allow: list[str] | None, deny: list[str]):
        self.allow, self.allow_queues = _split(allow) if allow is not None else (None, [])
        self.deny, self.deny_queues = _split(deny)

    def passes(self, subject: str) -> bool:
        if self.allow is not None and not any(_subject_matches(subject, r)
                                              for r in self.allow):
            return False
        return not any(_subject_matches(subject, r) for r in self.deny)

    def passes_subscription(self, subject: str, queue: str | None) -> bool:
        """canSubscribe: plain rules decide, unless the subscription has a queue group and
        queue rules match its subject: then its group decides whether an allow list lets
        it in, and a deny list's queue rules refuse the groups they name (a plain deny
        rule refuses every group)."""
        allowed = True
        if self.allow is not None:
            allowed = any(_subject_matches(subject, r) for r in self.allow)
            if queue:
                groups = [q for s, q in self.allow_queues if _subject_matches(subject, s)]
                if groups:
                    allowed = _queue_matches(queue, groups)
        if allowed and (self.deny or self.deny_queues):
            allowed = not any(_subject_matches(subject, r) for r in self.deny)
            if allowed and queue:
                groups = [q for s, q in self.deny_queues if _subject_matches(subject, s)]
                if groups:
                    allowed = not _queue_matches(queue, groups)
        return allowed


def _split(entries: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Plain subjects and (subject, queue pattern) pairs ("foo.* q" is the latter)."""
    plain, queued = [], []
    for entry in entries:
        fields = entry.split()
        if len(fields) == 1:
            plain.append(fields[0])
        elif len(fields) == 2:
            queued.append((fields[0], fields[1]))
        # (an entry of three or more words is skipped, as nats-server logs and skips it)
    return plain, queued


def _queue_matches(queue: str, patterns: list[str]) -> bool:
    """A queue group against queue patterns: by name ("*" and ">" may be names), else by
    the pattern's wildcards."""
    return any(queue == p or (not is_literal(p) and _subject_matches(queue, p))
               for p in patterns)


class Permissions:
    """A user's compiled permissions; `may_publish` caches its verdicts."""

    def __init__(self, spec: dict):
        publish, subscribe = spec.get("publish"), spec.get("subscribe")
        self.publish = (Rules(publish.get("allow"), publish.get("deny") or [])
                        if publish else None)
        self.subscribe = (Rules(subscribe.get("allow") or None, subscribe.get("deny") or [])
                          if subscribe else None)
        responses = spec.get("responses")
        self.response_max = responses["max"] if responses else 0
        self.response_expires = responses["expires"] if responses else 0.0
        self.responses = responses is not None
        self.deny_filter = [s for s in (subscribe or {}).get("deny") or [] if " " not in s]
        self._cache: dict[str, bool] = {}

    def may_publish(self, subject: str) -> bool:
        found = self._cache.get(subject)
        if found is None:
            found = self.publish is None or self.publish.passes(subject)
            if len(self._cache) >= CACHE_LIMIT:
                self._cache.clear()
            self._cache[subject] = found
        return found

    def may_subscribe(self, subject: str, queue: str | None) -> bool:
        return self.subscribe is None or self.subscribe.passes_subscription(subject, queue)


_compiled: dict[int, tuple[dict, Permissions]] = {}


def compiled(spec: dict) -> Permissions:
    """The Permissions of a parsed spec (compiled once per spec: every client of a user
    shares them)."""
    found = _compiled.get(id(spec))
    if found is None or found[0] is not spec:
        found = _compiled[id(spec)] = (spec, Permissions(spec))
    return found[1]


class Guard:
    """One client's permissions at work: the checks, the reply subjects it was sent and
    may answer (allow_responses: reply -> [when, responses sent]), and the subscribe deny
    rules its deliveries are checked against once a wildcard subscription loaded them."""

    __slots__ = ("perms", "replies", "denied", "since_prune")

    def __init__(self, perms: Permissions):
        self.perms = perms
        self.replies: dict[str, list] | None = {} if perms.responses else None
        self.denied: list[str] | None = None
        self.since_prune = 0

    def may_publish(self, subject: str) -> bool:
        """canPublish, with the responses allowed (pubAllowedFullCheck): a reply subject
        delivered to this client may be published to up to max times within expires."""
        if self.perms.may_publish(subject):
            return True
        replies = self.replies
        if replies is None:
            return False
        entry = replies.get(subject)
        if entry is None:
            return False
        entry[1] += 1
        perms = self.perms
        if ((perms.response_max > 0 and entry[1] > perms.response_max)
                or (perms.response_expires > 0
                    and time.monotonic() - entry[0] > perms.response_expires)):
            del replies[subject]
            return False
        return True

    def may_subscribe(self, subject: str, queue: str | None) -> bool:
        return self.perms.may_subscribe(subject, queue)

    def watch(self, subject: str) -> bool:
        """nats-server's loadMsgDenyFilter, for an allowed subscription: once a wildcard
        subscription could take in a denied subject (a deny rule overlaps it: "foo.*" and
        "*.baz" share "foo.baz"), every delivery to this client is checked against the
        subscribe deny rules, for all its subscriptions; until then none is.  Whether
        that started now."""
        if self.denied is not None or is_literal(subject):
            return False
        deny = self.perms.deny_filter
        if any(filters_overlap(rule, subject) for rule in deny):
            self.denied = deny
            return True
        return False

    @property
    def checks_deliveries(self) -> bool:
        return self.replies is not None or self.denied is not None

    def delivers(self, subject: str, reply: str | None) -> bool:
        """Whether a message goes out to this client; a reply subject it carries is one
        this client may answer from now on."""
        denied = self.denied
        if denied is not None and any(_subject_matches(subject, r) for r in denied):
            return False
        replies = self.replies
        if replies is not None and reply:
            replies[reply] = [time.monotonic(), 0]
            self.since_prune += 1
            if self.since_prune > REPLY_PRUNE:
                self._prune()
        return True

    def _prune(self) -> None:
        """Forget reply subjects that can no longer be answered (nats-server's
        pruneReplyPerms)."""
        self.since_prune = 0
        perms, now = self.perms, time.monotonic()
        for reply, (when, sent) in list(self.replies.items()):
            if ((perms.response_max > 0 and sent >= perms.response_max)
                    or (perms.response_expires > 0 and now - when > perms.response_expires)):
                del self.replies[reply]
