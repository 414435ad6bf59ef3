"""Testing with jsstore: the store contract kit and the pytest plugin.

``StreamStoreContract`` (``jsstore.testing.kit``) is the store contract's test suite as a
base class: a third-party ``StreamStore`` runs it against itself by subclassing it and
defining ``open_store``.  ``jsstore.testing.plugin`` is the pytest plugin (entry point
``jsstore``) with the fixtures ``jetstream_sync``, ``jsstore_server`` and
``jsstore_server_session``.

The kit needs pytest and Hypothesis (jsstore's ``test`` extra); they are imported when
the kit is, not by ``import jsstore`` nor by ``import jsstore.testing`` itself.
"""

from __future__ import annotations

import importlib

# name -> the module that defines it (imported on first use)
_KIT = {
    "StreamStoreContract": "jsstore.testing.kit",
    "MessageCases": "jsstore.testing.cases_messages",
    "BulkCases": "jsstore.testing.cases_bulk",
    "QueryCases": "jsstore.testing.cases_queries",
    "ModelCases": "jsstore.testing.machine",
    "StoreHarness": "jsstore.testing.harness",
    "StoreModel": "jsstore.testing.model",
}

__all__ = sorted(_KIT)


def __getattr__(name: str):
    if name in _KIT:
        return getattr(importlib.import_module(_KIT[name]), name)
    raise AttributeError(f"module 'jsstore.testing' has no attribute {name!r}")
