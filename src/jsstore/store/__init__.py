"""Storage: the store contract and its implementations.

``contract`` declares what a stream store and a consumer store must do (nats-server's
``StreamStore``/``ConsumerStore``); ``filestore`` and ``memstore`` implement it over the Cython
engine (``base`` holds what they share); ``indexdb`` is ``msgs/index.db``, ``ttl`` the TTL wheel
(``msgs/thw.db``), ``snapshot`` the snapshot format, ``consumerstore`` the consumer stores
(``o.dat``), ``config`` what a store is configured with.
"""

from jsstore.store.contract import (
                                    FILE_STORAGE,
                                    MEMORY_STORAGE,
                                    ConsumerState,
                                    ConsumerStore,
                                    LostStreamData,
                                    Pending,
                                    SequencePair,
                                    SimpleState,
                                    StoredMessage,
                                    StreamState,
                                    StreamStore,
)

__all__ = ["ConsumerState", "ConsumerStore", "FILE_STORAGE", "LostStreamData", "MEMORY_STORAGE",
           "Pending", "SequencePair", "SimpleState", "StoredMessage", "StreamState", "StreamStore"]
