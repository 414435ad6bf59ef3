"""``StreamStoreContract``: the whole store contract kit in one base class.

    from jsstore.testing import StreamStoreContract

    class TestMyStore(StreamStoreContract):
        def open_store(self, directory, config):
            return MyStore(directory, config)

pytest then runs every case of the contract (``MessageCases``, ``BulkCases``,
``QueryCases``: 43 tests, most of them across a stop and reopen of the store)
and the model-based test (``ModelCases``) against ``MyStore``.  Class attributes adapt
the kit to the store (``jsstore.testing.harness.StoreHarness``): ``storage = "memory"``
and ``reopens = False`` for a store that keeps nothing, ``config_defaults``,
``erases_on_disk``, ``message_size()`` for another byte accounting than nats-server's,
``model_examples``/``model_steps``, ``abandon(store)`` to add crash recovery to the model.
"""

from __future__ import annotations

from jsstore.testing.cases_bulk import BulkCases
from jsstore.testing.cases_messages import MessageCases
from jsstore.testing.cases_queries import QueryCases
from jsstore.testing.machine import ModelCases


class StreamStoreContract(MessageCases, BulkCases, QueryCases, ModelCases):
    """Every test of the store contract; define open_store(directory, config)."""
