"""The server in process: slow consumers and the bridge's interest."""

from __future__ import annotations

import asyncio
import socket

from jsstore.jetstream import account as jetstream
from jsstore.server import Server
from inprocess import serve_in_thread


def test_a_client_that_does_not_read_is_dropped(tmp_path):
    async def main():
        server = Server(None, host="127.0.0.1", port=-1, max_pending=256 * 1024)
        stop = serve_in_thread(server)
        loop = asyncio.get_running_loop()
        reader = socket.create_connection(("127.0.0.1", server.port))
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        reader.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\nSUB big 1\r\nPING\r\n')
        await asyncio.sleep(0.1)
        writer_r, writer_w = await asyncio.open_connection("127.0.0.1", server.port)
        await writer_r.readline()                     # INFO
        frame = b"PUB big 65536\r\n" + b"x" * 65536 + b"\r\n"
        writer_w.write(b'CONNECT {"verbose":false,"pedantic":false}\r\n')
        for _ in range(200):                          # 13 MB nobody reads
            writer_w.write(frame)
            await writer_w.drain()
            if server.slow_consumers:
                break
        await asyncio.sleep(0.1)
        dropped = server.slow_consumers
        writer_w.close()
        reader.close()
        stop()
        return dropped, loop
    dropped, _ = asyncio.run(main())
    assert dropped == 1


def test_push_consumer_follows_client_interest(tmp_path):
    async def main():
        js = jetstream.open(tmp_path)
        js.add_stream(name="S", subjects=["s.*"])
        js.publish("s.a", b"1")
        js.add_consumer("S", durable_name="P", deliver_subject="push.p", ack_policy="none")
        server = Server(js, host="127.0.0.1", port=-1)
        stop = serve_in_thread(server)
        assert not js.consumer_info("S", "P").push_bound
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        await reader.readline()                       # INFO
        writer.write(b'CONNECT {"verbose":false,"pedantic":false}\r\nSUB push.p 7\r\nPING\r\n')
        await writer.drain()
        lines = [await reader.readline() for _ in range(3)]
        bound = js.consumer_info("S", "P").push_bound
        writer.close()
        stop()
        return lines, bound
    lines, bound = asyncio.run(main())
    assert lines[0].startswith(b"MSG s.a 7 $JS.ACK.S.P.1.1.1.") or lines[0] == b"PONG\r\n"
    assert b"MSG s.a 7" in b"".join(lines)
    assert bound
