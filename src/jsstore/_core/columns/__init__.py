"""Spark columns: Arrow buffers from block bytes, block records from the MSG frames of a read."""
