"""The version of jsstore (a leaf module: the server and the command report it)."""

__version__ = "0.1.0"
