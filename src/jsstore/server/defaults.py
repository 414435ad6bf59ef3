"""What the server says of itself and the limits it starts with, as nats-server's defaults."""

DEFAULT_MAX_PAYLOAD = 1024 * 1024
DEFAULT_MAX_PENDING = 64 * 1024 * 1024    # MAX_PENDING_SIZE: bytes queued to one client
GO_VERSION = "go1.25.0"                   # the Go version INFO and /varz report
LAME_DUCK_DURATION = 120.0          # seconds over which lame duck mode closes the clients
LAME_DUCK_GRACE_PERIOD = 10.0       # ... after waiting this long
DEFAULT_SYNC_INTERVAL = 120_000_000_000      # ns: the file stores' background fsync
