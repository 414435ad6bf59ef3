# A consumer's run of first deliveries made in C: take_run loads the next messages the
# consumer takes (its filter, in stream order, up to a count) and turns each into the bus
# message its message-by-message loop would build, the ack reply subject
# ($JS.ACK.<stream>.<consumer>.1.<stream seq>.<delivery seq>.<ts>.<pending>) included,
# for a pull request's reply subject or a push consumer's deliver subject alike.  The
# consumer (jsstore.consumer.consumer.Consumer._deliver_run) keeps its own sequences,
# records the deliveries (update_delivered_run) and hands the messages over.
