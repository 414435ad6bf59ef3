"""Consumer stores: the ``ConsumerStore`` contract over an ``AckState``.

``MemConsumerStore`` keeps the state in memory only.  ``FileConsumerStore`` also keeps
nats-server's files in ``<stream dir>/obs/<consumer>/``:

* ``meta.inf``  JSON ``{"Created": "<RFC 3339 UTC>", "Name": "<consumer>", ...config}``
  (nats-server's ``FileConsumerInfo``), written when the store is created and on
  ``update_config``;
* ``meta.sum``  hex HighwayHash-64 of ``meta.inf``, keyed with SHA-256 of
  ``"<stream>/<consumer>"``;
* ``o.dat``     the encoded ``AckState`` (version 2), rewritten whole through a temporary
  file and a rename.  Changes are written by a background flusher at most every 100 ms;
  ``set_starting``, ``reset``, ``force_update`` and ``stop`` write before returning, and
  ``flush`` writes on demand.

Locking: ``_io_lock`` (one writer of o.dat at a time) is taken before ``_lock`` (the
state).  Every write encodes the state while holding both, so a later write never
carries older state than an earlier one.
"""

from __future__ import annotations

import heapq
import itertools
import json
import os
import shutil
import threading
import time

from jsstore._core.storage import faults, hashing
from jsstore._core.storage.ackstate import AckState
from jsstore.errors import CorruptFile, OldUpdate, StoreClosed, StoreError, WriteError
from jsstore.gocompat import json as gojson
from jsstore.gocompat.times import rfc3339_nano
from jsstore.store.contract import FILE_STORAGE, MEMORY_STORAGE, ConsumerState
from jsstore.store.files import make_dirs, write_atomically

CONSUMER_DIR = "obs"
META_FILE = "meta.inf"
META_SUM_FILE = "meta.sum"
STATE_FILE = "o.dat"
FLUSH_INTERVAL = 0.1  # seconds: at most ~10 o.dat writes per second per consumer
# A large state is written less often: encoding o.dat is a pass over every pending ack
# (about 0.3 s at 1M pending) that holds the store's lock, so the interval is at least
# ENCODE_SHARE times the last encoding's duration (the writes take at most 1/ENCODE_SHARE
# of the time, and an ack waits on one at most that often).
ENCODE_SHARE = 10
DIR_PERMS = 0o700


def _write_atomically(path: str, data: bytes, sync: bool = False) -> None:
    """o.dat and meta files: written whole, a failure as the store's WriteError; synced
    only with the stream's sync="always" (nats-server's writeFileWithOptionalSync)."""
    try:
        write_atomically(path, data, sync=sync)
    except OSError as exc:
        reason = faults.errno_text(exc.errno) if exc.errno else str(exc)
        raise WriteError(f"write {path}: {reason}", exc.errno or 0) from exc


def _ack_settings(config: dict) -> tuple[str, int]:
    """(ack_policy, max_deliver) of a ConsumerConfig dict; Go's zero values when absent."""
    return config.get("ack_policy") or "none", int(config.get("max_deliver") or 0)


def check_consumer_state(state: ConsumerState) -> None:
    """The sanity checks nats-server applies before replacing a consumer's state."""
    if state.ack_floor.consumer_seq > state.delivered.consumer_seq:
        raise StoreError("bad ack floor for consumer")
    if state.ack_floor.stream_seq > state.delivered.stream_seq:
        raise StoreError("bad ack floor for stream")
    for seq in state.pending or ():
        if seq <= state.ack_floor.stream_seq or seq > state.delivered.stream_seq:
            raise StoreError(f"bad pending entry, sequence [{seq}] out of range")


def read_consumer_meta(consumer_dir: str, stream_name: str) -> dict:
    """Parse ``meta.inf`` of a consumer directory after checking it against ``meta.sum``.

    Returns the JSON object (``Created``, ``Name`` and the config fields).  Raises
    CorruptFile when a file is missing, the checksum differs or the JSON is invalid.
    """
    name = os.path.basename(os.path.normpath(consumer_dir))
    try:
        with open(os.path.join(consumer_dir, META_FILE), "rb") as f:
            data = f.read()
        with open(os.path.join(consumer_dir, META_SUM_FILE), "rb") as f:
            stored_sum = f.read().strip()
    except OSError as exc:
        raise CorruptFile(f"consumer {name!r}: {exc}") from exc
    if hashing.meta_sum(hashing.consumer_meta_hash_key(stream_name, name), data) != stored_sum:
        raise CorruptFile(f"consumer {name!r}: meta.sum does not match meta.inf")
    try:
        info = json.loads(data)
    except ValueError as exc:
        raise CorruptFile(f"consumer {name!r}: meta.inf is not valid JSON: {exc}") from exc
    if not isinstance(info, dict):
        raise CorruptFile(f"consumer {name!r}: meta.inf is not a JSON object")
    return info


class _FlushScheduler:
    """One daemon thread that writes the o.dat files of dirty consumer stores when due."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: list[tuple[float, int, FileConsumerStore]] = []  # (due, tie, store)
        self._tie = itertools.count()
        self._thread: threading.Thread | None = None

    def schedule(self, store: FileConsumerStore, due: float) -> None:
        with self._cond:
            heapq.heappush(self._queue, (due, next(self._tie), store))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="jsstore-consumer-flush",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if not self._queue:
                        self._cond.wait()
                        continue
                    wait = self._queue[0][0] - time.monotonic()
                    if wait <= 0:
                        break
                    self._cond.wait(wait)
                _, _, store = heapq.heappop(self._queue)
            store._flush_from_timer()


_FLUSHER = _FlushScheduler()


class _ConsumerStoreBase:
    """What both stores share: the lock, the AckState and the ConsumerStore methods."""

    storage_type = ""

    def __init__(self, name: str, created_ns: int, config: dict) -> None:
        if not name:
            raise StoreError("bad consumer config")
        self.name = name
        self.created_ns = created_ns
        self._config = dict(config)
        self._lock = threading.Lock()
        self._acks = AckState(*_ack_settings(self._config))
        self._closed = False

    # -- hooks for the file store -----------------------------------------------------------

    def _changed_locked(self) -> None:
        """The state changed (lock held): schedule a write."""

    def _write_now(self) -> None:
        """Write the state before returning (lock not held)."""

    def _write_config_locked(self) -> None:
        """The config changed (lock held)."""

    def _check_open_locked(self) -> None:
        if self._closed:
            raise StoreClosed()

    # -- the ConsumerStore contract ---------------------------------------------------------

    @property
    def config(self) -> dict:
        with self._lock:
            return dict(self._config)

    @property
    def ack_state(self) -> AckState:
        """The live AckState, for reads only (like nats' BorrowState); change it via the store."""
        return self._acks

    def set_starting(self, stream_seq: int) -> None:
        with self._lock:
            self._check_open_locked()
            self._acks.set_starting(stream_seq)
        self._write_now()

    def update_starting(self, stream_seq: int) -> None:
        with self._lock:
            self._check_open_locked()
            self._acks.update_starting(stream_seq)
            self._changed_locked()

    def reset(self, stream_seq: int) -> None:
        with self._lock:
            self._check_open_locked()
            self._acks.reset(stream_seq)
        self._write_now()

    def has_state(self) -> bool:
        with self._lock:
            return bool(self._acks.delivered_consumer or self._acks.delivered_stream)

    def update_delivered(self, delivery_seq: int, stream_seq: int, deliveries: int,
                         delivered_at: int) -> None:
        with self._lock:
            self._check_open_locked()
            if self._acks.update_delivered(delivery_seq, stream_seq, deliveries, delivered_at):
                self._changed_locked()

    def update_delivered_run(self, first_delivery_seq: int, stream_seqs: list[int],
                             delivered_at: int) -> None:
        """update_delivered of first deliveries of stream_seqs[i] as delivery seq
        first_delivery_seq + i, all at delivered_at, in C."""
        with self._lock:
            self._check_open_locked()
            if self._acks.update_delivered_run(first_delivery_seq, stream_seqs, delivered_at):
                self._changed_locked()

    def update_acks(self, delivery_seq: int, stream_seq: int) -> None:
        with self._lock:
            self._check_open_locked()
            redelivered_before = self._acks.num_redelivered
            applied = False
            try:
                applied = self._acks.update_acks(delivery_seq, stream_seq)
            finally:
                # An ack drops the redelivery count even when it is stale or not pending.
                if applied or self._acks.num_redelivered != redelivered_before:
                    self._changed_locked()

    def ack_explicit_run(self, stream_seqs: list[int], delivery_seqs: list[int],
                         floor: tuple[int, int], next_seqs: tuple[int, int]) -> tuple[int, int]:
        """update_acks for a run of explicit acks of delivered messages, in C
        (AckState.ack_explicit_run); the consumer's own ack floor moved along, returned."""
        with self._lock:
            self._check_open_locked()
            floor_d, floor_s, changed = self._acks.ack_explicit_run(
                stream_seqs, delivery_seqs, floor[0], floor[1], next_seqs[0], next_seqs[1])
            if changed:
                self._changed_locked()
        return floor_d, floor_s

    def remove_redelivered_below(self, stream_seq: int) -> None:
        with self._lock:
            self._check_open_locked()
            if self._acks.remove_redelivered_below(stream_seq):
                self._changed_locked()

    def update_config(self, config: dict) -> None:
        ack_policy, max_deliver = _ack_settings(config)
        with self._lock:
            self._check_open_locked()
            self._acks.ack_policy = ack_policy
            self._acks.max_deliver = max_deliver
            self._config = dict(config)
            self._write_config_locked()

    def update(self, state: ConsumerState) -> None:
        """Replace the state (a replicated snapshot); OldUpdate if it would go backwards."""
        check_consumer_state(state)
        with self._lock:
            self._check_open_locked()
            if (state.delivered.consumer_seq < self._acks.delivered_consumer
                    or state.ack_floor.stream_seq < self._acks.ack_floor_stream):
                raise OldUpdate()
            self._acks.load(state)
            self._changed_locked()

    def force_update(self, state: ConsumerState) -> None:
        """Replace the state without the regression check, and write it."""
        check_consumer_state(state)
        with self._lock:
            self._check_open_locked()
            self._acks.load(state)
        self._write_now()

    def state(self) -> ConsumerState:
        with self._lock:
            self._check_open_locked()
            return self._acks.state()

    def encoded_state(self) -> bytes:
        with self._lock:
            self._check_open_locked()
            return self._acks.encode()

    def type(self) -> str:
        return self.storage_type

    def stop(self) -> None:
        with self._lock:
            self._closed = True

    def delete(self) -> None:
        self.stop()


class MemConsumerStore(_ConsumerStoreBase):
    """Consumer state in memory only (nats-server's consumerMemStore)."""

    storage_type = MEMORY_STORAGE


class FileConsumerStore(_ConsumerStoreBase):
    """Consumer state in ``<stream_dir>/obs/<name>/`` (nats-server's consumerFileStore)."""

    storage_type = FILE_STORAGE

    def __init__(self, stream_dir: str, stream_name: str, name: str, created_ns: int,
                 config: dict, *, sync: bool = False) -> None:
        if name in (".", "..") or "/" in name or os.sep in name:
            raise StoreError("bad consumer config")
        super().__init__(name, created_ns, config)
        self.stream_name = stream_name
        self.directory = os.path.join(stream_dir, CONSUMER_DIR, name)
        self._state_path = os.path.join(self.directory, STATE_FILE)
        self._sync = sync              # fsync o.dat and meta files (the stream's sync always)
        self._io_lock = threading.Lock()
        self._dirty = False            # state changed since the last o.dat write
        self._scheduled = False        # a timer write is queued
        self._last_write = 0.0         # time.monotonic() of the last o.dat write
        self._interval = FLUSH_INTERVAL  # between timer writes (grows with the state)
        self.last_flush_error: Exception | None = None  # of the background writer
        # the first failed write of o.dat or the meta files: every later write fails with it
        # until the store is reopened (the state in memory stays readable)
        self.write_error: WriteError | None = None

        self._hash_key = hashing.consumer_meta_hash_key(stream_name, name)
        existed = os.path.isdir(self.directory)
        make_dirs(self.directory, DIR_PERMS, sync)
        try:
            if not os.path.exists(os.path.join(self.directory, META_FILE)):
                self._write_config_locked()
            try:
                with open(self._state_path, "rb") as f:
                    encoded = f.read()
            except FileNotFoundError:
                encoded = b""
            if encoded:
                self._acks.load_encoded(encoded)
        except BaseException:
            if not existed:
                shutil.rmtree(self.directory, ignore_errors=True)
            raise

    # -- files ------------------------------------------------------------------------------

    def _write_file(self, path: str, data: bytes) -> None:
        if self.write_error is not None:
            raise self.write_error
        try:
            _write_atomically(path, data, self._sync)
        except WriteError as exc:
            self.write_error = exc
            raise

    def _write_config_locked(self) -> None:
        info = {"Created": rfc3339_nano(self.created_ns), "Name": self.name}
        info.update(self._config)
        data = gojson.encode(info)
        self._write_file(os.path.join(self.directory, META_FILE), data)
        checksum = hashing.meta_sum(self._hash_key, data)
        self._write_file(os.path.join(self.directory, META_SUM_FILE), checksum)

    def _write_state(self, force: bool) -> None:
        with self._io_lock:
            with self._lock:
                if self._closed or not (force or self._dirty):
                    return
                started = time.perf_counter()
                encoded = self._acks.encode()
                self._interval = max(FLUSH_INTERVAL,
                                     ENCODE_SHARE * (time.perf_counter() - started))
                self._dirty = False
            try:
                self._write_file(self._state_path, encoded)
            except WriteError:
                with self._lock:
                    self._dirty = True
                raise
            self._last_write = time.monotonic()

    def _changed_locked(self) -> None:
        self._dirty = True
        if not self._scheduled:
            self._scheduled = True
            _FLUSHER.schedule(self, max(time.monotonic(), self._last_write + self._interval))

    def _write_now(self) -> None:
        self._write_state(force=True)

    def _flush_from_timer(self) -> None:
        # Changes made while this write runs only mark the state dirty (a write is still
        # scheduled); they are written one interval after this write, not right behind it.
        due = 0.0
        try:
            self._write_state(force=False)
        except WriteError as exc:
            self.last_flush_error = exc
            due = time.monotonic() + FLUSH_INTERVAL
        with self._lock:
            self._scheduled = self._dirty and not self._closed and self.write_error is None
            if self._scheduled:
                _FLUSHER.schedule(self, max(due, self._last_write + self._interval))

    # -- contract additions -----------------------------------------------------------------

    def flush(self) -> None:
        """Write o.dat now if the state changed since the last write."""
        self._write_state(force=False)

    def has_state(self) -> bool:
        return super().has_state() or os.path.exists(self._state_path)

    def stop(self) -> None:
        """Close the store, writing o.dat first if it has unwritten changes."""
        with self._io_lock:
            with self._lock:
                if self._closed:
                    return
                self._closed = True
                encoded = self._acks.encode() if self._dirty else None
                self._dirty = False
            if encoded is not None and self.write_error is None:
                try:
                    _write_atomically(self._state_path, encoded, self._sync)
                except WriteError as exc:
                    self.write_error = exc
                    raise

    def delete(self) -> None:
        """Close the store and remove its directory."""
        with self._io_lock:
            with self._lock:
                self._closed = True
                self._dirty = False
            shutil.rmtree(self.directory, ignore_errors=True)
