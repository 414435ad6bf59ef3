"""One consumer: its configuration (``config``) and create rules (``create``), the consumer
itself (``consumer``: sequences and the delivery loop) and the objects it owns --
acknowledgements and redelivery (``acknowledgements``), pull requests and the wait queue
(``pull``, ``waitqueue``, ``pullrequests``), push delivery (``push``), the delete timer
(``inactivity``) -- and the consumer events.
"""
