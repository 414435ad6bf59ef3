# A consumer's run of first deliveries made in C: take_run loads the next messages the
# consumer takes (its filter, in stream order, up to a count), each with the ack reply
# subject its message-by-message loop would write
# ($JS.ACK.<stream>.<consumer>.1.<stream seq>.<delivery seq>.<ts>.<pending>), for a pull
# request's reply subject or a push consumer's deliver subject alike, and either renders
# it through the account's plan for that subject into the receivers' buffers (the
# server's way out: no Python object per message) or makes it the bus message the loop
# would build (an embedded fetch, a bus subscriber, another thread).  The
# consumer (jsstore.consumer.consumer.Consumer._deliver_run) keeps its own sequences,
# records the deliveries (update_delivered_run) and hands the messages over.
