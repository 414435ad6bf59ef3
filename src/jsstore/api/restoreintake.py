"""A restore's upload as it arrives (STREAM.RESTORE's chunks): spooled to a file, never held
in memory, and checked against the account's limits while it streams, as nats-server
does by reading the upload through a pipe.

Each chunk's S2 (or Snappy) frames are decoded as soon as they are whole and the plain
bytes appended to the spool file. In a tar snapshot, the size in each member's header is
added up as it passes (nats-server's ``bc``) and handed to `check_bytes`, which raises the
account's error (10047, "insufficient storage resources available") once the members
would not fit; in a NATSARC1 archive every plain byte counts. The first error ends the
intake: later chunks are dropped unread and the error is the restore's answer.
"""

from __future__ import annotations

import os
import tempfile
from typing import Callable

from jsstore._core.storage.compress import s2_decode_stream
from jsstore.store.archive import MAGIC
from jsstore.store.staging import staging_prefix

STREAM_IDENTIFIER = 0xFF
COMPRESSED, UNCOMPRESSED = 0x00, 0x01
PADDING = 0xFE
TAR_BLOCK = 512
MAX_FRAME = (4 << 20) + 1024      # S2's largest block, encoded, and its checksum


class RestoreIntake:
    """One upload: `feed` each chunk, then `finish` for the spool file's path."""

    def __init__(self, directory: str | None, check_bytes: Callable[[int], None]):
        self.directory = directory
        self.path: str | None = None    # the spool file, made with the first plain bytes
        self.file = None
        self.check_bytes = check_bytes
        self.error: Exception | None = None
        self.received = 0               # upload bytes
        self.plain = 0                  # decoded bytes (spooled)
        self._pending = b""             # the start of a frame not yet whole
        self._identifier: bytes | None = None   # the stream's identifier frame
        self._kind: str | None = None   # "tar" or "archive", from the first plain bytes
        self._head = b""                # plain bytes before the kind is known
        self._header = b""              # the part of a tar header read so far
        self._skip = 0                  # tar: bytes of the current member (and padding)
        self._ended = False             # tar: its end marker was seen
        self.members_bytes = 0          # tar: the sizes its headers gave so far

    def feed(self, chunk: bytes) -> None:
        """Take a chunk; raises (and remembers) the first error: a frame that is not S2,
        or bytes over the account's limits."""
        if self.error is not None:
            return
        self.received += len(chunk)
        try:
            self._frames(self._pending + chunk)
        except Exception as exc:
            self.error = exc
            self._drop()
            raise

    def finish(self) -> str:
        """The spool file of the plain upload; raises when it ended inside a frame or
        held nothing."""
        if self.error is None and self._pending:
            self.error = ValueError("s2: unexpected EOF: the upload ends inside a frame")
        if self.error is None and self.file is None:
            self.error = ValueError("s2: the upload holds no data")
        if self.error is not None:
            raise self.error
        self.file.close()
        return self.path

    def close(self) -> None:
        self._drop()
        if self.path is not None:
            try:
                os.unlink(self.path)
            except OSError:
                pass

    def _drop(self) -> None:
        self._pending = self._head = self._header = b""
        if self.file is not None and not self.file.closed:
            self.file.close()

    # -- S2 framing ---------------------------------------------------------------------
    def _frames(self, data: bytes) -> None:
        pos, end = 0, len(data)
        while end - pos >= 4:
            kind = data[pos]
            length = int.from_bytes(data[pos + 1:pos + 4], "little")
            if length > MAX_FRAME:
                raise ValueError("s2: corrupt input: a frame longer than S2 allows")
            if end - pos - 4 < length:
                break
            frame = data[pos:pos + 4 + length]
            pos += 4 + length
            if self._identifier is None:
                if kind != STREAM_IDENTIFIER:
                    raise ValueError("s2: corrupt input: no stream identifier")
                self._identifier = frame
                continue
            if kind in (COMPRESSED, UNCOMPRESSED):
                self._plain(s2_decode_stream(self._identifier + frame))
            elif kind == STREAM_IDENTIFIER:
                if frame != self._identifier:
                    raise ValueError("s2: corrupt input: another stream identifier")
            elif 0x02 <= kind <= 0x7F:
                raise ValueError(f"s2: unsupported input: reserved frame type {kind:#04x}")
            # (0x80..0xfd: skippable, 0xfe: padding)
        self._pending = data[pos:]

    # -- the plain bytes ----------------------------------------------------------------
    def _plain(self, data: bytes) -> None:
        if self.file is None:
            fd, self.path = tempfile.mkstemp(prefix=staging_prefix() + "upload-",
                                             dir=self.directory)
            self.file = os.fdopen(fd, "wb")
        self.file.write(data)
        self.plain += len(data)
        if self._kind is None:
            self._head += data
            if len(self._head) < len(MAGIC):
                return
            self._kind = "archive" if self._head.startswith(MAGIC) else "tar"
            data, self._head = self._head, b""
        if self._kind == "archive":
            self.check_bytes(self.plain)
        else:
            self._tar(data)

    def _tar(self, data: bytes) -> None:
        """Walk the members' headers: each one's size counts before its bytes are taken."""
        pos, end = 0, len(data)
        while pos < end and not self._ended:
            if self._skip:
                step = min(self._skip, end - pos)
                self._skip -= step
                pos += step
                continue
            want = TAR_BLOCK - len(self._header)
            self._header += data[pos:pos + want]
            pos += want
            if len(self._header) < TAR_BLOCK:
                return
            header, self._header = self._header, b""
            if not header.strip(b"\0"):
                self._ended = True          # (the end marker: two zero blocks)
                return
            size = _tar_size(header)
            self.members_bytes += size
            self.check_bytes(self.members_bytes)
            self._skip = -(-size // TAR_BLOCK) * TAR_BLOCK


def _tar_size(header: bytes) -> int:
    """A tar header's member size: octal digits, or GNU's base-256 form."""
    field = header[124:136]
    if field[0] & 0x80:
        return int.from_bytes(field[1:], "big")
    digits = field.strip(b"\0 ")
    try:
        return int(digits, 8) if digits else 0
    except ValueError:
        raise ValueError("archive/tar: invalid header: a size that is not a number") from None
