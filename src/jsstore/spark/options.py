"""The options of the `jsstore` data source, parsed once from Spark's string options.

Spark hands a data source its options as a case-insensitive dict of strings; every reader,
writer and planner here takes a `SourceOptions` instead, so a typo or a bad value fails at
planning time with a message naming the option.  A read checks every option's name: one
this source does not know, one only the other kind of read takes (a streaming option on a
batch read, or the reverse), or one only the JVM reader takes fails the query with the
option named and the valid ones listed.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, field

from jsstore._core.storage.subjects import is_valid_subject

DEFAULT_ACCOUNT = "$G"
DEFAULT_BATCH_ROWS = 262_144     # bench/spark.py: fewer, larger batches cross to the JVM faster
# block bytes per task: Spark's own file sources default to 128 MB per partition
# (spark.sql.files.maxPartitionBytes); a Python source pays a fixed cost per task too, so
# fewer, larger tasks read faster on few cores (bench/spark.py measures it)
DEFAULT_PARTITION_BYTES = 128 * 1024 * 1024
DEFAULT_NATS_PARTITION_MESSAGES = 100_000
DEFAULT_NATS_BATCH = 5000          # bench: a Python server spends less per message on fewer, larger pulls
KV_STREAM_PREFIX = "KV_"
KV_SUBJECT_PREFIX = "$KV."
TRUE_WORDS = ("true", "1", "yes", "on")
BATCH_READ = "batch read"
STREAM_READ = "streaming read"
# options every read takes, and those only one kind of read takes (Spark lowercases names)
READ_OPTIONS = ("path", "url", "user", "password", "token", "stream", "account",
                "subject_filter", "batch_rows", "partition_bytes", "nats_partition_messages",
                "nats_batch", "fail_on_data_loss")
ONLY_BATCH = ("kv", "kv_history", "pushdown")
ONLY_STREAMING = ("startingoffsets", "maxmessagespertrigger")
ONLY_JVM = ("columnar", "block_index", "block_index_dir")
SPELLING = {"startingoffsets": "startingOffsets", "maxmessagespertrigger": "maxMessagesPerTrigger"}
FALSE_WORDS = ("false", "0", "no", "off")


class OptionError(ValueError):
    """An option of the jsstore data source is missing or has a bad value."""


def parse_bool(name: str, value: str | None, default: bool) -> bool:
    if value is None or value == "":
        return default
    lowered = str(value).strip().lower()
    if lowered in TRUE_WORDS:
        return True
    if lowered in FALSE_WORDS:
        return False
    raise OptionError(f"option {name!r}: {value!r} is not true or false")


def parse_int(name: str, value: str | None, default: int | None, minimum: int = 0) -> int | None:
    if value is None or value == "":
        return default
    try:
        number = int(str(value).strip())
    except ValueError:
        raise OptionError(f"option {name!r}: {value!r} is not an integer") from None
    if number < minimum:
        raise OptionError(f"option {name!r}: {number} is below {minimum}")
    return number


def parse_time_ns(name: str, value) -> int:
    """Unix ns of an RFC 3339 / ISO 8601 time (no zone = UTC), or of a datetime."""
    if isinstance(value, datetime.datetime):
        moment = value
    else:
        text = str(value).strip()
        if text.isdigit():
            return int(text)
        try:
            moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise OptionError(f"option {name!r}: {value!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    delta = moment - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def split_list(value: str | None) -> list[str]:
    if not value:
        return []
    return [part.strip() for part in str(value).split(",") if part.strip()]


def parse_subject_filters(value: str | None) -> list[str]:
    """The `subject_filter` option: NATS filters, comma separated, each valid (no empty
    token, `>` only last) as nats-server requires of a consumer's filter subject."""
    if value is None or value == "":
        return []
    filters = [part.strip() for part in str(value).split(",")]
    for item in filters:
        if not is_valid_subject(item, True):
            raise OptionError(f"option 'subject_filter': {item!r} is not a valid NATS subject "
                              "filter (tokens separated by '.', none empty, '*' a whole token, "
                              "'>' only as the last token)")
    return filters


def check_read_option_names(options, kind: str) -> None:
    """Refuse, naming it, an option a read of this `kind` does not take."""
    allowed = READ_OPTIONS + (ONLY_BATCH if kind == BATCH_READ else ONLY_STREAMING)
    for name in options.keys():
        key = str(name).lower()
        if key in allowed:
            continue
        shown = SPELLING.get(key, key)
        if key in ONLY_STREAMING or key in ONLY_BATCH:
            reason = (f"is taken by streaming reads only (spark.readStream)"
                      if key in ONLY_STREAMING else "is taken by batch reads only (spark.read)")
        elif key in ONLY_JVM:
            reason = "is taken by the JVM reader only (format(\"jsstore-jvm\"))"
        else:
            reason = "is not an option of the jsstore source"
        valid = ", ".join(SPELLING.get(n, n) for n in allowed)
        raise OptionError(f"option {shown!r} {reason}; a {kind} takes: {valid}")


@dataclass
class SourceOptions:
    path: str | None = None                # store directory
    stream: str | None = None
    account: str = DEFAULT_ACCOUNT
    kv: str | None = None                  # KV bucket name (reads stream KV_<bucket>)
    kv_history: bool = False
    subject_filter: list[str] = field(default_factory=list)   # NATS filters, any may match
    url: str | None = None                 # NATS server(s), comma separated
    user: str | None = None
    password: str | None = None
    token: str | None = None
    batch_rows: int = DEFAULT_BATCH_ROWS
    partition_bytes: int = DEFAULT_PARTITION_BYTES
    nats_partition_messages: int = DEFAULT_NATS_PARTITION_MESSAGES
    nats_batch: int = DEFAULT_NATS_BATCH
    fail_on_data_loss: bool = True        # a damaged or missing block fails the read
    # writing
    create: bool = False                   # create the stream on write when missing
    subjects: list[str] = field(default_factory=list)    # its subjects when created
    compression: str | None = None
    sink_id: str | None = None             # streaming sink: names its writes (<sink_id>@<batch>)
    write_id: str | None = None            # names a batch write: running it again appends nothing
    server_stopped: bool = False           # the user says no nats-server serves `path`
    given: tuple = ()                      # the option names given, lowercased
    # streaming
    starting_offsets: str = "earliest"
    max_messages_per_trigger: int | None = None

    @property
    def stream_name(self) -> str:
        return KV_STREAM_PREFIX + self.kv if self.kv else self.stream

    @property
    def over_nats(self) -> bool:
        return bool(self.url)

    def stream_directory(self) -> str:
        return os.path.join(self.path, "jetstream", self.account, "streams", self.stream_name)

    @classmethod
    def parse(cls, options, read: str | None = None) -> "SourceOptions":
        """`read` (BATCH_READ or STREAM_READ) checks every option name for that read."""
        if read is not None:
            check_read_option_names(options, read)
            if parse_bool("pushdown", options.get("pushdown"), False):
                raise OptionError("option 'pushdown': the Python source takes no filters from "
                                  "Spark (pyspark reuses a Python source's pushed filters in "
                                  "later queries of the same DataFrame or view); Spark filters "
                                  "the rows. Use format(\"jsstore-jvm\") for filter pushdown, "
                                  "or option 'subject_filter'")
        get = options.get
        opts = cls(
            path=get("path") or None,
            stream=get("stream") or None,
            account=get("account") or DEFAULT_ACCOUNT,
            kv=get("kv") or None,
            kv_history=parse_bool("kv_history", get("kv_history"), False),
            subject_filter=parse_subject_filters(get("subject_filter")),
            url=get("url") or None,
            user=get("user") or None,
            password=get("password") or None,
            token=get("token") or None,
            batch_rows=parse_int("batch_rows", get("batch_rows"), DEFAULT_BATCH_ROWS, 1),
            partition_bytes=parse_int("partition_bytes", get("partition_bytes"),
                                      DEFAULT_PARTITION_BYTES, 1),
            nats_partition_messages=parse_int("nats_partition_messages",
                                              get("nats_partition_messages"),
                                              DEFAULT_NATS_PARTITION_MESSAGES, 1),
            nats_batch=parse_int("nats_batch", get("nats_batch"), DEFAULT_NATS_BATCH, 1),
            fail_on_data_loss=parse_bool("fail_on_data_loss", get("fail_on_data_loss"), True),
            create=parse_bool("create", get("create"), False),
            subjects=split_list(get("subjects")),
            compression=get("compression") or None,
            sink_id=get("sink_id") or None,
            write_id=get("write_id") or None,
            server_stopped=parse_bool("server_stopped", get("server_stopped"), False),
            given=tuple(str(name).lower() for name in options.keys()),
            starting_offsets=(get("startingOffsets") or "earliest").strip(),
            max_messages_per_trigger=parse_int("maxMessagesPerTrigger",
                                               get("maxMessagesPerTrigger"), None, 1),
        )
        if opts.kv and opts.stream:
            raise OptionError("give either option 'stream' or option 'kv', not both")
        if not opts.kv and not opts.stream:
            raise OptionError("option 'stream' (or 'kv' for a KV bucket) is required")
        if not opts.path and not opts.url:
            raise OptionError("option 'path' (a store directory) or 'url' (a NATS server) "
                              "is required")
        if opts.path and opts.url:
            raise OptionError("give either option 'path' or option 'url', not both")
        return opts
