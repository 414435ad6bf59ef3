"""One consumer: its configuration (``config``) and create rules (``create``), the consumer
itself (``consumer``) with delivery, acknowledgements and redelivery, pull requests and the
wait queue, push delivery, and the consumer events.
"""
