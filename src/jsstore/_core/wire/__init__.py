"""The NATS client protocol: the parser of what clients send, and v1 ack subjects taken apart."""
