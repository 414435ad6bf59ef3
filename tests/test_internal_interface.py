"""The objects of the consumer layer and JetStream's internal interface.

api/ and server/ reach JetStream only through its named interface (``lock``, the
``..._locked`` look-ups, ``consumers``, ``advise``, ...), never through its private
members; a consumer owns the push or the pull side, never both.
"""

from __future__ import annotations

import ast
import pathlib

import jsstore
from jsstore.consumer.consumer import Consumer
from jsstore.consumer.pull import PullRequests
from jsstore.consumer.push import PushDelivery
from jsstore.jetstream.consumers import ConsumerRegistry

SRC = pathlib.Path(jsstore.__file__).parent
OUTSIDE = [*sorted((SRC / "api").glob("*.py")), *sorted((SRC / "server").glob("*.py")),
           SRC / "stream" / "sources.py"]


def _names_jetstream(node: ast.expr) -> bool:
    """`js`, `self.js`, `self.api.js`, ...: an expression naming the JetStream."""
    if isinstance(node, ast.Name):
        return node.id == "js"
    return isinstance(node, ast.Attribute) and node.attr == "js"


def test_api_and_server_use_no_private_member_of_jetstream():
    found = []
    for path in OUTSIDE:
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__") and _names_jetstream(node.value)):
                found.append(f"{path.relative_to(SRC)}:{node.lineno}: .{node.attr}")
    assert found == []


def test_the_scan_sees_a_private_member():
    tree = ast.parse("with self.js._lock:\n    js._streams.get(name)\n")
    hits = [n.attr for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and n.attr.startswith("_")
            and _names_jetstream(n.value)]
    assert sorted(hits) == ["_lock", "_streams"]


def test_consumer_is_one_class_with_its_collaborators():
    assert Consumer.__mro__ == (Consumer, object)
    with jsstore.open() as js:
        js.add_stream(name="S", subjects=["s.>"])
        js.add_consumer("S", durable_name="PULL", ack_policy="explicit")
        js.add_consumer("S", durable_name="PUSH", deliver_subject="d.push")
        with js.lock:
            pull = js.consumers.find_locked("S", "PULL")
            push = js.consumers.find_locked("S", "PUSH")
            assert js.consumers.find_locked("S", "NONE") is None
        assert isinstance(pull.pull, PullRequests) and pull.push is None
        assert isinstance(push.push, PushDelivery) and push.pull is None
        assert push.push.deliver_subject == "d.push"


def test_jetstream_consumer_methods_are_the_registry_s():
    for name in ("add_consumer", "update_consumer", "consumer_info", "consumer_names",
                 "consumers_info", "delete_consumer", "pause_consumer", "unpin_consumer",
                 "reset_consumer", "pull_subscribe"):
        method = getattr(jsstore.JetStream, name)
        assert method.__wrapped__ is getattr(ConsumerRegistry, name)
        assert method.__doc__
