"""Spark finds a Python data source by name through a top-level module called
`pyspark_<anything>` holding `DefaultSource`: with jsstore installed,
`spark.read.format("jsstore")` works with no register() call, on the driver and on every
executor that has jsstore installed."""

from jsstore.spark.source import JetStreamDataSource as DefaultSource

__all__ = ["DefaultSource"]
