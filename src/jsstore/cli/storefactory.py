"""``--store-factory module:callable``: the store factory named on the command line.

The module is imported with the current directory first on ``sys.path`` (as ``python -m``
would have it), so a factory of the project one starts the server from is found; the
callable is then looked up in it (dotted attributes allowed: ``pkg.mod:Class.open``).
"""

from __future__ import annotations

import importlib
import os
import sys


class FactorySpecError(ValueError):
    """A --store-factory value that names no callable (the message is one line)."""


def load_store_factory(spec: str):
    """The callable `spec` ("module:callable") names; FactorySpecError if it names none."""
    module_name, sep, attr_path = spec.partition(":")
    if not sep or not module_name or not attr_path:
        raise FactorySpecError(f"--store-factory {spec!r}: expected module:callable")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        target = importlib.import_module(module_name)
    except Exception as exc:    # (not only ImportError: the module's own code may fail)
        reason = (str(exc).splitlines() or [""])[0]
        raise FactorySpecError(f"--store-factory {spec!r}: cannot import {module_name}: "
                               f"{type(exc).__name__}: {reason}") from None
    for part in attr_path.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise FactorySpecError(f"--store-factory {spec!r}: {module_name} has no "
                                   f"{attr_path}") from None
    if not callable(target):
        raise FactorySpecError(f"--store-factory {spec!r}: {attr_path} is not callable")
    return target
