"""The server's event loop and transports (jsstore.server.eventloop, .transport): callbacks
in order, timers and their cancelling, callbacks and signals from elsewhere, and a
connection's reads, writes past a full socket, closes, aborts and errors."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time

import pytest

from jsstore.server.eventloop import Loop
from jsstore.server.transport import Listener, SocketTransport


@pytest.fixture
def loop():
    loop = Loop()
    yield loop
    loop.close()


def test_callbacks_run_in_order_and_those_they_add_run_next_turn(loop):
    seen = []
    loop.call_soon(seen.append, 1)
    loop.call_soon(lambda: (seen.append(2), loop.call_soon(seen.append, 4)))
    loop.call_soon(seen.append, 3)
    loop.run_once(0)
    assert seen == [1, 2, 3]
    loop.run_once(0)
    assert seen == [1, 2, 3, 4]


def test_timers_come_due_in_time_order_and_a_cancelled_one_never_runs(loop):
    seen = []
    loop.call_later(0.03, seen.append, "late")
    cancelled = loop.call_later(0.01, seen.append, "cancelled")
    loop.call_later(0.005, seen.append, "early")
    cancelled.cancel()
    began = time.monotonic()
    assert loop.run_until(lambda: len(seen) == 2, 5)
    assert seen == ["early", "late"]
    assert time.monotonic() - began >= 0.029
    assert not loop.run_until(lambda: False, 0.03)      # and nothing more
    assert seen == ["early", "late"]


def test_many_cancelled_timers_are_dropped_and_the_live_ones_kept(loop):
    seen = []
    handles = [loop.call_later(3600, seen.append, i) for i in range(500)]
    for handle in handles[:400]:
        handle.cancel()
    handles[0].cancel()                         # (twice is once)
    loop.call_later(0, seen.append, "due")
    loop.run_once(0)
    assert seen == ["due"]
    assert len(loop._timers) == 100 and loop._cancelled_timers == 0
    done = loop.call_later(0, seen.append, "again")
    loop.run_once(0)
    done.cancel()                               # (after it came due: counts for nothing)
    assert loop._cancelled_timers == 0


def test_a_callback_from_another_thread_wakes_a_waiting_loop(loop):
    seen = []
    threading.Timer(0.05, loop.call_soon_threadsafe, (seen.append, "hi")).start()
    began = time.monotonic()
    loop.run_once(10)                           # woken by the callback, not the timeout
    loop.run_once(0)
    assert seen == ["hi"]
    assert time.monotonic() - began < 5


def test_stop_threadsafe_ends_run_forever(loop):
    threading.Timer(0.05, loop.stop_threadsafe).start()
    loop.run_forever()


def test_a_signal_runs_its_handler_on_the_loop(loop):
    seen = []
    before = signal.getsignal(signal.SIGUSR1)
    loop.add_signal_handler(signal.SIGUSR1, seen.append, "usr1")
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
        assert loop.run_until(lambda: seen, 5)
    finally:
        loop.remove_signal_handlers()
    assert seen == ["usr1"]
    assert signal.getsignal(signal.SIGUSR1) == before    # the one it replaced, back


def test_an_exception_in_a_callback_is_logged_and_the_loop_goes_on(loop, caplog):
    seen = []
    loop.call_soon(lambda: 1 / 0)
    loop.call_soon(seen.append, "after")
    loop.run_once(0)
    assert seen == ["after"]
    assert "ZeroDivisionError" in caplog.text


# -- connections ---------------------------------------------------------------------------
class Recorder:
    """A protocol that keeps what it is told."""

    def __init__(self, fail_on: bytes | None = None):
        self.transport = None
        self.data = b""
        self.eof = False
        self.lost = []
        self.fail_on = fail_on

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        if self.fail_on is not None and self.fail_on in data:
            raise RuntimeError("a bug in the protocol")
        self.data += data

    def eof_received(self):
        self.eof = True
        return None

    def connection_lost(self, exc):
        self.lost.append(exc)


def connected(loop, protocol_factory=Recorder):
    """A listener on the loop and a plain socket connected to it; (protocol, client)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    made = []
    listener = Listener(loop, sock, lambda: made.append(protocol_factory()) or made[-1])
    client = socket.create_connection(sock.getsockname())
    assert loop.run_until(lambda: made and made[0].transport is not None, 5)
    listener.close()
    return made[0], client


def test_reads_arrive_and_the_peers_close_ends_the_connection(loop):
    proto, client = connected(loop)
    client.sendall(b"hello")
    assert loop.run_until(lambda: proto.data == b"hello", 5)
    assert proto.transport.get_extra_info("peername") == client.getsockname()
    client.close()
    assert loop.run_until(lambda: proto.lost, 5)
    assert proto.eof and proto.lost == [None]


def test_a_write_past_a_full_socket_is_kept_and_all_of_it_arrives_in_order(loop):
    proto, client = connected(loop)
    # 32 MiB the peer does not read yet: far past what the kernel's buffers take
    chunks = [bytes([i % 251]) * (512 * 1024) for i in range(64)]
    for chunk in chunks:
        proto.transport.write(chunk)
    assert proto.transport.get_write_buffer_size() > 0
    proto.transport.close()                     # closes once all is written
    got = bytearray()
    client.setblocking(False)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        loop.run_once(0.001)
        try:
            data = client.recv(1 << 20)
        except BlockingIOError:
            continue
        if not data:
            break
        got += data
    assert bytes(got) == b"".join(chunks)
    assert loop.run_until(lambda: proto.lost, 5)
    assert proto.lost == [None] and proto.transport.get_write_buffer_size() == 0


def test_abort_drops_what_is_kept_and_closes_at_once(loop):
    proto, client = connected(loop)
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    proto.transport.write(b"x" * (8 << 20))
    assert proto.transport.get_write_buffer_size() > 0
    proto.transport.abort()
    assert proto.transport.get_write_buffer_size() == 0
    assert loop.run_until(lambda: proto.lost, 5)
    proto.transport.write(b"more")             # (nothing: it is closed)
    client.close()


def test_a_reset_by_the_peer_is_an_error_for_connection_lost(loop):
    proto, client = connected(loop)
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    proto.transport.write(b"x" * (8 << 20))    # kept: the peer does not read
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    client.close()                              # RST
    assert loop.run_until(lambda: proto.lost, 5)
    assert isinstance(proto.lost[0], OSError)


def test_an_exception_in_data_received_closes_that_connection_only(loop, caplog):
    bad, bad_client = connected(loop, lambda: Recorder(fail_on=b"boom"))
    good, good_client = connected(loop)
    bad_client.sendall(b"boom")
    good_client.sendall(b"fine")
    assert loop.run_until(lambda: bad.lost and good.data == b"fine", 5)
    assert isinstance(bad.lost[0], RuntimeError)
    assert "a bug in the protocol" in caplog.text
    assert not good.lost
    assert bad_client.recv(10) == b""          # closed on its side
    good_client.close()
    bad_client.close()


def test_a_transport_says_what_it_is(loop):
    proto, client = connected(loop)
    assert isinstance(proto.transport, SocketTransport)
    assert not proto.transport.is_closing()
    assert proto.transport.get_extra_info("sockname")[0] == "127.0.0.1"
    assert proto.transport.get_extra_info("nothing", 7) == 7
    proto.transport.close()
    assert proto.transport.is_closing()
    client.close()


def test_a_callback_handed_to_a_closed_loop_is_dropped():
    """(JetStream's threads may still deliver while the server stops.)"""
    loop = Loop()
    loop.close()
    handle = loop.call_soon_threadsafe(print, "never")
    assert handle.cancelled
    loop.close()                                # (twice is once)
