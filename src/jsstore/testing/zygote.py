"""Test servers forked from a zygote: one process per test session that has imported what
``jsstore serve`` needs (the server, the event loop, the ``$JS.API`` handlers and the
streams', consumers' and stores' machinery) and forks a server for each test that asks for
one.  A forked server skips the interpreter's start and every import (about 100 ms on a
small machine, and as much again on its first requests) and is ready in milliseconds.

    zygote = Zygote()                        # python -m jsstore.testing.zygote
    server = zygote.serve(store_dir)         # a ServerProcess: url, pid, log_path, stop()
    ...
    server.stop()                            # SIGTERM by pid, as for a server run by exec
    zygote.close()

A forked server is the same ``jsstore serve`` (``jsstore.cli.serve.serve_main`` with
``-a 127.0.0.1 -p -1 -js -sd <store_dir>`` and any further arguments) with its stdout and
stderr in a log file of its own, in the test process's working directory and environment
of the moment it asked (a configuration file's ``$VARIABLE`` reads it); it runs until a
signal stops it, as one run by exec does.  What differs: the interpreter was started, and
its start-up settings (``PYTHONHASHSEED``, ``-X`` options) read, by the zygote, with the
environment of the zygote's start; and the server is the zygote's child, not the test
process's: its exit status reaches the test process through the zygote, so
``ServerProcess.stop()`` and ``wait()`` read as before.

The zygote keeps one child forked ahead, a spare: it has been forked, has started a server
once and stopped it (a rehearsal, on a throwaway store and port: see ``rehearse``), and
reads the requests itself, so that a request costs neither a fork, nor the copying of the
memory pages a start writes to, nor a wake-up of the zygote on its way.  Once the spare's
server is ready (not before: the two would share the CPU), or the spare has ended, the
zygote forks the next; a request that comes before the next spare is ready waits for it.
The zygote forks with no thread running (it checks), and freezes its objects before
forking (``gc.freeze``) so that the servers' collections do not walk, and copy, its memory.

A zygote that dies is loud: every later request, and the stop of every server it forked,
raises ZygoteError with its exit status and its log (a server it forked keeps running
until it is stopped: ``stop()`` still ends it, by pid, before raising).

The pipes, a JSON object a line:

* requests, the zygote's stdin, read by its spare: ``{"args": [serve's arguments], "log":
  path, "cwd": path, "env": {...}}``, one at a time (the next is sent once this one is
  taken: a spare reads one line and no more);
* answers, the zygote's stdout: from the zygote ``{"zygote": pid}`` once it has imported
  everything and forked its first spare, ``{"exited": pid, "status": status}`` for each
  child it reaped (status as subprocess's returncode: the exit code, or -N for signal N),
  ``{"error": text}`` when a spare ended before it took a request; from a spare ``{"took":
  pid}`` once it has read a request, then ``{"ready": pid, "port": port}`` once its server
  has logged ``Server is ready``.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from jsstore.deferred import deferred
from jsstore.testing.server import HOST, ServerProcess, jsstore_environment

__all__ = ["Zygote", "ZygoteError", "ForkedProcess", "PRELOAD"]

# loaded by the zygote process only (the test process that drives it imports none of it)
serve = deferred("jsstore.cli.serve")
cli_main = deferred("jsstore.cli.main")

# what the zygote imports before it forks: the server and its event loop, and what a
# server loads with its first requests (API handlers, file and memory streams, consumers);
# a module missing here is imported by every forked server that needs it
PRELOAD = ("jsstore.cli.main", "jsstore.cli.serve", "jsstore.api.router",
           "jsstore.stream.stream", "jsstore.store.filestore", "jsstore.store.memstore",
           "jsstore.consumer.consumer")

# how long the zygote waits for its servers to stop (SIGTERM) when it is closed, then SIGKILL
CLOSE_GRACE = 10.0


def _readable(fds: list[int], timeout: float | None) -> list[int]:
    """Those of `fds` with something to read (or closed) within `timeout` seconds (None:
    no limit).  poll, not select: a test process may hold more than 1,024 descriptors."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    wait = None if timeout is None else max(0, math.ceil(timeout * 1000))
    return [fd for fd, _ in poller.poll(wait)]

class ZygoteError(RuntimeError):
    """The zygote died or broke its protocol."""


# -- the test process's side -----------------------------------------------------------------

class Zygote:
    """A zygote process for this test process (started here, ready when this returns)."""

    def __init__(self, *, timeout: float = 60.0):
        log_fd, self.log_path = tempfile.mkstemp(prefix="jsstore-zygote-", suffix=".log")
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "jsstore.testing.zygote"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=log_fd, close_fds=True,
                env=jsstore_environment())
        finally:
            os.close(log_fd)
        self._answers = self.process.stdout.fileno()
        self._pidfd = _pidfd(self.process.pid)
        self._buffer = b""
        self._lock = threading.RLock()
        self._took: list[int] = []               # spares that took a request, in order
        self._ready: dict[int, int] = {}         # pid -> port
        self._children: dict[int, ForkedProcess] = {}
        self._exited: dict[int, int] = {}        # pid -> status, of pids not (yet) ours
        self._hello: int | None = None
        self._gone: str | None = None            # why the zygote is gone, once it is
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._hello is None:
                self._read(deadline, f"the jsstore test zygote did not start within "
                                     f"{timeout} s")

    def serve(self, store_dir, extra_args=(), *, timeout: float = 30.0) -> ServerProcess:
        """A forked ``jsstore serve`` on a free loopback port with its store in `store_dir`
        (`extra_args` after the usual flags), ready for clients when this returns.
        RuntimeError (with its log) when it exits before it is ready or is not ready
        within `timeout` seconds; ZygoteError when the zygote is gone."""
        log_fd, log_path = tempfile.mkstemp(prefix="jsstore-testing-", suffix=".log")
        os.close(log_fd)
        args = ["-a", HOST, "-p", "-1", "-js", "-sd", os.fspath(store_dir),
                *map(str, extra_args)]
        deadline = time.monotonic() + timeout
        with self._lock:
            try:
                self._check_alive()
                self._send({"args": args, "log": log_path, "cwd": os.getcwd(),
                            "env": jsstore_environment()})
                while not self._took:
                    self._read(deadline, "no spare of the jsstore test zygote took a request")
            except ZygoteError:
                os.unlink(log_path)
                raise
            pid = self._took.pop(0)
            process = self._children[pid] = ForkedProcess(self, pid)
            if pid in self._exited:
                process.returncode = self._exited.pop(pid)
            server = ServerProcess(process, 0, os.fspath(store_dir), log_path)
            try:
                while pid not in self._ready and process.returncode is None:
                    self._read(deadline, None)
            except _Timeout:
                pass
            if pid in self._ready:
                server.port = self._ready.pop(pid)
                return server
        failure = (f"exited with status {process.returncode}" if process.returncode is not None
                   else f"was not ready within {timeout} s")
        server.stop()
        log = server.log_text() or f"(nothing; the zygote's log:)\n{self.log_text()[-4000:]}"
        os.unlink(log_path)
        raise RuntimeError(f"jsstore serve {' '.join(args)} (forked by the test zygote, pid "
                           f"{self.process.pid}) {failure}:\n{log}")

    def close(self, timeout: float = 30.0) -> None:
        """End the zygote (it stops the servers it forked that still run); ZygoteError if
        it had died before, or does not end within `timeout` seconds."""
        with self._lock:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
            if self._gone is None:
                try:
                    self.process.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
                    raise ZygoteError(f"the jsstore test zygote (pid {self.process.pid}) did "
                                      f"not end within {timeout} s of being closed") from None
                self._drain()
                self._gone = ("it was closed" if self.process.returncode == 0
                              else f"it exited with status {self.process.returncode}")
            self.process.stdout.close()
            if self._pidfd is not None:
                os.close(self._pidfd)
                self._pidfd = None
            failed = self.process.returncode != 0 or self._gone != "it was closed"
            error = self._error() if failed else None
            with contextlib.suppress(OSError):
                os.unlink(self.log_path)
            if error is not None:
                raise error

    # -- the answers -----------------------------------------------------------------------
    def _send(self, request: dict) -> None:
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            self._went()
            raise self._error() from None

    def _read(self, deadline: float | None, timeout_text: str | None) -> None:
        """Take the answers that arrive before `deadline` (at least one, or the zygote's
        end); _Timeout (or ZygoteError saying `timeout_text`) at the deadline."""
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                if timeout_text is None:
                    raise _Timeout()
                raise ZygoteError(f"{timeout_text} (pid {self.process.pid}); its log:\n"
                                  f"{self.log_text()}")
            watched = [self._answers] + ([self._pidfd] if self._pidfd is not None else [])
            readable = _readable(watched, 0.05 if self._pidfd is None else left)
            if self._answers in readable:
                chunk = os.read(self._answers, 65536)
                if not chunk:
                    self._went()
                    raise self._error()
                self._take(chunk)
                return
            if readable or self.process.poll() is not None:
                self._drain()
                self._went()
                raise self._error()

    def _drain(self) -> None:
        """Take the answers already waiting, without blocking."""
        while _readable([self._answers], 0):
            chunk = os.read(self._answers, 65536)
            if not chunk:
                return
            self._take(chunk)

    def _take(self, chunk: bytes) -> None:
        lines = (self._buffer + chunk).split(b"\n")
        self._buffer = lines.pop()
        for line in lines:
            answer = json.loads(line)
            if "exited" in answer:
                pid, status = answer["exited"], answer["status"]
                child = self._children.pop(pid, None)
                if child is not None:
                    child.returncode = status
                else:
                    self._exited[pid] = status
            elif "ready" in answer:
                self._ready[answer["ready"]] = answer["port"]
            elif "took" in answer:
                self._took.append(answer["took"])
            elif "zygote" in answer:
                self._hello = answer["zygote"]
            elif "error" in answer:
                raise ZygoteError(f"the jsstore test zygote (pid {self.process.pid}): "
                                  f"{answer['error']}")
            else:
                raise ZygoteError(f"the jsstore test zygote answered {line!r}")

    def _went(self) -> None:
        if self._gone is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(5)
            self._gone = f"it exited with status {self.process.returncode}"

    def _check_alive(self) -> None:
        if self._gone is None and self.process.poll() is not None:
            self._drain()
            self._went()
        if self._gone is not None:
            raise self._error()

    def _error(self) -> ZygoteError:
        return ZygoteError(f"the jsstore test zygote (pid {self.process.pid}) is gone: "
                           f"{self._gone}; its log:\n{self.log_text()}")

    def log_text(self) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return "(none)"

    # -- a forked server's exit --------------------------------------------------------------
    def _poll(self, child: ForkedProcess) -> int | None:
        with self._lock:
            if child.returncode is None and self._gone is None:
                self._drain()
                if child.returncode is None and self.process.poll() is not None:
                    self._drain()
                    self._went()
            if child.returncode is None and self._gone is not None:
                if _exited(child.pid, 0):
                    raise self._orphan_error(child)
            return child.returncode

    def _wait(self, child: ForkedProcess, timeout: float | None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            try:
                while child.returncode is None and self._gone is None:
                    self._read(deadline, None)
            except _Timeout:
                raise subprocess.TimeoutExpired(f"jsstore serve (pid {child.pid})",
                                                timeout) from None
            except ZygoteError:
                pass
            if child.returncode is not None:
                return child.returncode
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not _exited(child.pid, left):
                raise subprocess.TimeoutExpired(f"jsstore serve (pid {child.pid})", timeout)
            raise self._orphan_error(child)

    def _orphan_error(self, child: ForkedProcess) -> ZygoteError:
        return ZygoteError(f"jsstore serve (pid {child.pid}) has ended, its exit status "
                           f"unknown: the test zygote that forked it (pid "
                           f"{self.process.pid}) is gone: {self._gone}; its log:\n"
                           f"{self.log_text()}")


class _Timeout(Exception):
    pass


class ForkedProcess:
    """What ServerProcess asks of its process (``subprocess.Popen``'s pid, returncode,
    poll() and wait()), for a server the zygote forked: its exit status is the zygote's
    report."""

    def __init__(self, zygote: Zygote, pid: int):
        self.zygote = zygote
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.zygote._poll(self)

    def wait(self, timeout: float | None = None) -> int:
        return self.zygote._wait(self, timeout)


def _pidfd(pid: int) -> int | None:
    """A descriptor that turns readable when process `pid` ends (None where the system has
    none: then the zygote is polled)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _exited(pid: int, timeout: float | None) -> bool:
    """Whether process `pid` (not a child of this process) ends within `timeout` seconds."""
    fd = _pidfd(pid)
    if fd is None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
    try:
        return bool(_readable([fd], timeout))
    finally:
        os.close(fd)


# -- the zygote process ------------------------------------------------------------------------

class ZygoteProcess:
    """The zygote's loop: one spare at a time reads the requests; the zygote forks the next
    once the spare's server is ready (or the spare has ended), reaps its children and
    reports their ends, and ends when the test process closes the requests."""

    def __init__(self, requests: int, answers: int):
        self.requests = requests
        self.answers = answers
        self.wake_read, self.wake_write = os.pipe()     # SIGCHLD (signal.set_wakeup_fd)
        os.set_blocking(self.wake_read, False)
        os.set_blocking(self.wake_write, False)
        self.notices_read, self.notices_write = os.pipe()   # a spare's "took" and "ready"
        # never written: a spare sees the zygote's end as this pipe's end, and ends too
        self.lifeline_read, self.lifeline_write = os.pipe()
        self.notices = b""
        self.spare: int | None = None       # the child reading the requests, or to read them
        self.spare_took = False
        self.children: set[int] = set()
        self.closing = False

    def run(self) -> int:
        signal.signal(signal.SIGCHLD, _noted)
        signal.set_wakeup_fd(self.wake_write)
        self.fork_spare()
        self.answer({"zygote": os.getpid()})
        poller = select.poll()
        poller.register(self.requests, 0)       # its hang-up only: the requests are the spare's
        poller.register(self.wake_read, select.POLLIN)
        poller.register(self.notices_read, select.POLLIN)
        while True:
            for fd, _events in poller.poll():
                if fd == self.requests:                 # the test process closed us
                    self.close()
                    return 0
                if fd == self.wake_read:
                    with contextlib.suppress(BlockingIOError):
                        while os.read(self.wake_read, 512):
                            pass
                    self.reap()
                if fd == self.notices_read:
                    self.notices += os.read(self.notices_read, 4096)
                    *lines, self.notices = self.notices.split(b"\n")
                    for line in lines:
                        self.noted(line)
            if self.spare is None:
                self.fork_spare()

    def noted(self, line: bytes) -> None:
        """A spare's notice: b"took <pid>" (it read a request), b"ready <pid>" (its server
        is ready: the next spare may be forked, not competing with its start)."""
        what, pid = line.split()
        if int(pid) == self.spare:
            if what == b"took":
                self.spare_took = True
            elif what == b"ready":
                self.spare = None

    def fork_spare(self) -> None:
        if threading.active_count() != 1:
            raise ZygoteError(f"the zygote runs {threading.active_count()} threads: it "
                              f"forks with one only")
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            try:
                self.become_server()
            finally:
                os._exit(70)
        self.children.add(pid)
        self.spare = pid
        self.spare_took = False

    def become_server(self) -> None:
        """In a spare: drop the zygote's descriptors and signal handling, rehearse, read
        one request (the test process sends the next only once this one is taken), then
        serve it; never returns."""
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in (self.wake_read, self.wake_write, self.notices_read, self.lifeline_write):
            os.close(fd)
        rehearse()
        waiting = select.poll()
        waiting.register(self.requests, select.POLLIN)
        waiting.register(self.lifeline_read, select.POLLIN)
        request = b""
        while not request.endswith(b"\n"):
            if self.lifeline_read in dict(waiting.poll()):
                os._exit(0)             # the zygote is gone: no server to give
            chunk = os.read(self.requests, 65536)
            if not chunk:
                os._exit(0)             # the test process closed the zygote
            request += chunk
        os.close(self.requests)
        os.close(self.lifeline_read)
        pid = os.getpid()
        notices = self.notices_write
        os.write(notices, b"took %d\n" % pid)
        answers = self.answers
        os.write(answers, _line({"took": pid}))
        request = json.loads(request)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(request["cwd"])            # the test process's, as a child it ran would have
        _set_environment(request["env"])
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)

        def ready(server) -> None:
            nonlocal answers, notices
            with contextlib.suppress(BrokenPipeError):  # (then the zygote is closing us)
                os.write(answers, _line({"ready": pid, "port": server.port}))
                os.write(notices, b"ready %d\n" % pid)
            os.close(answers)
            os.close(notices)
            answers = notices = None

        args = request["args"]
        status = cli_main.reporting_failures(lambda: serve.serve_main(args, on_ready=ready),
                                             trace="--trace" in args)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(status)

    def reap(self) -> None:
        while self.children:
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.children.discard(pid)
            status = os.waitstatus_to_exitcode(wait_status)
            if pid == self.spare:
                # (a spare ends with 0 by itself when the test process closes the requests)
                if not (self.spare_took or self.closing or status == 0):
                    self.answer({"error": f"a spare (pid {pid}) ended with status {status} "
                                          f"before it took a request"})
                self.spare = None
            self.answer({"exited": pid, "status": status})

    def answer(self, message: dict) -> None:
        with contextlib.suppress(BrokenPipeError):
            os.write(self.answers, _line(message))

    def close(self) -> None:
        """The test process is done with the zygote: the servers still running are stopped
        (SIGTERM, SIGKILL after CLOSE_GRACE seconds); the spare ends by itself once its
        rehearsal is over (it reads the end of the requests), its throwaway store removed."""
        self.closing = True
        waiting_spare = self.spare if not self.spare_took else None
        for pid in self.children - {waiting_spare}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + CLOSE_GRACE
        while self.children:
            self.reap()
            if self.children and time.monotonic() > deadline:
                for pid in self.children:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                deadline = float("inf")
            time.sleep(0.005)


def _set_environment(environment: dict) -> None:
    """os.environ made `environment`, changing only what differs (most often nothing)."""
    for name in [name for name in os.environ if name not in environment]:
        del os.environ[name]
    for name, value in environment.items():
        if os.environ.get(name) != value:
            os.environ[name] = value
    tempfile.tempdir = None             # (found again, under the environment's TMPDIR)


def rehearse() -> None:
    """In a spare: start a server and stop it at once (on a throwaway store directory and
    port, its log discarded).  The memory pages a start writes to are the zygote's until a
    child writes to them, then copied one by one (some hundreds, a few milliseconds): a
    spare copies them now, not while a test waits for its server."""
    store = tempfile.mkdtemp(prefix="jsstore-zygote-rehearsal-")
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    try:
        serve.serve_main(["-a", HOST, "-p", "-1", "-js", "-sd", store],
                         on_ready=lambda server: os.kill(os.getpid(), signal.SIGTERM))
    finally:
        os.dup2(saved, 1)
        os.dup2(saved, 2)
        os.close(saved)
        shutil.rmtree(store, ignore_errors=True)
    if threading.active_count() != 1:
        raise ZygoteError(f"a rehearsed server left {threading.active_count() - 1} threads")


def _noted(signum, frame) -> None:
    """SIGCHLD's handler: the wake-up descriptor (signal.set_wakeup_fd) does the work."""


def _line(message: dict) -> bytes:
    return json.dumps(message).encode() + b"\n"


def main() -> int:
    """``python -m jsstore.testing.zygote``: requests on stdin, answers on stdout."""
    requests, answers = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)                       # what anything prints goes to the zygote's log
    os.close(devnull)
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # ^C: the test process closes it
    for name in PRELOAD:
        importlib.import_module(name)
    return ZygoteProcess(requests, answers).run()


if __name__ == "__main__":
    sys.exit(main())
