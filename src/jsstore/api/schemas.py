"""Request and response types of the stream API, in nats-server's JSON shape.

Requests hold what `jsstore.api.requests` decodes from the bodies nats clients send, as
nats-server's Go decoder reads them.  Responses encode with nats-server's key order: the ``type`` string
first, then the paging fields when the response has them, then the payload.  A field that
nats-server marks ``omitempty`` has a default here and the struct omits defaults; a field it
always writes has no default (or is written even when empty).  Times are RFC 3339 text with
nanoseconds, UTC; Go's zero time is ``"0001-01-01T00:00:00Z"``.
"""

from __future__ import annotations

import msgspec

from jsstore.gocompat.times import ZERO_TIME
from jsstore.stream.config import StreamConfig
from jsstore.wire.api import API_LEVEL, API_PREFIX, SERVER_VERSION, TYPE_PREFIX  # noqa: F401

ACCOUNT_INFO_TYPE = TYPE_PREFIX + "account_info_response"
STREAM_CREATE_TYPE = TYPE_PREFIX + "stream_create_response"
STREAM_UPDATE_TYPE = TYPE_PREFIX + "stream_update_response"
STREAM_INFO_TYPE = TYPE_PREFIX + "stream_info_response"
STREAM_DELETE_TYPE = TYPE_PREFIX + "stream_delete_response"
STREAM_PURGE_TYPE = TYPE_PREFIX + "stream_purge_response"
STREAM_NAMES_TYPE = TYPE_PREFIX + "stream_names_response"
STREAM_LIST_TYPE = TYPE_PREFIX + "stream_list_response"
MSG_GET_TYPE = TYPE_PREFIX + "stream_msg_get_response"
MSG_DELETE_TYPE = TYPE_PREFIX + "stream_msg_delete_response"

NAMES_LIMIT = 1024             # JSApiNamesLimit: names per STREAM.NAMES page
LIST_LIMIT = 256               # JSApiListLimit: infos per STREAM.LIST page
MAX_SUBJECT_DETAILS = 100_000  # JSMaxSubjectDetails: subjects per STREAM.INFO page
GO_ZERO_TIME = ZERO_TIME     # Go's zero time.Time, as JSON writes it


# -- requests -----------------------------------------------------------------------------
class StreamInfoRequest(msgspec.Struct):
    """STREAM.INFO body: deleted sequences and per-subject counts on request."""
    deleted_details: bool = False
    subjects_filter: str = ""
    offset: int = 0            # first subject (in sorted order) of the page


class StreamNamesRequest(msgspec.Struct):
    """STREAM.NAMES and STREAM.LIST body: a page offset and an optional subject filter."""
    offset: int = 0
    subject: str = ""          # only streams whose subjects overlap this filter


class StreamPurgeRequest(msgspec.Struct):
    """STREAM.PURGE body; all fields optional (no body purges everything)."""
    filter: str = ""
    seq: int = 0               # remove everything below this sequence
    keep: int = 0              # keep this many of the newest messages


class MsgGetRequest(msgspec.Struct):
    """STREAM.MSG.GET body: a sequence, the last on a subject, or the next on one."""
    seq: int = 0
    last_by_subj: str = ""
    next_by_subj: str = ""
    start_time: int | None = None   # Unix ns; not with seq or last_by_subj


class MsgDeleteRequest(msgspec.Struct):
    """STREAM.MSG.DELETE body."""
    seq: int = 0
    no_erase: bool = False     # remove without overwriting the message's bytes


# -- responses ----------------------------------------------------------------------------
class ErrorResponse(msgspec.Struct):
    """Any failed request: the response type and nats-server's error object."""
    type: str
    error: dict                # ApiError.to_dict(): code, err_code, description


class StreamInfoPagedError(msgspec.Struct):
    """A failed STREAM.INFO: nats-server still writes its (zero) paging fields."""
    type: str
    error: dict
    total: int = 0
    offset: int = 0
    limit: int = 0


class PagedListError(msgspec.Struct):
    """A failed STREAM.NAMES: zero paging fields and a null list."""
    type: str
    error: dict
    total: int = 0
    offset: int = 0
    limit: int = 0
    streams: None = None


class ListError(msgspec.Struct):
    """A failed STREAM.LIST: zero paging fields and an empty list."""
    type: str
    error: dict
    total: int = 0
    offset: int = 0
    limit: int = 0
    streams: list = []


class PurgeError(msgspec.Struct):
    """A failed STREAM.PURGE: nats-server still writes "purged" (0)."""
    type: str
    error: dict
    purged: int = 0


class LostData(msgspec.Struct, omit_defaults=True):
    """Messages the store lost (a corrupt block), as nats-server reports them."""
    msgs: list[int] | None = None
    bytes: int = 0


class StreamStateBody(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A stream's state as nats-server writes it (the times as RFC 3339 text)."""
    messages: int
    bytes: int
    first_seq: int
    first_ts: str
    last_seq: int
    last_ts: str
    num_subjects: int = 0
    subjects: dict[str, int] | None = None   # keys sorted, as Go writes a map
    num_deleted: int = 0
    deleted: list[int] | None = None
    lost: LostData | None = None
    consumer_count: int


class StreamInfoBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One stream in a STREAM.LIST page."""
    config: StreamConfig
    created: str
    state: StreamStateBody
    domain: str | None = None           # the JetStream domain, when there is one
    mirror: dict | None = None          # StreamSourceInfo of a mirror
    sources: list[dict] | None = None   # StreamSourceInfo of each source
    ts: str                    # the server's time of the answer


class StreamCreateResponse(msgspec.Struct, kw_only=True, omit_defaults=True):
    type: str
    config: StreamConfig
    created: str
    state: StreamStateBody
    mirror: dict | None = None
    sources: list[dict] | None = None
    ts: str
    did_create: bool = False


class StreamUpdateResponse(msgspec.Struct, kw_only=True, omit_defaults=True):
    type: str
    config: StreamConfig
    created: str
    state: StreamStateBody
    domain: str | None = None
    mirror: dict | None = None
    sources: list[dict] | None = None
    ts: str


class StreamInfoResponse(msgspec.Struct, kw_only=True, omit_defaults=True):
    type: str
    total: int                 # subjects matching subjects_filter (0 without one)
    offset: int
    limit: int                 # MAX_SUBJECT_DETAILS when subjects were asked for, else 0
    config: StreamConfig
    created: str
    state: StreamStateBody
    domain: str | None = None
    cluster: dict | None = None   # {"leader": the server's name} (from a server only)
    mirror: dict | None = None
    sources: list[dict] | None = None
    ts: str


class SuccessResponse(msgspec.Struct):
    """STREAM.DELETE and STREAM.MSG.DELETE on success."""
    type: str
    success: bool = True


class StreamPurgeResponse(msgspec.Struct):
    type: str
    success: bool
    purged: int


class StreamNamesResponse(msgspec.Struct):
    type: str
    total: int
    offset: int
    limit: int
    streams: list[str] | None  # null, not [], when the page is empty (as nats-server)


class StreamListResponse(msgspec.Struct):
    type: str
    total: int
    offset: int
    limit: int
    streams: list[StreamInfoBody]


class StoredMsgBody(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A message read by STREAM.MSG.GET; hdrs and data are base64 (bytes encode so)."""
    subject: str
    seq: int
    hdrs: bytes = b""
    data: bytes = b""
    time: str


class MsgGetResponse(msgspec.Struct):
    type: str
    message: StoredMsgBody


class ApiStats(msgspec.Struct):
    """API usage of the account since this JetStream was opened."""
    level: int
    total: int                 # requests answered (before this one)
    errors: int                # of which answered with an error


class AccountLimitsBody(msgspec.Struct):
    max_memory: int
    max_storage: int
    max_streams: int
    max_consumers: int
    max_ack_pending: int
    memory_max_stream_bytes: int
    storage_max_stream_bytes: int
    max_bytes_required: bool


class AccountInfoResponse(msgspec.Struct, kw_only=True, omit_defaults=True):
    type: str
    memory: int
    storage: int
    reserved_memory: int
    reserved_storage: int
    streams: int
    consumers: int
    limits: AccountLimitsBody
    domain: str | None = None
    api: ApiStats
