"""The message store: records, blocks, the stream engine, subjects, sequence sets, ack state."""
