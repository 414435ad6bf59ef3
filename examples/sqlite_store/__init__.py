"""An example plug-in store: jsstore's streams kept in SQLite (``store.SqliteStore``).

    jsstore serve -js -sd data --store-factory examples.sqlite_store:open_store

    js = jsstore.open("data", store_factory=open_store)

``open_store`` is the store factory (``jsstore.store.contract.StreamStoreFactory``); the
test suite runs jsstore.testing's contract kit against it and serves nats-py through it
(tests/test_example_sqlite_store.py).
"""

from __future__ import annotations

from jsstore.store.config import StoreConfig, StoreOptions

from .store import SqliteStore


def open_store(directory: str, config: StoreConfig, options: StoreOptions | None) -> SqliteStore:
    """The store factory: a SqliteStore in the stream's directory."""
    return SqliteStore(directory, config, options)


__all__ = ["SqliteStore", "open_store"]
