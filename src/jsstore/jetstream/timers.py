"""The thread that runs an embedded JetStream's timed work on the wall clock.

``JetStream.tick(now)`` does the timed work (expiry, markers, schedules, abandoned
batches) and returns when it next has some.  With the wall clock, ``TimerThread`` calls it
at that time; anything that may bring the time forward (a message with a TTL, the first
message of an aged stream, a schedule) calls ``wake(at)``.  With a clock of its own (tests),
nothing runs by itself: the owner calls ``tick``.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from jsstore.deferred import deferred_logger
from jsstore.gocompat.durations import SECOND

log = deferred_logger(__name__)
IDLE_WAIT = 60.0       # seconds to sleep with nothing scheduled (a wake cuts it short)


class TimerThread:
    """Calls ``tick()`` whenever its last answer (a Unix ns time) comes due."""

    def __init__(self, tick: Callable[[], int | None], name: str = "jsstore-timers"):
        self._tick = tick
        self._cond = threading.Condition()
        self._wake_at: int | None = None   # when the thread will next tick (ns)
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def wake(self, at: int) -> None:
        """Something is due at `at` (Unix ns): tick then, if that is sooner than planned."""
        wake_at = self._wake_at
        if wake_at is not None and at >= wake_at:
            return
        with self._cond:
            if self._wake_at is None or at < self._wake_at:
                self._wake_at = at
                self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        if threading.current_thread() is not self._thread:
            self._thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped:
                    now = time.time_ns()
                    if self._wake_at is not None and self._wake_at <= now:
                        break
                    timeout = IDLE_WAIT if self._wake_at is None else (self._wake_at - now) / SECOND
                    self._cond.wait(timeout)
                if self._stopped:
                    return
                self._wake_at = None
            try:
                next_due = self._tick()
            except Exception:                # a failing tick must not end the timers
                log.exception("timed work failed")
                next_due = time.time_ns() + SECOND
            if next_due is not None:
                self.wake(next_due)
