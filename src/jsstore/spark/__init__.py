"""The PySpark data source `jsstore`: batch and streaming reads of streams and KV buckets
from store directories (jsstore's and nats-server's) or over NATS, and writes into streams.

    spark.read.format("jsstore").option("path", store_dir).option("stream", "ORDERS").load()

The top-level module `pyspark_jsstore` exposes the source to Spark by name; see docs/spark.md.
pyspark and pyarrow are optional dependencies (`pip install "jsstore[spark]"`): the modules
that only plan or decode import without pyspark.
"""
