"""``jsstore serve``: the NATS client protocol over TCP in front of an embedded JetStream.

    server = Server(jetstream.open(store_dir), host="127.0.0.1", port=4222)
    server.run()        # until server.loop.stop() (stop_threadsafe() from another thread)

``subscriptions`` holds the subject table, ``client`` one connection, ``server`` the
listener and the bridge between clients and JetStream's bus, ``eventloop`` and
``transport`` the loop they run on.
"""

from jsstore.server.server import Server

__all__ = ["Server"]
