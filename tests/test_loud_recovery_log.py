"""A stream whose files recovery could not read all of is said so when it is opened: a
warning naming the stream, the file, what is wrong and the messages lost, beside the
stream state's "lost" (STREAM.INFO's, as nats-server's). It used to open with fewer
messages and not a word."""

from __future__ import annotations

import glob
import logging
import os

import jsstore


def test_damage_found_at_open_is_logged(tmp_path, caplog):
    js = jsstore.open(str(tmp_path))
    js.add_stream(name="S", subjects=["s.>"])
    for i in range(300):
        js.publish(f"s.{i}", b"x" * 1000)
    js.close()
    (block,) = glob.glob(os.path.join(str(tmp_path), "jetstream", "*", "streams", "S", "msgs",
                                      "*.blk"))
    data = bytearray(open(block, "rb").read())
    data[5000] ^= 0xFF
    open(block, "wb").write(bytes(data))
    with caplog.at_level(logging.WARNING):
        js = jsstore.open(str(tmp_path))
    try:
        state = js.stream_info("S").state
        assert state.lost is not None and state.lost.msgs[0] == state.messages + 1
        assert state.lost.msgs[-1] == 300
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert any("'$G > S'" in w and block in w and f"messages lost: {state.messages + 1}-300"
                   in w for w in warnings), warnings
    finally:
        js.close()
