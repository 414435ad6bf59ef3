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
it is ready.
"""

from __future__ import annotations

import importlib

__all__ = ["deferred"]


class Deferred:
    """Stands for the module `name` until an attribute is asked of it, then imports it
    and answers from it."""

    __slots__ = ("_name", "_module")

    def __init__(self, name: str):
        self._name = name
        self._module = None

    def __getattr__(self, attribute: str):
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attribute)

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "not imported yet"
        return f"<deferred module {self._name!r} ({state})>"


def deferred(name: str) -> Deferred:
    """The module `name` (a dotted, absolute name), imported on first attribute use."""
    return Deferred(name)


class DeferredLogger:
    """Stands for ``logging.getLogger(name)``: the logging package (with re, traceback
    and string beneath it) is imported when something is first logged, not when the
    module that logs is.  The server's modules log only what goes wrong."""

    __slots__ = ("_name", "_logger")

    def __init__(self, name: str):
        self._name = name
        self._logger = None

    def __getattr__(self, attribute: str):
        logger = self._logger
        if logger is None:
            logger = self._logger = importlib.import_module("logging").getLogger(self._name)
        return getattr(logger, attribute)

    def __repr__(self) -> str:
        return f"<deferred logger {self._name!r}>"


def deferred_logger(name: str) -> DeferredLogger:
    """The logger `name`, the logging package imported with its first use."""
    return DeferredLogger(name)
