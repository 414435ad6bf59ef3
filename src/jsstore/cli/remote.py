"""The NATS back end (``--server nats://...``): the same ``$JS.API`` requests sent over a
nats-py connection (nats-py is optional: it is imported only when ``--server`` is given).
The connection runs on an event loop of its own, driven one call at a time."""

from __future__ import annotations

import asyncio
import signal
import ssl

from jsstore.cli.answer import Answer
from jsstore.cli.errors import CliError

PULL_PREFIX = "$JS.API.CONSUMER.MSG.NEXT."


def _answer(msg) -> Answer:
    headers = dict(msg.headers or {})
    status = headers.pop("Status", "")
    description = headers.pop("Description", "")
    return Answer(msg.subject, bytes(msg.data or b""), headers, status, description,
                  msg.reply or None)


def tls_context(cert: str | None, key: str | None, ca: str | None) -> ssl.SSLContext | None:
    """The client TLS context of --tlscert/--tlskey/--tlsca (None when none is given)."""
    if not (cert or key or ca):
        return None
    try:
        context = ssl.create_default_context(cafile=ca)
        if cert or key:
            context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise CliError(f"TLS: {exc}") from None
    return context


class RemoteBackend:
    """A connection to a NATS server with JetStream (nats-server or jsstore serve)."""

    where = "server"

    def __init__(self, url: str, *, user=None, password=None, creds=None, token=None,
                 tls: ssl.SSLContext | None = None, timeout: float = 5.0):
        try:
            import nats
        except ImportError:
            raise CliError("--server needs nats-py: pip install nats-py") from None
        self.timeout = timeout
        self.loop = asyncio.new_event_loop()
        self.errors: list[str] = []

        async def on_error(exc) -> None:
            self.errors.append(str(exc) or type(exc).__name__)

        options = dict(servers=[url], error_cb=on_error, allow_reconnect=False,
                       max_reconnect_attempts=1, reconnect_time_wait=0.1,
                       connect_timeout=timeout, name="jsstore")
        if user is not None:
            options.update(user=user, password=password)
        if token is not None:
            options["token"] = token
        if creds is not None:
            options["user_credentials"] = creds
        if tls is not None:
            options["tls"] = tls
        try:
            self.nc = self.run(asyncio.wait_for(nats.connect(**options), timeout * 2))
        except Exception as exc:  # noqa: BLE001 - nats-py raises many kinds; one line each
            self.loop.close()
            reason = self.errors[-1] if self.errors else (str(exc) or type(exc).__name__)
            raise CliError(f"could not connect to {url}: {reason}") from None

    def run(self, coro):
        """Run a coroutine on the connection's loop to its end. Ctrl-C cancels it and lets
        it clean up (its subscriptions, quietly) before the interrupt goes on."""
        task = self.loop.create_task(coro)
        interrupted = []

        def interrupt() -> None:
            interrupted.append(True)
            task.cancel()
        self.loop.add_signal_handler(signal.SIGINT, interrupt)
        try:
            result = self.loop.run_until_complete(task)
            if interrupted:         # (it took the cancel and ended all the same)
                raise KeyboardInterrupt
            return result
        except asyncio.CancelledError:
            if interrupted:
                raise KeyboardInterrupt from None
            raise
        finally:
            self.loop.remove_signal_handler(signal.SIGINT)

    def jetstream(self):
        """nats-py's JetStreamContext of the connection, for ``run``."""
        return self.nc.jetstream(timeout=self.timeout)

    def request(self, subject: str, payload: bytes = b"", headers: dict | None = None,
                timeout: float | None = None) -> Answer:
        from nats.errors import NoRespondersError
        from nats.errors import TimeoutError as NatsTimeout
        try:
            msg = self.run(self.nc.request(subject, payload, timeout=timeout or self.timeout,
                                           headers=headers or None))
        except NoRespondersError:
            raise CliError(f"no responders available for request on {subject}") from None
        except NatsTimeout:
            raise CliError(f"timeout waiting for an answer on {subject}") from None
        return _answer(msg)

    def publish(self, subject: str, payload: bytes, headers: dict | None = None) -> None:
        self.run(self.nc.publish(subject, payload, headers=headers or None))
        self.run(self.nc.flush(self.timeout))

    async def _collect(self, subject: str, count: int, timeout: float, send=None,
                       each=None) -> list:
        got: list[Answer] = []
        done = asyncio.Event()

        async def on_msg(msg) -> None:
            answer = _answer(msg)
            if answer.status in ("404", "408", "409") or (answer.status and not answer.data):
                if answer.status != "100":
                    done.set()
                return
            got.append(answer)
            if each is not None:
                each(answer)
            if count and len(got) >= count:
                done.set()
        inbox = self.nc.new_inbox() if send else subject
        sub = await self.nc.subscribe(inbox, cb=on_msg)
        try:
            if send:
                await send(inbox)
            await self.nc.flush(self.timeout)
            try:
                await asyncio.wait_for(done.wait(), timeout if timeout > 0 else None)
            except asyncio.TimeoutError:
                pass
        finally:
            await sub.unsubscribe()
        return got

    def fetch(self, stream: str, consumer: str, batch: int, timeout: float) -> list[Answer]:
        """Up to `batch` messages of a pull consumer, waiting up to `timeout` seconds."""
        expires = int(timeout * 1e9)

        async def send(inbox: str) -> None:
            await self.nc.publish(f"{PULL_PREFIX}{stream}.{consumer}",
                                  b'{"batch":%d,"expires":%d}' % (batch, expires), reply=inbox)
        return self.run(self._collect("", batch, timeout + 0.5, send))

    def subscribe(self, subject: str, count: int, timeout: float, each) -> list[Answer]:
        """The messages on `subject` (each handed to `each` as it comes) until `count`
        came (0: no limit) or `timeout` seconds passed (0: no limit)."""
        return self.run(self._collect(subject, count, timeout, each=each))

    def receive_chunks(self, subject: str, body: bytes, timeout: float, each) -> Answer:
        """A request whose answer is followed by chunks on its deliver subject (a stream
        snapshot): each chunk handed to `each` and acked, until the empty one that ends it;
        CliError when no chunk comes for `timeout` seconds."""
        async def go() -> Answer:
            inbox = self.nc.new_inbox()
            ended = asyncio.Event()
            failed: list[str] = []
            moved = asyncio.Event()

            async def on_chunk(msg) -> None:
                moved.set()
                if not msg.data:
                    status = _answer(msg)
                    if status.status not in ("", "204"):
                        failed.append(f"{status.status} {status.description}".strip())
                    ended.set()
                    return
                each(bytes(msg.data))
                if msg.reply:
                    await self.nc.publish(msg.reply, b"")
            sub = await self.nc.subscribe(inbox, cb=on_chunk)
            try:
                msg = await self.nc.request(subject, body.replace(b"{INBOX}", inbox.encode()),
                                            timeout=self.timeout)
                answer = _answer(msg)
                answer.json()
                while not ended.is_set():
                    moved.clear()
                    try:
                        await asyncio.wait_for(moved.wait(), timeout)
                    except asyncio.TimeoutError:
                        raise CliError(f"snapshot transfer stalled ({timeout:g}s without a "
                                       "chunk)") from None
            finally:
                await sub.unsubscribe()
            if failed:
                raise CliError(f"snapshot failed: {failed[0]}")
            return answer
        return self.run(go())

    def close(self) -> None:
        try:
            self.run(self.nc.close())
        finally:
            self.loop.close()
