"""jsstore.aio's own guarantees, beyond what tests/test_aio_parity.py compares with
nats-py: the event loop never waits on the disk, waiting for messages is event-driven,
`async with` closes the store, the ordered consumer starts over on a gap, the errors are
nats-py's, and `import jsstore` stays without it until used."""

from __future__ import annotations

import asyncio
import pathlib
import subprocess
import sys
import threading

import nats.errors
import nats.js.errors
import pytest
from bothservers import run
from test_layers import all_imports

import jsstore
from jsstore.aio import errors
from jsstore.stream.stream import Stream


def test_a_slow_disk_write_does_not_block_the_event_loop(tmp_path, monkeypatch):
    """The write waits until a task on the loop lets it go: were the loop blocked by the
    write, the task could never run and the write would give up."""
    release = threading.Event()
    writer_threads = []
    original = Stream.publish_plain     # (where a publish without headers is stored)

    def slow_publish(self, *args, **kwargs):
        writer_threads.append(threading.current_thread())
        gave_up = not release.wait(10)
        assert not gave_up, "the event loop did not run while the write waited"
        return original(self, *args, **kwargs)

    async def main():
        async with jsstore.aio.open(tmp_path) as js:
            await js.add_stream(name="S", subjects=["s"])
            monkeypatch.setattr(Stream, "publish_plain", slow_publish)
            publish = asyncio.create_task(js.publish("s", b"x"))
            ran_while_pending = []

            async def other_task():
                while not writer_threads:       # the write has started
                    await asyncio.sleep(0)
                ran_while_pending.append(not publish.done())
                release.set()
            await other_task()
            ack = await publish
            monkeypatch.setattr(Stream, "publish_plain", original)
            return ack, ran_while_pending
    ack, ran_while_pending = run(main())
    assert ack.seq == 1
    assert ran_while_pending == [True]
    assert writer_threads[0] is not threading.main_thread()


def test_waiting_fetches_take_no_thread_each_and_wake_on_a_publish(tmp_path):
    async def main():
        async with jsstore.aio.open() as js:
            await js.add_stream(name="S", subjects=["s.*"])
            subs = [await js.pull_subscribe(f"s.{n}", f"C{n}") for n in range(5)]
            threads = threading.active_count()
            fetches = [asyncio.create_task(sub.fetch(1, timeout=30)) for sub in subs]
            await asyncio.sleep(0)
            while not all(f.done() for f in fetches):
                assert threading.active_count() <= threads
                pending = [n for n, f in enumerate(fetches) if not f.done()]
                await js.publish(f"s.{pending[0]}", b"%d" % pending[0])
                await asyncio.wait([fetches[pending[0]]])
            return [(await f)[0].data for f in fetches]
    assert run(main()) == [b"0", b"1", b"2", b"3", b"4"]


def test_async_with_closes_the_store_so_it_opens_again(tmp_path):
    async def write():
        async with jsstore.aio.open(tmp_path) as js:
            await js.add_stream(name="S", subjects=["s"])
            await js.publish("s", b"kept")
        return js.jetstream.closed

    async def read():
        js = await jsstore.aio.open(tmp_path)
        try:
            return (await js.stream_info("S")).state.messages, (await js.get_msg("S", 1)).data
        finally:
            await js.close()
    assert run(write()) is True
    assert run(read()) == (1, b"kept")


def test_an_ordered_consumer_starts_over_after_a_gap():
    """A consumer reset makes its delivery sequence start again at 1: the ordered
    subscription sees the gap, and goes on from the next stream sequence on a new
    consumer, missing nothing and repeating nothing."""
    async def main():
        async with jsstore.aio.open() as js:
            await js.add_stream(name="S", subjects=["s"])
            for n in range(2):
                await js.publish("s", b"%d" % n)
            sub = await js.subscribe("s", ordered_consumer=True)
            first = [await sub.next_msg(timeout=5) for _ in range(2)]
            before = (await sub.consumer_info()).name
            js.jetstream.reset_consumer("S", before, seq=1)   # delivers 1 again, as dseq 1
            await js.publish("s", b"2")
            third = await sub.next_msg(timeout=5)
            after = (await sub.consumer_info()).name
            names = js.jetstream.consumer_names("S")
            return [m.data for m in first + [third]], before != after, names == [after]
    assert run(main()) == ([b"0", b"1", b"2"], True, True)


def _lineage(cls) -> list[str]:
    """The class names up to Exception (nats-py's nats.errors.Error is our NatsError)."""
    mro = cls.__mro__[:cls.__mro__.index(Exception)]
    return ["NatsError" if c is nats.errors.Error else c.__name__ for c in mro]


def test_errors_are_nats_pys_by_name_and_code():
    for name in ("Error", "APIError", "ServiceUnavailableError", "ServerError",
                 "NotFoundError", "BadRequestError", "NoStreamResponseError",
                 "FetchTimeoutError", "ConsumerSequenceMismatchError"):
        ours, theirs = getattr(errors, name), getattr(nats.js.errors, name)
        assert _lineage(ours) == _lineage(theirs)
    for name in ("TimeoutError", "MsgAlreadyAckdError", "NotJSMessageError",
                 "ConnectionClosedError"):
        assert _lineage(getattr(errors, name)) == _lineage(getattr(nats.errors, name))
    assert issubclass(errors.TimeoutError, asyncio.TimeoutError)
    for code, cls in ((400, errors.BadRequestError), (404, errors.NotFoundError),
                      (500, errors.ServerError), (503, errors.ServiceUnavailableError),
                      (409, errors.APIError)):
        err = errors.APIError.from_error({"code": code, "err_code": 10000 + code,
                                          "description": "why"})
        assert type(err) is cls
        assert (err.code, err.err_code, err.description) == (code, 10000 + code, "why")


def test_a_closed_context_refuses_work():
    async def main():
        js = await jsstore.aio.open()
        await js.close()
        with pytest.raises(errors.ConnectionClosedError):
            await js.stream_info("S")
    run(main())


def test_import_jsstore_leaves_aio_until_it_is_used():
    code = ("import sys, jsstore; before = 'jsstore.aio' in sys.modules; "
            "jsstore.aio.open; print(before, 'jsstore.aio' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": jsstore.__path__[0].rsplit("/", 1)[0]})
    assert out.stdout.split() == ["False", "True"]


def test_the_readme_example_runs(tmp_path, monkeypatch):
    """The asyncio section's example, as written (its asserts included), in a directory
    of the test's own."""
    readme = (pathlib.Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme[readme.index("## asyncio"):]
    start = section.index("```python\n") + len("```python\n")
    code = section[start:section.index("\n```", start)]
    assert "asyncio.run(main(" in code
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md (asyncio)", "exec"), {"__name__": "readme"})
    assert (tmp_path / "data" / "jetstream").is_dir()


def test_publish_async_settles_every_future_errors_included():
    """nats-py 2.16 leaves the future of a refused publish_async unsettled (its reply
    handler raises the error instead); here it carries the error."""
    async def main():
        async with jsstore.aio.open() as js:
            await js.add_stream(name="S", subjects=["s"])
            ok = await js.publish_async("s", b"1")
            refused = await js.publish_async("s", b"2",
                                             headers={"Nats-Expected-Last-Sequence": "9"})
            lost = await js.publish_async("nowhere", b"3")
            await js.publish_async_completed()
            assert js.publish_async_pending() == 0
            assert (await ok).seq == 1
            with pytest.raises(errors.BadRequestError) as refusal:
                await refused
            assert refusal.value.err_code == 10071
            with pytest.raises(errors.NoStreamResponseError):
                await lost
    run(main())


def test_a_queue_group_shares_deliveries_and_a_leaving_member_hands_over():
    async def main():
        async with jsstore.aio.open() as js:
            await js.add_stream(name="S", subjects=["s"])
            got = {"a": [], "b": []}

            def member(name):
                async def on_msg(msg):
                    got[name].append(msg.data)
                return on_msg
            a = await js.subscribe("s", queue="q", cb=member("a"))
            b = await js.subscribe("s", queue="q", cb=member("b"))
            for n in range(4):
                await js.publish("s", b"%d" % n)
            while len(got["a"]) + len(got["b"]) < 4:
                await asyncio.sleep(0)
            await a.unsubscribe()
            await js.publish("s", b"4")
            while len(got["a"]) + len(got["b"]) < 5:
                await asyncio.sleep(0)
            await b.unsubscribe()
            return got
    got = run(main())
    assert sorted(got["a"] + got["b"]) == [b"0", b"1", b"2", b"3", b"4"]
    assert got["a"] and got["b"][-1] == b"4"


def test_an_unanswered_api_request_is_a_timeout_as_over_nats():
    async def main():
        async with jsstore.aio.open() as js:
            await js.add_stream(name="S", subjects=["s"])
            with pytest.raises(errors.TimeoutError):
                await js.reset_consumer("S", "NOBODY")
    run(main())


def test_aio_reaches_the_store_through_jetstream_only():
    """jsstore.aio is a client of the embedded JetStream: it imports neither the server
    nor the wire API handlers (the face plugs those in)."""
    ours = [f for f in all_imports() if f.importer.startswith("jsstore.aio")]
    outward = [f for f in ours
               if f.imported.startswith(("jsstore.server", "jsstore.api", "jsstore.cli"))]
    assert outward == []
    assert any(f.imported.startswith("jsstore.jetstream") for f in ours)


def test_push_flow_control_is_answered_so_a_large_stream_flows(monkeypatch):
    """12 MB through an ordered consumer (flow control on): its flow control requests
    are answered, or delivery would stall after the first window (heartbeats, which
    would also unstick it, are a minute apart here)."""
    answered = []
    send = jsstore.aio.JetStreamContext.send

    async def spy(self, subject, payload=b"", reply=None):
        if subject.startswith("$JS.FC."):
            answered.append(subject)
        await send(self, subject, payload, reply)
    monkeypatch.setattr(jsstore.aio.JetStreamContext, "send", spy)

    async def main():
        async with jsstore.aio.open() as js:
            await js.add_stream(name="S", subjects=["s"])
            body = b"x" * 4096
            for n in range(3000):
                await js.publish_async("s", body)
            await js.publish_async_completed()
            sub = await js.subscribe("s", ordered_consumer=True, idle_heartbeat=60)
            return [(await sub.next_msg(timeout=5)).metadata.sequence.stream
                    for _ in range(3000)]
    assert run(main()) == list(range(1, 3001))
    assert answered


def test_a_context_over_a_jetstream_of_ones_own_leaves_it_open():
    js = jsstore.open()
    js.add_stream(name="S", subjects=["s"])

    async def main():
        ctx = jsstore.aio.JetStreamContext(js, owns=False)
        ack = await ctx.publish("s", b"async")
        await ctx.close()
        return ack.seq
    try:
        assert run(main()) == 1
        assert not js.closed
        assert js.get_msg("S", 1).data == b"async"
    finally:
        js.close()
