"""``jsstore serve``: the NATS client protocol over TCP in front of an embedded JetStream.

    server = Server(jetstream.open(store_dir), host="127.0.0.1", port=4222)
    asyncio.run(server.serve())

``subscriptions`` holds the subject table, ``client`` one connection, ``server`` the
listener and the bridge between clients and JetStream's bus.
"""

from jsstore.server.server import Server

__all__ = ["Server"]
