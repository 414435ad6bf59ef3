# A pull consumer's run of first deliveries made in C: take_run loads the next messages a
# plain pull request takes (the consumer's filter, in stream order, up to a count) and
# turns each into the bus message the consumer's loop would build, its ack reply subject
# ($JS.ACK.<stream>.<consumer>.1.<stream seq>.<delivery seq>.<ts>.<pending>) included.
# The consumer (jsstore.consumer.consumer.Consumer._gather_run) keeps its own sequences,
# records the deliveries (update_delivered_run) and hands the messages over.
