"""Where a store directory keeps a stream, as nats-server lays it out: every stream of an
account in ``<store dir>/jetstream/<account>/streams/<stream>/``, its configuration in
``meta.inf`` and that file's HighwayHash in ``meta.sum``.  Light on purpose: a JetStream
opening an empty directory looks here without loading the file store."""

from __future__ import annotations

import os

META_FILE = "meta.inf"
META_SUM_FILE = "meta.sum"
DIR_MODE = 0o700


def stream_dir(store_dir: str, stream: str, account: str = "$G") -> str:
    """nats-server's directory of a stream inside a store directory."""
    return os.path.join(store_dir, "jetstream", account, "streams", stream)
