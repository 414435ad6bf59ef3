"""What nats-py reads from a stream, in the shape the Spark tests compare rows in."""

from __future__ import annotations

import nats


async def read_with_nats_py(url: str, stream: str):
    """(seq, subject, data, headers dict or None) of every message, read by an ordered
    consumer of nats-py."""
    nc = await nats.connect(url)
    js = nc.jetstream()
    info = await js.stream_info(stream)
    out = []
    sub = await js.subscribe(">", stream=stream, ordered_consumer=True)
    try:
        while len(out) < info.state.messages:
            msg = await sub.next_msg(timeout=10)
            out.append((msg.metadata.sequence.stream, msg.subject, msg.data,
                        dict(msg.headers) if msg.headers else None))
    finally:
        await sub.unsubscribe()
        await nc.close()
    return sorted(out)
