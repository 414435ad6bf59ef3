"""The JetStream API of an account without JetStream, on a server that has JetStream.

nats-server imports the ``$JS.API.>`` service into every account; for an account that has
no JetStream, each handler answers "JetStream not enabled for account" (503, 10039) in its
own response shape.  Direct gets and pull requests have no handler there (they are served
by a stream's own subscriptions): nobody answers.  A subject under ``$JS.API.`` that no
handler serves gets no answer either (the import takes it, nothing replies).
"""

from __future__ import annotations

from typing import Callable

from jsstore.api import schemas
from jsstore.api.consumers import ConsumerApi
from jsstore.api.streams import StreamApi
from jsstore.gocompat import json as gojson
from jsstore.wire import apierrors as api_errors

_STREAMS = StreamApi(None)          # for their subject tables and response shapes only
_CONSUMERS = ConsumerApi(None)
_NOT_SERVED = (schemas.API_PREFIX + "DIRECT.GET.", schemas.API_PREFIX + "CONSUMER.MSG.NEXT.")


def not_enabled(subject: str, send: Callable[["bytes | None", bytes], None]) -> bool:
    """Answer a message published in an account without JetStream; whether the API took
    it (False: nothing serves `subject`)."""
    if not subject.startswith(schemas.API_PREFIX) or subject.startswith(_NOT_SERVED):
        return False
    error = api_errors.JSNotEnabledForAccountErr()
    resolved = _STREAMS.resolve(subject)
    if resolved is not None:
        send(None, gojson.encode(_STREAMS.error_response(resolved[0], error)))
        return True
    resolved = _CONSUMERS.resolve(subject)
    if resolved is not None:
        send(None, gojson.encode(_CONSUMERS.error_response(resolved[0], error)))
    return True
