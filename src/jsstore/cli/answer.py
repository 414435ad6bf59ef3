"""One message the command received: an API answer, a delivered message or a status."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from jsstore.cli.errors import ApiError, CliError
from jsstore.wire import headers as header_block


@dataclass
class Answer:
    """A message as both back ends hand it over: subject, payload, headers (the first value
    of each key), its status line (``"404"``, ``"No Messages"``; empty for none) and the
    subject it can be answered on (a delivered message's ack subject)."""
    subject: str
    data: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    status: str = ""
    description: str = ""
    reply: str | None = None

    @classmethod
    def from_block(cls, subject: str, data: bytes, hdr: bytes | None,
                   reply: str | None = None) -> Answer:
        """An answer from a raw NATS header block (the in-process bus's messages)."""
        if not hdr:
            return cls(subject, bytes(data or b""), reply=reply)
        try:
            block = header_block.parse(hdr)
        except header_block.HeaderError:
            return cls(subject, bytes(data or b""), reply=reply)
        fields: dict[str, str] = {}
        for key, value in block.fields:
            fields.setdefault(key, value)
        return cls(subject, bytes(data or b""), fields, block.status, block.description, reply)

    def json(self) -> dict:
        """The payload as JSON; ApiError when it is a JetStream error answer."""
        try:
            body = msgspec.json.decode(self.data) if self.data else {}
        except msgspec.DecodeError:
            raise CliError(f"the answer on {self.subject} is not JSON: "
                           f"{self.data[:80]!r}") from None
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error = body["error"]
            raise ApiError(str(error.get("description", "error")), int(error.get("code", 0)),
                           int(error.get("err_code", 0)))
        return body
