"""What the layers above plug into the embedded JetStream: the wire API handlers
(``jsstore.api``) and the key-value and object stores (``jsstore.buckets``) sit above this
layer, so the package's face (``jsstore/__init__.py``) hands a JetStream their factories
here.  This module is light on purpose: ``import jsstore`` plugs them in without loading
the JetStream itself."""

from __future__ import annotations

# (no typing import here: it is most of what this module would cost)

# factory(js) -> the router a JetStream's request(), request_msgs() and handle() go through
api_factory = None
# factory(js) -> what a JetStream's create_key_value, key_value, ... object_store calls go
# through; closed with the JetStream
buckets_factory = None


def use_api(factory) -> None:
    """Plug in the wire API: `factory(js)` makes the router a JetStream's request(),
    request_msgs() and handle() go through (``jsstore.api.router.Router``)."""
    global api_factory
    api_factory = factory


def use_buckets(factory) -> None:
    """Plug in the buckets: `factory(js)` makes what a JetStream's create_key_value,
    key_value, ..., object_store calls go through (``jsstore.buckets.Buckets``); it is
    closed with the JetStream."""
    global buckets_factory
    buckets_factory = factory
