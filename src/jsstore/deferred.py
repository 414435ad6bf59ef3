"""A module imported when it is first used, not when the module that names it is.

    stream = deferred("jsstore.stream.stream")     # nothing imported yet
    stream.Stream(...)                              # imported here, once

``jsstore serve`` on an empty store directory needs the server and an empty JetStream, not
the streams', consumers' and stores' machinery beneath them (nor its Cython extensions);
the modules that hold them are deferred where a JetStream names them, and load with the
first stream or consumer (a standard-library module only some paths use, such as
``tempfile``, can be deferred the same way).  A deferred jsstore module is an import like
any other to the layering rules (tests/test_layers.py reads ``deferred("jsstore...")`` calls
as imports); an attribute look-up through it costs a method call, so hot paths keep eager
imports.  tests/test_startup_imports.py checks what ``jsstore serve`` has not loaded when
it is ready.  ``deferred_logger(name)`` does the same for a module's logger: the logging
package loads with the first line logged.
"""

from __future__ import annotations

import importlib

__all__ = ["deferred", "deferred_logger"]


class Deferred:
    """Stands for an object made on first use (a module imported, a logger got): the first
    attribute asked of it loads it, and it answers from it from then on."""

    __slots__ = ("_what", "_load", "_target")

    def __init__(self, what: str, load):
        self._what = what           # what it stands for, as its repr says
        self._load = load
        self._target = None

    def __getattr__(self, attribute: str):
        target = self._target
        if target is None:
            target = self._target = self._load()
        return getattr(target, attribute)

    def __repr__(self) -> str:
        state = "loaded" if self._target is not None else "not loaded yet"
        return f"<deferred {self._what} ({state})>"


def deferred(name: str) -> Deferred:
    """The module `name` (a dotted, absolute name), imported on first attribute use."""
    return Deferred(f"module {name!r}", lambda: importlib.import_module(name))


def deferred_logger(name: str) -> Deferred:
    """``logging.getLogger(name)``, the logging package (with re, traceback and string
    beneath it) imported when something is first logged, not when the module that logs
    is.  The server's modules log only what goes wrong."""
    return Deferred(f"logger {name!r}",
                    lambda: importlib.import_module("logging").getLogger(name))
