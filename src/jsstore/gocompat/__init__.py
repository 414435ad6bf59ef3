"""Go's standard-library rules that nats-server's answers depend on, written once.

nats-server is a Go program: what it accepts and writes follows ``encoding/json``, ``time``
(RFC 3339, durations) and ``strconv`` (quoting). Every layer above that must answer as it
does takes those rules from here. Nothing in this package knows about NATS.
"""
