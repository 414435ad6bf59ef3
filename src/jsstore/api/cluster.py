"""The ``$JS.API`` subjects of a cluster and of the system account, as one server answers
an ordinary account's request on them.

nats-server serves the clustering subjects of an account on every server; a server that
is not clustered answers each of them 503 / 10010 "JetStream clustering support required"
before it looks at the stream, the consumer, the body or a ``Nats-Required-Api-Level``
header (counted and audited as a failed request):

    STREAM.LEADER.STEPDOWN.<stream>      STREAM.PEER.REMOVE.<stream>
    STREAM.PEER.EVACUATE.<stream>        STREAM.CANCEL_MOVE.<stream>
    CONSUMER.LEADER.STEPDOWN.<stream>.<consumer>
    CONSUMER.PEER.REMOVE.<stream>.<consumer>
    CONSUMER.PEER.EVACUATE.<stream>.<consumer>

The system account's subjects (``SYSTEM_ACCOUNT_ONLY``) are served in that account alone:
an ordinary account's request is taken by its ``$JS.API.>`` import and goes unanswered
(the requester times out; it is not "no responders").  jsstore keeps one ordinary
account, so nothing answers them here either.  (In the system account itself a single
nats-server leaves them unanswered too, but for ACCOUNT.PURGE.<account>, which deletes
that account's streams and answers ``account_purge_response`` ``"initiated": true``.)
"""

from __future__ import annotations

from jsstore.wire.api import API_PREFIX, TYPE_PREFIX

# subject prefix after $JS.API. -> (response type, how many name tokens follow)
CLUSTER_ONLY: dict[str, tuple[str, int]] = {
    "STREAM.LEADER.STEPDOWN.": (TYPE_PREFIX + "stream_leader_stepdown_response", 1),
    "STREAM.PEER.REMOVE.": (TYPE_PREFIX + "stream_remove_peer_response", 1),
    "STREAM.PEER.EVACUATE.": (TYPE_PREFIX + "stream_evacuate_peer_response", 1),
    "STREAM.CANCEL_MOVE.": (TYPE_PREFIX + "stream_cancel_move_response", 1),
    "CONSUMER.LEADER.STEPDOWN.": (TYPE_PREFIX + "consumer_leader_stepdown_response", 2),
    "CONSUMER.PEER.REMOVE.": (TYPE_PREFIX + "consumer_remove_peer_response", 2),
    "CONSUMER.PEER.EVACUATE.": (TYPE_PREFIX + "consumer_evacuate_peer_response", 2),
}

# served by nats-server in the system account only (an ordinary account's go unanswered)
SYSTEM_ACCOUNT_ONLY = (
    API_PREFIX + "META.LEADER.STEPDOWN",
    API_PREFIX + "META.RESCUE",
    API_PREFIX + "SERVER.REMOVE",
    API_PREFIX + "SERVER.EVACUATE",
    API_PREFIX + "ACCOUNT.PURGE.*",
    API_PREFIX + "ACCOUNT.STREAM.MOVE.*.*",
    API_PREFIX + "ACCOUNT.STREAM.CANCEL_MOVE.*.*",
)


def cluster_only_type(subject: str) -> str | None:
    """The response type of a clustering subject, or None when `subject` is not one (a
    published "*" or ">" token fills a wildcard of the subscription like any other)."""
    if not subject.startswith(API_PREFIX):
        return None
    rest = subject[len(API_PREFIX):]
    for prefix, (response_type, count) in CLUSTER_ONLY.items():
        if rest.startswith(prefix):
            tokens = rest[len(prefix):].split(".")
            if len(tokens) == count and all(tokens):
                return response_type
            return None
    return None
