"""Stream and consumer management with nats-py's ``JetStreamManager`` face: the same
methods, arguments, answers (``jsstore.aio.api``) and exceptions (``jsstore.aio.errors``).

Every call is the ``$JS.API`` request a nats-py client sends, answered in process by the
JetStream's wire API (``JetStream.request_msgs``) on the worker thread; so the answers and
errors are nats-server's, and an error becomes the class nats-py would raise for it.
The ``timeout`` arguments are taken for nats-py's signatures and not used: in process an
answer comes when the call returns.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from jsstore.aio import api, errors
from jsstore.aio.worker import Worker
from jsstore.jetstream.account import JetStream
from jsstore.wire import headers as header_block

PREFIX = "$JS.API"
_INVALID_NAME_CHARS = ">*. /\\\t\r\n"


def _check_name(kind: str, name: str | None) -> None:
    if not name:
        raise ValueError(f"nats: {kind} name is required")
    if any(c in _INVALID_NAME_CHARS for c in name):
        raise ValueError(f"nats: invalid {kind} name: {name!r}")


class JetStreamManager:
    """The management API of one in-process JetStream."""

    def __init__(self, js: JetStream, worker: Worker):
        self._js = js
        self._worker = worker

    async def _request(self, subject: str, payload: bytes = b"",
                       headers: dict | None = None) -> list:
        """Every answer to a message sent into the JetStream (on the worker thread)."""
        return await self._worker.run(self._js.request_msgs, subject, payload, headers)

    async def _api_request(self, subject: str, payload: bytes = b"") -> dict[str, Any]:
        answers = await self._request(subject, payload)
        if not answers:
            # JetStream takes every $JS.API subject and leaves some unanswered (a reset of
            # a consumer that does not exist): a NATS client times out there
            raise errors.TimeoutError()
        resp = json.loads(answers[0].data)
        if "error" in resp:
            raise errors.APIError.from_error(resp["error"])
        return resp

    async def account_info(self) -> api.AccountInfo:
        """The account's JetStream usage and limits."""
        return api.AccountInfo.from_response(await self._api_request(f"{PREFIX}.INFO"))

    # -- streams --------------------------------------------------------------------------
    async def find_stream_name_by_subject(self, subject: str) -> str:
        """The stream whose subjects overlap `subject`; NotFoundError when none does."""
        info = await self._api_request(f"{PREFIX}.STREAM.NAMES",
                                       json.dumps({"subject": subject}).encode())
        if not info["streams"]:
            raise errors.NotFoundError()
        return info["streams"][0]

    async def stream_info(self, name: str, subjects_filter: str | None = None) -> api.StreamInfo:
        _check_name("stream", name)
        payload = (json.dumps({"subjects_filter": subjects_filter}).encode()
                   if subjects_filter else b"")
        resp = await self._api_request(f"{PREFIX}.STREAM.INFO.{name}", payload)
        return api.StreamInfo.from_response(resp)

    async def add_stream(self, config: api.StreamConfig | None = None,
                         **params) -> api.StreamInfo:
        config = (config or api.StreamConfig()).evolve(**params)
        _check_name("stream", config.name)
        resp = await self._api_request(f"{PREFIX}.STREAM.CREATE.{config.name}",
                                       json.dumps(config.as_dict()).encode())
        return api.StreamInfo.from_response(resp)

    async def update_stream(self, config: api.StreamConfig | None = None,
                            **params) -> api.StreamInfo:
        config = (config or api.StreamConfig()).evolve(**params)
        _check_name("stream", config.name)
        resp = await self._api_request(f"{PREFIX}.STREAM.UPDATE.{config.name}",
                                       json.dumps(config.as_dict()).encode())
        return api.StreamInfo.from_response(resp)

    async def delete_stream(self, name: str) -> bool:
        _check_name("stream", name)
        return (await self._api_request(f"{PREFIX}.STREAM.DELETE.{name}"))["success"]

    async def purge_stream(self, name: str, seq: int | None = None, subject: str | None = None,
                           keep: int | None = None) -> bool:
        """Remove all messages; those below `seq`; those on `subject`; all but `keep`."""
        _check_name("stream", name)
        request: dict[str, Any] = {}
        if seq:
            request["seq"] = seq
        if subject:
            request["filter"] = subject
        if keep:
            request["keep"] = keep
        resp = await self._api_request(f"{PREFIX}.STREAM.PURGE.{name}",
                                       json.dumps(request).encode())
        return resp["success"]

    async def streams_info(self, offset: int = 0) -> list[api.StreamInfo]:
        resp = await self._api_request(f"{PREFIX}.STREAM.LIST",
                                       json.dumps({"offset": offset}).encode())
        return [api.StreamInfo.from_response(s) for s in resp["streams"]]

    async def streams_info_iterator(self, offset: int = 0) -> api.StreamsListIterator:
        """One page of stream infos, with its offset and the total."""
        resp = await self._api_request(f"{PREFIX}.STREAM.LIST",
                                       json.dumps({"offset": offset}).encode())
        return api.StreamsListIterator(resp["offset"], resp["total"], resp["streams"])

    # -- consumers ------------------------------------------------------------------------
    async def add_consumer(self, stream: str, config: api.ConsumerConfig | None = None,
                           timeout: float | None = None, **params) -> api.ConsumerInfo:
        _check_name("stream", stream)
        config = (config or api.ConsumerConfig()).evolve(**params)
        if config.name:
            _check_name("consumer", config.name)
        if config.durable_name:
            _check_name("consumer", config.durable_name)
        payload = json.dumps({"stream_name": stream, "config": config.as_dict()}).encode()
        if config.name:
            subject = f"{PREFIX}.CONSUMER.CREATE.{stream}.{config.name}"
            if config.filter_subject and config.filter_subject != ">":
                subject += "." + config.filter_subject
        elif config.durable_name:
            subject = f"{PREFIX}.CONSUMER.DURABLE.CREATE.{stream}.{config.durable_name}"
        else:
            subject = f"{PREFIX}.CONSUMER.CREATE.{stream}"
        return api.ConsumerInfo.from_response(await self._api_request(subject, payload))

    async def consumer_info(self, stream: str, consumer: str,
                            timeout: float | None = None) -> api.ConsumerInfo:
        _check_name("stream", stream)
        _check_name("consumer", consumer)
        resp = await self._api_request(f"{PREFIX}.CONSUMER.INFO.{stream}.{consumer}")
        return api.ConsumerInfo.from_response(resp)

    async def consumers_info(self, stream: str,
                             offset: int | None = None) -> list[api.ConsumerInfo]:
        _check_name("stream", stream)
        payload = b"" if offset is None else json.dumps({"offset": offset}).encode()
        resp = await self._api_request(f"{PREFIX}.CONSUMER.LIST.{stream}", payload)
        return [api.ConsumerInfo.from_response(c) for c in resp["consumers"]]

    async def delete_consumer(self, stream: str, consumer: str) -> bool:
        _check_name("stream", stream)
        _check_name("consumer", consumer)
        resp = await self._api_request(f"{PREFIX}.CONSUMER.DELETE.{stream}.{consumer}")
        return resp["success"]

    async def pause_consumer(self, stream: str, consumer: str, pause_until: str,
                             timeout: float | None = None) -> api.ConsumerPause:
        """Pause delivery until `pause_until` (RFC 3339)."""
        _check_name("stream", stream)
        _check_name("consumer", consumer)
        resp = await self._api_request(f"{PREFIX}.CONSUMER.PAUSE.{stream}.{consumer}",
                                       json.dumps({"pause_until": pause_until}).encode())
        return api.ConsumerPause.from_response(resp)

    async def resume_consumer(self, stream: str, consumer: str,
                              timeout: float | None = None) -> api.ConsumerPause:
        """Deliver again at once (a pause until a past time)."""
        return await self.pause_consumer(stream, consumer, "1970-01-01T00:00:00Z")

    async def reset_consumer(self, stream: str, consumer: str, seq: int | None = None,
                             timeout: float | None = None) -> api.ConsumerReset:
        """Start the consumer over: from stream sequence `seq`, or (None, 0) from above
        its ack floor; ConsumerInvalidResetError when its deliver policy forbids `seq`."""
        _check_name("stream", stream)
        _check_name("consumer", consumer)
        payload = json.dumps({"seq": seq}).encode() if seq else b""
        try:
            resp = await self._api_request(f"{PREFIX}.CONSUMER.RESET.{stream}.{consumer}",
                                           payload)
        except errors.APIError as err:
            if err.err_code == 10204:
                raise errors.ConsumerInvalidResetError(
                    code=err.code, description=err.description, err_code=err.err_code) from err
            raise
        return api.ConsumerReset.from_response(resp)

    # -- messages -------------------------------------------------------------------------
    async def get_msg(self, stream_name: str, seq: int | None = None,
                      subject: str | None = None, direct: bool | None = False,
                      next: bool | None = False) -> api.RawStreamMsg:
        """The message at `seq`; the last on `subject`; with `next` the first at or
        after `seq` on `subject`.  `direct` asks with a direct get (the stream needs
        allow_direct)."""
        _check_name("stream", stream_name)
        request: dict[str, Any] = {}
        if seq:
            request["seq"] = seq
        if subject:
            request.pop("seq", None)
            request["last_by_subj"] = subject
        if next:
            request.pop("last_by_subj", None)
            request["seq"] = seq
            request["next_by_subj"] = subject
        payload = json.dumps(request).encode()
        if direct:
            return await self._direct_get(stream_name, seq, subject, payload)
        resp = await self._api_request(f"{PREFIX}.STREAM.MSG.GET.{stream_name}", payload)
        msg = api.RawStreamMsg.from_response(resp["message"])
        if msg.hdrs:
            msg.headers = header_block.decode_headers(base64.b64decode(msg.hdrs)) or None
        if msg.data:
            msg.data = base64.b64decode(msg.data)
        else:
            msg.data = None
        return msg

    async def _direct_get(self, stream_name: str, seq, subject,
                          payload: bytes) -> api.RawStreamMsg:
        target = f"{PREFIX}.DIRECT.GET.{stream_name}"
        if subject and seq is None:
            target, payload = f"{target}.{subject}", b""
        answers = await self._request(target, payload)
        if not answers:
            raise errors.ServiceUnavailableError()
        answer = answers[0]
        block = header_block.parse(answer.hdr) if answer.hdr else header_block.HeaderBlock()
        if not answer.data and block.status:
            if block.status == "404":
                raise errors.NotFoundError()
            raise errors.APIError.from_status(block.status, block.description)
        headers = header_block.decode_headers(answer.hdr)
        msg = api.RawStreamMsg(subject=block.get("Nats-Subject"), data=answer.data,
                               headers=headers)
        if block.get("Nats-Sequence"):
            msg.seq = int(block.get("Nats-Sequence"))
        if block.get("Nats-Time-Stamp"):
            msg.time = api.parse_time(block.get("Nats-Time-Stamp"))
        return msg

    async def get_last_msg(self, stream_name: str, subject: str,
                           direct: bool | None = False) -> api.RawStreamMsg:
        return await self.get_msg(stream_name, subject=subject, direct=direct)

    async def delete_msg(self, stream_name: str, seq: int) -> bool:
        _check_name("stream", stream_name)
        resp = await self._api_request(f"{PREFIX}.STREAM.MSG.DELETE.{stream_name}",
                                       json.dumps({"seq": seq}).encode())
        return resp["success"]
