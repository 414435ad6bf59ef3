"""``jsstore backup --stream S --to FILE`` and ``jsstore restore FILE [--stream NAME]``:
a stream with its consumers, in the snapshot format nats-server restores.

The snapshot is ``$JS.API.STREAM.SNAPSHOT`` 's chunked transfer (the store's S2-framed
tar); FILE is a tar of what ``nats stream backup`` writes in its directory:
``backup.json`` (the snapshot's answer: the stream's configuration and state) and
``stream.tar.s2`` (the snapshot).  A restore sends them back through
``$JS.API.STREAM.RESTORE`` in chunks, to a store directory or a server alike."""

from __future__ import annotations

import io
import sys
import tarfile

import msgspec

from jsstore.cli import output
from jsstore.cli.errors import CliError, UsageError
from jsstore.cli.wireapi import call
from jsstore.wire.api import API_PREFIX

META, DATA = "backup.json", "stream.tar.s2"
CHUNK = 128 * 1024


def register(commands, parent) -> None:
    backup = commands.add_parser("backup", parents=[parent],
                                 help="write a stream and its consumers to a file")
    backup.add_argument("--stream", required=True)
    backup.add_argument("--to", required=True, metavar="FILE")
    backup.add_argument("--no-consumers", dest="consumers", action="store_false",
                        help="leave the consumers out")
    backup.add_argument("--check", action="store_true",
                        help="have the store check every message first (jsck)")
    backup.set_defaults(run=backup_run)
    restore = commands.add_parser("restore", parents=[parent],
                                  help="create a stream from a backup file")
    restore.add_argument("file")
    restore.add_argument("--stream", help="the stream's name (must be the backed-up one's)")
    restore.add_argument("--replicas", type=int, help="the restored stream's replicas")
    restore.set_defaults(run=restore_run)


class Progress:
    """A byte count on stderr, redrawn in place, when stderr is a terminal."""

    def __init__(self, verb: str, total: int = 0):
        self.verb, self.total, self.done = verb, total, 0
        self.shown = output.on_terminal(sys.stderr)

    def add(self, n: int) -> None:
        self.done += n
        if self.shown:
            of = f" of {output.size(self.total)}" if self.total else ""
            bar = ""
            if self.total:
                filled = int(30 * min(self.done / self.total, 1))
                bar = "[" + "#" * filled + "." * (30 - filled) + "] "
            sys.stderr.write(f"\r{self.verb} {bar}{output.size(self.done)}{of}   ")
            sys.stderr.flush()

    def end(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


def backup_run(backend, args) -> int:
    body = msgspec.json.encode({"deliver_subject": "{INBOX}", "no_consumers": not args.consumers,
                                "chunk_size": CHUNK, "jsck": args.check})
    chunks: list[bytes] = []
    progress = Progress(f"Backing up {args.stream}")

    def each(chunk: bytes) -> None:
        chunks.append(chunk)
        progress.add(len(chunk))
    answer = backend.receive_chunks(f"{API_PREFIX}STREAM.SNAPSHOT.{args.stream}", body,
                                    max(args.timeout, 5.0), each)
    progress.end()
    meta = answer.json()
    data = b"".join(chunks)
    try:
        with tarfile.open(args.to, "w") as tar:
            for name, blob in ((META, answer.data), (DATA, data)):
                entry = tarfile.TarInfo(name)
                entry.size = len(blob)
                tar.addfile(entry, io.BytesIO(blob))
    except OSError as exc:
        raise CliError(f"--to {args.to}: {exc}") from None
    if args.json:
        output.print_json(answer.data)
    else:
        state = meta.get("state") or {}
        print(f"Backed up stream {args.stream}: {output.count(state.get('messages'))} messages, "
              f"{output.size(len(data))} snapshot in {args.to}")
    return 0


def read_backup(path: str) -> tuple[dict, bytes]:
    """The snapshot answer and the snapshot of a backup file."""
    try:
        with tarfile.open(path, "r") as tar:
            meta = tar.extractfile(META)
            data = tar.extractfile(DATA)
            if meta is None or data is None:
                raise KeyError(META)
            return msgspec.json.decode(meta.read()), data.read()
    except (OSError, KeyError, tarfile.TarError, msgspec.DecodeError) as exc:
        raise CliError(f"{path}: not a jsstore backup ({exc})") from None


def restore_run(backend, args) -> int:
    meta, data = read_backup(args.file)
    config = dict(meta.get("config") or {})
    name = args.stream or config.get("name")
    if not name:
        raise UsageError("the backup names no stream: give --stream NAME")
    config["name"] = name
    if args.replicas is not None:
        config["num_replicas"] = args.replicas
    start = call(backend, f"STREAM.RESTORE.{name}",
                 {"config": config, "state": meta.get("state") or {}})
    subject = start["deliver_subject"]
    progress = Progress(f"Restoring {name}", len(data))
    for at in range(0, len(data), CHUNK):
        piece = data[at:at + CHUNK]
        backend.request(subject, piece, timeout=max(args.timeout, 5.0))
        progress.add(len(piece))
    progress.end()
    done = backend.request(subject, b"", timeout=max(args.timeout, 30.0))
    info = done.json()
    if args.json:
        output.print_json(done.data)
    else:
        consumers = call(backend, f"CONSUMER.NAMES.{name}").get("total", 0)
        print(f"Restored stream {name}: {output.count(info['state'].get('messages'))} messages, "
              f"{output.count(consumers)} consumers")
    return 0
