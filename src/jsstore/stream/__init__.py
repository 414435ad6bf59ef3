"""One stream: its configuration (``config``), the open stream and its publish path
(``stream``, ``publish``), the publish checks (``checks``), message counters, atomic batches,
schedules, expiry, interest/workqueue retention, mirrors and sources, subject transforms, and
the advisories JetStream emits about streams.
"""
