"""PubAcks that leave only once their message is on disk (``sync_interval: always``).

The file stores of every account write without syncing and join their JetStream's
``SyncGroup``.  The answers to the publishes stored in one event-loop iteration -- every
client, every account -- are held here; once the iteration's reads are handled, one fsync
per file written (every stream's write block, blocks sealed meanwhile, msgs/ when a block
file was made) runs on a thread of its own, and the held answers are released when it
returns.  Publishes that arrive meanwhile are held for the next fsync, which starts as soon
as this one is done.  The event loop never waits for the disk.

When an fsync fails nothing of that round is acknowledged: each held PubAck becomes
nats-server's answer to a store that failed (503, 10077, the error's text), and the
answers that were errors already go out as they were."""

from __future__ import annotations

import concurrent.futures
import json

from jsstore.stream.puback import pub_error_json
from jsstore.wire import apierrors


class DurableAcks:
    def __init__(self, server):
        self.server = server
        self.held: list = []             # (account, reply, answer) of the current round
        self._scheduled = False          # a commit is queued on the loop
        self._running = False            # an fsync round is on the sync thread
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="jsstore-fsync")
        self.rounds = 0                  # fsync rounds run

    def hold(self, account, reply: str, answer: bytes) -> None:
        """Keep `answer` (to `reply`, in `account`) until what was stored is durable."""
        self.held.append((account, reply, answer))
        if not self._scheduled and not self._running:
            self._scheduled = True
            self.server.loop.call_soon(self._commit)

    def _groups(self) -> list:
        out = []
        for js in self.server.jetstreams():
            group = getattr(js.options, "group", None) if js.options is not None else None
            if group is not None:
                out.append((js, group))
        return out

    def _commit(self) -> None:
        self._scheduled = False
        if self._running or not self.held:
            return
        batch, self.held = self.held, []
        targets = []
        for js, group in self._groups():
            if group.dirty:
                with js.lock:           # no block is rolled while its descriptors are taken
                    targets.extend((group, t) for t in group.collect())
        if not targets:
            self._release(batch, None)
            return
        self._running = True
        loop = self.server.loop
        future = self._thread.submit(_run, targets)
        future.add_done_callback(
            lambda done: loop.call_soon_threadsafe(self._synced, batch, done))

    def _synced(self, batch: list, done) -> None:
        self._running = False
        self.rounds += 1
        exc = done.exception() if not done.cancelled() else None
        error = done.result() if exc is None and not done.cancelled() else str(exc or "cancelled")
        self._release(batch, error)
        if self.held:
            self._commit()

    def _release(self, batch: list, error: str | None) -> None:
        for account, reply, answer in batch:
            if error is not None:
                answer = _failed(answer, error)
            account.route(reply, reply, None, None, answer)
        self.server.flush_soon()

    def close(self) -> None:
        self._thread.shutdown(wait=True)


def _run(targets: list) -> str | None:
    """On the sync thread: every target of every group synced; the first error."""
    error = None
    by_group: dict = {}
    for group, target in targets:
        by_group.setdefault(id(group), (group, []))[1].append(target)
    for group, group_targets in by_group.values():
        if error is None:
            error = group.run(group_targets)
        else:
            group.discard(group_targets)
    return error


def _failed(answer: bytes, error: str) -> bytes:
    """The answer a publish gets when what it stored could not be synced."""
    try:
        decoded = json.loads(answer)
    except ValueError:
        decoded = None
    if not isinstance(decoded, dict) or "error" in decoded:
        return answer
    return pub_error_json(decoded.get("stream", ""), apierrors.JSStreamStoreFailedF(err=error))
