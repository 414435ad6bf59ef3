"""The streams a store directory holds, as nats-server leaves them: each stream directory's
meta.inf (checked against meta.sum) read back into its configuration and creation time, or
the reason it cannot be opened."""

from __future__ import annotations

import os
from typing import Iterator

import msgspec

from jsstore.deferred import deferred
from jsstore.store.layout import META_FILE, META_SUM_FILE, stream_dir

# what reading a stream's meta.inf takes, loaded with the first stream found
hashing = deferred("jsstore._core.storage.hashing")
streamconfig = deferred("jsstore.stream.config")


class _Created(msgspec.Struct):
    Created: str = ""               # meta.inf's creation time (RFC 3339)


class FoundStream:
    """A stream directory found: its name and path, and its configuration (normalized, as
    nats-server keeps it) and creation time, or the reason it cannot be opened ("": it
    can).  (A plain class: a dataclass would cost the start of a server on an empty store
    more than everything else in this module.)"""

    __slots__ = ("name", "directory", "config", "created", "reason")

    def __init__(self, name: str, directory: str, config=None, created: str = "",
                 reason: str = ""):
        self.name, self.directory = name, directory
        self.config, self.created, self.reason = config, created, reason

    def __repr__(self) -> str:
        return (f"FoundStream(name={self.name!r}, directory={self.directory!r}, "
                f"config={self.config!r}, created={self.created!r}, reason={self.reason!r})")


def stream_directories(store_dir: str, account: str) -> Iterator[FoundStream]:
    """The account's stream directories in name order, each with its configuration or the
    reason it cannot be opened; directories without meta.inf are skipped."""
    root = os.path.dirname(stream_dir(store_dir, "x", account))
    if not os.path.isdir(root):
        return
    for name in sorted(os.listdir(root)):
        directory = os.path.join(root, name)
        meta_path = os.path.join(directory, META_FILE)
        if os.path.isfile(meta_path):
            yield read_stream_meta(name, directory)


def read_stream_meta(name: str, directory: str) -> FoundStream:
    found = FoundStream(name, directory)
    with open(os.path.join(directory, META_FILE), "rb") as f:
        data = f.read()
    try:
        with open(os.path.join(directory, META_SUM_FILE), "rb") as f:
            checksum = f.read()
    except FileNotFoundError:
        checksum = None
    if checksum is not None and checksum != hashing.meta_sum(hashing.meta_hash_key(name), data):
        found.reason = "meta.inf checksum does not match meta.sum"
        return found
    try:
        found.config = streamconfig.normalize(streamconfig.decode(data))
        found.created = msgspec.json.decode(data, type=_Created).Created
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        found.reason = f"meta.inf: {exc}"
        return found
    if found.config.name != name:
        found.reason = f"meta.inf names stream {found.config.name!r}"
    return found
