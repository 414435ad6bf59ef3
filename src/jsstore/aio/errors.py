"""The exceptions of ``jsstore.aio``: nats-py's classes, names and attributes, defined here
so that jsstore does not need nats-py.

Two families, as in nats-py:

* the client's own (nats-py's ``nats.errors``): ``NatsError`` (nats-py calls it
  ``nats.errors.Error``), ``TimeoutError`` (also an ``asyncio.TimeoutError``),
  ``MsgAlreadyAckdError``, ``NotJSMessageError``, ``BadSubscriptionError``,
  ``ConnectionClosedError`` (the context was closed);
* JetStream's (nats-py's ``nats.js.errors``): ``Error``, ``APIError`` with ``code``,
  ``err_code``, ``description``, ``stream`` and ``seq``, its subclasses picked by the
  answer's HTTP-like code (400 ``BadRequestError``, 404 ``NotFoundError``, 500
  ``ServerError``, 503 ``ServiceUnavailableError``), ``NoStreamResponseError`` (nothing
  captures a publish's subject), ``ConsumerInvalidResetError``,
  ``TooManyStalledMsgsError``, ``FetchTimeoutError`` and ``ConsumerSequenceMismatchError``;
  the key-value ones (``BucketNotFoundError``, ``KeyNotFoundError``, ``KeyDeletedError``,
  ``KeyWrongLastSequenceError``, ``NoKeysError``, ...) and the object store ones
  (``ObjectNotFoundError``, ``DigestMismatchError``, ...).
"""

from __future__ import annotations

import asyncio


class NatsError(Exception):
    """What every error of the client is (nats-py's ``nats.errors.Error``)."""


class TimeoutError(NatsError, asyncio.TimeoutError):  # noqa: A001 - nats-py's name
    """Nothing came in time."""

    def __str__(self) -> str:
        return "nats: timeout"


class MsgAlreadyAckdError(NatsError):
    """The message was already acknowledged (ack, nak or term)."""

    def __init__(self, msg=None) -> None:
        self._msg = msg

    def __str__(self) -> str:
        return f"nats: message was already acknowledged: {self._msg}"


class NotJSMessageError(NatsError):
    """The message has no JetStream ack subject."""

    def __str__(self) -> str:
        return "nats: not a JetStream message"


class BadSubscriptionError(NatsError):
    """The subscription was closed."""

    def __str__(self) -> str:
        return "nats: invalid subscription"


class ConnectionClosedError(NatsError):
    """The context was closed."""

    def __str__(self) -> str:
        return "nats: connection closed"


class Error(NatsError):
    """A JetStream error (nats-py's ``nats.js.errors.Error``)."""

    def __init__(self, description: str | None = None) -> None:
        self.description = description

    def __str__(self) -> str:
        return f"nats: JetStream.{type(self).__name__} {self.description or ''}"


class APIError(Error):
    """JetStream answered with an error: its code (HTTP-like), err_code (JetStream's own
    number) and description."""

    def __init__(self, code: int | None = None, description: str | None = None,
                 err_code: int | None = None, stream: str | None = None,
                 seq: int | None = None) -> None:
        self.code = code
        self.err_code = err_code
        self.description = description
        self.stream = stream
        self.seq = seq

    @classmethod
    def from_error(cls, err: dict) -> APIError:
        """The exception for an answer's ``error`` object, its class chosen by code as
        nats-py chooses it (returned, for the caller to raise)."""
        known = {k: err.get(k) for k in ("code", "description", "err_code", "stream", "seq")
                 if k in err}
        return _BY_CODE.get(err.get("code"), APIError)(**known)

    @classmethod
    def from_status(cls, status: str, description: str = "") -> APIError:
        """The exception for a status message (a pull request's or a direct get's)."""
        if status == "503":
            return ServiceUnavailableError()
        if status == "404":
            return NotFoundError()
        return APIError(code=int(status), description=description)

    def __str__(self) -> str:
        return (f"nats: {type(self).__name__}: code={self.code} err_code={self.err_code} "
                f"description='{self.description}'")


class ServiceUnavailableError(APIError):
    """503: JetStream is not available."""


class ServerError(APIError):
    """500: JetStream failed."""


class NotFoundError(APIError):
    """404: no such stream, consumer or message."""


class BadRequestError(APIError):
    """400: the request was refused."""


class ConsumerInvalidResetError(BadRequestError):
    """reset_consumer to a sequence the consumer's deliver policy does not allow
    (err_code 10204)."""


_BY_CODE = {400: BadRequestError, 404: NotFoundError, 500: ServerError,
            503: ServiceUnavailableError}


class NoStreamResponseError(Error):
    """No stream captures the subject published to."""

    def __str__(self) -> str:
        return "nats: no response from stream"


class TooManyStalledMsgsError(Error):
    """publish_async waited too long for a free slot."""

    def __str__(self) -> str:
        return "nats: stalled with too many outstanding async published messages"


class FetchTimeoutError(TimeoutError):
    """A fetch got answers but no message in time."""

    def __str__(self) -> str:
        return "nats: fetch timeout"


class ConsumerSequenceMismatchError(Error):
    """A push consumer's delivery sequence skipped (not raised for an ordered consumer,
    which starts over instead)."""

    def __init__(self, stream_resume_sequence=None, consumer_sequence=None,
                 last_consumer_sequence=None) -> None:
        self.stream_resume_sequence = stream_resume_sequence
        self.consumer_sequence = consumer_sequence
        self.last_consumer_sequence = last_consumer_sequence

    def __str__(self) -> str:
        gap = self.consumer_sequence - (self.last_consumer_sequence or 0)
        return (f"nats: sequence mismatch for consumer at sequence {self.consumer_sequence} "
                f"({gap} sequences behind), should restart consumer from stream sequence "
                f"{self.stream_resume_sequence}")


# -- key-value buckets ----------------------------------------------------------------------
class InvalidBucketNameError(Error):
    """A bucket name with characters outside letters, digits, - and _."""


class InvalidKeyError(Error):
    """A key with characters a key can not have."""


class KeyValueLimitMarkerTTLNotSupportedError(Error):
    """limit_marker_ttl needs JetStream API level 1."""

    def __str__(self) -> str:
        return "nats: limit marker TTLs not supported by server"


class BucketNotFoundError(NotFoundError):
    """No such key-value bucket."""


class BadBucketError(APIError):
    """The bucket's stream is not a key-value bucket's."""


class KeyValueError(APIError):
    """A key-value operation failed."""


class KeyDeletedError(KeyValueError, NotFoundError):
    """The key's last entry is a delete or purge marker."""

    def __init__(self, entry=None, op=None) -> None:
        self.entry = entry
        self.op = op

    def __str__(self) -> str:
        return "nats: key was deleted"


class KeyNotFoundError(KeyValueError, NotFoundError):
    """No such key (or it was deleted)."""

    def __init__(self, entry=None, op=None, message=None) -> None:
        self.entry = entry
        self.op = op
        self.message = message

    def __str__(self) -> str:
        return "nats: key not found" + (f": {self.message}" if self.message else "")


class KeyWrongLastSequenceError(KeyValueError, BadRequestError):
    """create or update against another revision than the key's last."""

    def __init__(self, description=None) -> None:
        self.description = description

    def __str__(self) -> str:
        return f"nats: {self.description}"


class NoKeysError(KeyValueError):
    """keys or history found nothing."""

    def __str__(self) -> str:
        return "nats: no keys found"


class KeyHistoryTooLargeError(KeyValueError):
    """A bucket keeps at most 64 revisions of a key."""

    def __str__(self) -> str:
        return "nats: history limited to a max of 64"


# -- object stores --------------------------------------------------------------------------
class InvalidObjectNameError(Error):
    """An object name an object store can not take."""


class BadObjectMetaError(Error):
    """An object's meta entry does not read as one."""


class LinkIsABucketError(Error):
    """get of a link to a whole bucket."""


class DigestMismatchError(Error):
    """An object's chunks do not hash to its digest."""


class ObjectNotFoundError(NotFoundError):
    """No such object (or it was deleted)."""


class ObjectDeletedError(NotFoundError):
    """The object was deleted."""


class ObjectAlreadyExists(Error):
    """update_meta, or add_link, to the name of another object."""


class ObjectRequiredError(Error):
    """add_link without the info of an object to link to."""

    def __str__(self) -> str:
        return "nats: object required"


class BucketRequiredError(Error):
    """add_bucket_link without a store to link to."""

    def __str__(self) -> str:
        return "nats: bucket required"


class NoLinkToDeletedError(Error):
    """add_link to a deleted object."""

    def __str__(self) -> str:
        return "nats: not allowed to link to a deleted object"


class NoLinkToLinkError(Error):
    """add_link to a link."""

    def __str__(self) -> str:
        return "nats: not allowed to link to another link"
