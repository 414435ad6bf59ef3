"""The embedded JetStream account: the stream and consumer registries (``account``,
``consumers``), its timers, and the embedded pull subscription (``pullsub``).
"""
