"""STREAM.RESTORE of a nats-server 2.15 archive (``NATSARC1``, jsstore.store.archive): the
messages are stored straight into the new stream's store under their sequences and times
(gaps, leading and trailing ones included, become skipped sequences) and each consumer
entry becomes a consumer with its configuration and state (file streams; a memory stream
takes the messages only, as with a tar snapshot)."""

from __future__ import annotations

import time

from jsstore.consumer import config as consumerconfig
from jsstore.jetstream.info import meta_info_json
from jsstore.store.archive import consumer_state, read_archive
from jsstore.stream import config as streamconfig
from jsstore.stream.config import StreamConfig


def restore_archive(js, config: StreamConfig, raw: bytes, created: str, adopt) -> None:
    """Create the stream `config` names from a decompressed archive; `adopt(js, config,
    store, created)` makes the filled store one of js's streams."""
    archive = read_archive(raw)
    first = int(archive.state.get("first_seq") or 0)
    last = int(archive.state.get("last_seq") or 0)
    store = js.stores.create(config.name, config.storage, streamconfig.to_store_config(config),
                             meta_info_json(config, created))
    try:
        if first > 1:
            store.skip_msgs(1, first - 1)
        for msg in archive.messages:
            gap = msg.seq - (store.last_seq + 1)
            if gap > 0:
                store.skip_msgs(store.last_seq + 1, gap)
            store.store_raw_msg(msg.subject, msg.hdr, msg.msg, msg.seq, msg.ts)
        if store.last_seq < last:
            store.skip_msgs(store.last_seq + 1, last - store.last_seq)
        now = time.time_ns()
        for name, entry in archive.consumers:
            consumer = consumerconfig.from_dict(entry["config"])
            cs = store.consumer_store(name, now, consumerconfig.to_dict(consumer))
            cs.force_update(consumer_state(entry["state"] or {}))
            cs.stop()
        adopt(js, config, store, created)
    except BaseException:
        js.stores.delete(store, config.name, config.storage)
        raise
