"""Storage errors, with nats-server's texts (``server/store.go``).

The publish path of the stream layer copies these texts into API errors, so they
must match nats-server byte for byte.  API errors (``$JS.API.*``) live apart, in
``jsstore.wire.apierrors``; this module is only the storage boundary.
"""

from __future__ import annotations


class StoreError(Exception):
    """Base class of every error raised by a stream or consumer store."""

    text = "store error"

    def __init__(self, detail: str | None = None):
        super().__init__(detail if detail is not None else self.text)


class StoreClosed(StoreError):
    text = "store is closed"


class StoreLocked(StoreError):
    """Another process holds the stream directory's lock (it has the store open)."""

    text = "store directory is in use by another process"


class MsgNotFound(StoreError):
    text = "no message found"


class StoreEOF(StoreError):
    text = "stream store EOF"


class MaxMsgsExceeded(StoreError):
    text = "maximum messages exceeded"


class MaxBytesExceeded(StoreError):
    text = "maximum bytes exceeded"


class MaxMsgsPerSubjectExceeded(StoreError):
    text = "maximum messages per subject exceeded"


class SnapshotInProgress(StoreError):
    text = "snapshot in progress"


class MsgTooLarge(StoreError):
    text = "message too large"


class WrongStoreType(StoreError):
    text = "wrong storage type"


class NoAckPolicy(StoreError):
    text = "ack policy is none"


class SequenceMismatch(StoreError):
    text = "expected sequence does not match store"


class CorruptStreamState(StoreError):
    text = "stream state snapshot is corrupt"


class TooManyResults(StoreError):
    text = "too many matching results for request"


class OldUpdate(StoreError):
    text = "old update ignored"


class InvalidSequence(StoreError):
    text = "invalid sequence"


class BadMsg(StoreError):
    """A record that fails its length, bounds or checksum checks."""

    text = "malformed or corrupt message"


class CorruptFile(StoreError):
    """A state or metadata file that cannot be decoded (bad magic, version, length or checksum)."""

    text = "corrupt state file"


class WriteError(StoreError):
    """An I/O error while writing or syncing. Sticky: every later write fails with it until
    reopen. `errno` is the system's error number when there is one (ENOSPC, EIO, ...)."""

    text = "write error"

    def __init__(self, detail: str | None = None, errno: int = 0):
        super().__init__(detail)
        self.errno = errno


__all__ = [name for name, obj in globals().items() if isinstance(obj, type) and issubclass(obj, StoreError)]
