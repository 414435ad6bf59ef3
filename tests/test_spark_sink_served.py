"""A store directory another process serves is never written by a Spark write.

jsstore processes (jsstore serve, a store opened in a program) hold a lock on every
stream directory they have open, which the write probes on the driver before any task
runs; nats-server holds none and writes no pid file, so a directory that may be its store
(one with a `jetstream` folder) is written only with option server_stopped=true."""

from __future__ import annotations

import asyncio
import os

import nats
import pytest

import jsstore
from jsstoreserver import jsstore_server
from natsserver import nats_server, require_nats_server

pytestmark = [pytest.mark.spark, pytest.mark.natsserver]


def rows(spark, count=20):
    return spark.createDataFrame([(f"in.{i % 3}", f"v{i}".encode()) for i in range(count)],
                                 "subject STRING, data BINARY")


def write(df, directory, stream="OUT", **options):
    writer = df.write.format("jsstore").option("path", directory).option("stream", stream)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.mode("append").save()


async def _publish(url, start, count):
    nc = await nats.connect(url)
    js = nc.jetstream()
    if start == 0:
        await js.add_stream(name="OUT", subjects=["in.>"])
    for i in range(start, start + count):
        await js.publish(f"in.{i % 3}", f"n{i}".encode())
    info = await js.stream_info("OUT")
    await nc.close()
    return info.state.messages, info.state.last_seq


def test_a_directory_nats_server_serves_is_refused_and_nothing_of_it_changes(spark, tmp_path):
    """The reported case: the write was accepted, and nats-server then acked publishes it
    lost at its next start. Now the write is refused; the publishes after it survive a
    restart."""
    require_nats_server()
    store = str(tmp_path / "store")
    with nats_server(store) as server:
        assert asyncio.run(_publish(server.url, 0, 10)) == (10, 10)
        with pytest.raises(Exception, match=r"nats-server may be serving.*server_stopped"):
            write(rows(spark), store)
        assert asyncio.run(_publish(server.url, 10, 5)) == (15, 15)
        stream = os.path.join(store, "jetstream", "$G", "streams", "OUT")
        assert "jsstore.lock" not in os.listdir(stream)      # the check wrote nothing there
    with nats_server(store) as server:
        assert asyncio.run(_publish(server.url, 15, 0)) == (15, 15)
        assert "corrupt" not in server.log_text().lower()
    assert not os.path.exists(os.path.join(store, ".jsstore-staging"))


def test_jsstore_serve_with_streams_is_refused_even_with_server_stopped(spark, tmp_path):
    store = str(tmp_path / "store")
    with jsstore.open(store) as js:
        js.add_stream(name="OTHER", subjects=["other.>"])
    with jsstore_server(store) as server:
        with pytest.raises(Exception, match=rf"in use by pid {server.pid}"):
            write(rows(spark), store, create="true", subjects="in.>", server_stopped="true")
    with jsstore.open(store) as js:
        assert js.stream_names() == ["OTHER"]


def test_an_embedded_open_store_is_refused_even_with_server_stopped(spark, tmp_path):
    store = str(tmp_path / "store")
    with jsstore.open(store) as js:
        js.add_stream(name="OTHER", subjects=["other.>"])
        with pytest.raises(Exception, match=rf"in use by pid {os.getpid()}"):
            write(rows(spark), store, create="true", subjects="in.>", server_stopped="true")
        assert js.stream_names() == ["OTHER"]


def test_a_new_directory_is_written_without_the_option(spark, tmp_path):
    store = str(tmp_path / "fresh")
    write(rows(spark), store, create="true", subjects="in.>")
    with jsstore.open(store) as js:
        assert js.stream_info("OUT").state.messages == 20
