"""jsstore: a JetStream-compatible message store with a Cython core.

    import jsstore
    fs = jsstore.FileStore(directory, jsstore.StreamConfig(name="ORDERS", subjects=["orders.>"]))
    seq, ts = fs.store_msg("orders.new", None, b"payload")
    fs.load_msg(seq)
"""

from jsstore.config import StoreOptions, StreamConfig
from jsstore.filestore import FileStore, stream_dir
from jsstore.memstore import MemStore
from jsstore import errors

__version__ = "0.1.0"

__all__ = ["FileStore", "MemStore", "StreamConfig", "StoreOptions", "errors", "stream_dir", "__version__"]
