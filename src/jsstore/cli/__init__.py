"""The ``jsstore`` command."""

from jsstore.cli.main import main

__all__ = ["main"]
