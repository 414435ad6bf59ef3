"""Stream snapshots: the store's files as one byte stream, and the way back.

The format is nats-server's file-store snapshot: a PAX tar of `meta.inf`, `meta.sum`,
`msgs/N.blk` (uncompressed), `msgs/index.db` and `obs/<consumer>/{meta.inf, meta.sum,
o.dat}`, compressed as an S2 (Snappy-framed) stream.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import time
from typing import Iterable, Iterator

from jsstore._core.storage.compress import s2_decode_stream, s2_encode_stream
from jsstore.store import indexdb as statefile

CHUNK = 1 << 20


class _Collector(io.RawIOBase):
    """A write-only file that hands what tarfile writes to the snapshot generator."""

    def __init__(self):
        self.parts: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out = b"".join(self.parts)
        self.parts.clear()
        return out


def _add(tar: tarfile.TarFile, name: str, data: bytes, mtime: float) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = mtime
    info.mode = 0o600
    tar.addfile(info, io.BytesIO(data))


def snapshot_stream(store, include_consumers: bool = True) -> Iterator[bytes]:
    """Yield the snapshot of a FileStore in S2-compressed chunks."""
    store.flush_all_pending()
    sink = _Collector()
    now = time.time()
    tar = tarfile.open(fileobj=sink, mode="w|", format=tarfile.PAX_FORMAT)
    files: list[tuple[str, bytes]] = []
    for name in ("meta.inf", "meta.sum"):
        with open(os.path.join(store.directory, name), "rb") as f:
            files.append((name, f.read()))
    for name, data in files:
        _add(tar, name, data, now)
    for mb in list(store.blocks):
        data = mb.raw_data() if mb.is_loaded else store._read_block(mb)
        _add(tar, f"msgs/{mb.index}.blk", data, now)
        chunk = sink.take()
        if chunk:
            yield s2_encode_stream(chunk)
    if store.lmb is not None:
        store.lmb.update_last_hash()
    _add(tar, "msgs/index.db", statefile.encode_index(store), now)
    if include_consumers:
        for name, cs in sorted(store._consumers.items()):
            flush = getattr(cs, "flush", None)
            if flush is not None:
                flush()
        obs = os.path.join(store.directory, "obs")
        if os.path.isdir(obs):
            for consumer in sorted(os.listdir(obs)):
                for fname in ("meta.inf", "meta.sum", "o.dat"):
                    path = os.path.join(obs, consumer, fname)
                    if os.path.exists(path):
                        with open(path, "rb") as f:
                            _add(tar, f"obs/{consumer}/{fname}", f.read(), now)
    tar.close()
    chunk = sink.take()
    if chunk:
        yield s2_encode_stream(chunk)


def restore_snapshot(chunks: Iterable[bytes], directory: str) -> None:
    """Write the files of a snapshot stream into an (empty) stream directory."""
    extract_tar(io.BytesIO(s2_decode_stream(b"".join(chunks))), directory)


def extract_tar(plain, directory: str) -> None:
    """Write the files of a snapshot's plain tar (a binary file object, read as it goes)
    into an (empty) stream directory; a member naming a path outside it is refused."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    root = os.path.realpath(directory)
    with tarfile.open(fileobj=plain, mode="r|") as tar:
        for member in tar:
            if not member.isfile():
                continue
            target = os.path.realpath(os.path.join(root, member.name))
            if not target.startswith(root + os.sep):
                raise ValueError(f"snapshot member escapes the directory: {member.name}")
            os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
            src = tar.extractfile(member)
            with open(target, "wb") as f:
                shutil.copyfileobj(src, f, 1 << 20)
            os.chmod(target, 0o600)
