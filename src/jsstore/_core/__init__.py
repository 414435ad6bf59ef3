"""The Cython core of jsstore, a subpackage per layer: storage (the message store), delivery
(the way out of the server), wire (the client protocol), columns (Spark's Arrow columns).
Each module's .pxd is its map: read those first."""
