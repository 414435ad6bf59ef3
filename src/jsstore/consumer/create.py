"""CONSUMER.CREATE requests as nats-server 2.15 checks them, up to the configuration it
stores and answers.

Subjects (``parse_create_subject``):

* ``$JS.API.CONSUMER.CREATE.<stream>``                    legacy ephemeral (or named by
  the body's ``name``);
* ``$JS.API.CONSUMER.CREATE.<stream>.<consumer>``          named (durable when the body
  sets ``durable_name``);
* ``$JS.API.CONSUMER.CREATE.<stream>.<consumer>.<filter>`` named, the rest of the subject
  being the one filter subject;
* ``$JS.API.CONSUMER.DURABLE.CREATE.<stream>.<durable>``   legacy durable.

``plan_create`` runs nats-server's handler and ``addConsumerWithAction`` in their order:

1. ``decode_request``: the body as nats-server's strict Go decoder reads it (an empty body
   is an empty request; unknown keys, type errors, bad enum values and times are
   JSInvalidJSONErr with Go's texts; several JSON values in a row merge);
2. the body's ``stream_name`` against the subject (JSStreamMismatchErr);
3. path separators in the consumer name (JSConsumerNameContainsPathSeparatorsErr);
4. the form's own rules, ``check_legacy_durable`` / ``check_named`` /
   ``check_legacy_ephemeral``: durable name present and equal to the subject's, the
   subject's name given to the config, no durable on the legacy ephemeral subject, the
   subject's filter equal to ``filter_subject`` and not combined with ``filter_subjects``;
5. ``check_single_server``: num_replicas > 1 (JSStreamReplicasNotSupportedErr);
6. the stream must exist (JSStreamNotFoundErr);
7. an existing consumer of that name keeps its ``pause_until``;
8. ``consumerconfig.with_static_metadata``, ``normalize`` (pedantic), ``validate``;
9. an existing consumer: the ``create`` action needs the same configuration
   (JSConsumerAlreadyExists), the work-queue partition check, ``check_update`` (a
   new deliver subject while a client listens on the old one: JSConsumerNameExistErr)
   and ``apply_update``; otherwise the ``update`` action fails (JSConsumerDoesNotExist), then
   ``check_new_consumer`` and the ephemeral inactive threshold.

What nats-server then does with the store (a failure answers ``store_failed_error()``)
is the consumer engine's part.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Mapping

import msgspec

from jsstore.consumer import checks as consumer_checks
from jsstore.consumer import config as cc
from jsstore.gocompat import json as gojson
from jsstore.stream import config as streamconfig
from jsstore.wire import api as wire_api
from jsstore.wire import apierrors as api_errors

CONSUMER_CREATE_TYPE = wire_api.TYPE_PREFIX + "consumer_create_response"
CREATE_PREFIX = "$JS.API.CONSUMER.CREATE."
DURABLE_CREATE_PREFIX = "$JS.API.CONSUMER.DURABLE.CREATE."

Action = Literal["", "create", "update"]


class CreateConsumerRequest(msgspec.Struct, omit_defaults=True):
    """nats-server's CreateConsumerRequest body."""
    stream_name: str = ""
    config: cc.ConsumerConfig = msgspec.field(default_factory=cc.ConsumerConfig)
    action: Action = ""
    pedantic: bool = False


# nats-server's CreateConsumerRequest as its JSON decoder reads it
CREATE_REQUEST = gojson.struct("server.CreateConsumerRequest", {
    "stream_name": gojson.STRING_TYPE, "config": cc.CONSUMER_CONFIG,
    "action": gojson.enum({"": "", "create": "create", "update": "update"},
                          "unknown consumer action: %v"),
    "pedantic": gojson.BOOL,
})


def decode_request(payload: bytes) -> CreateConsumerRequest:
    """A CONSUMER.CREATE body as nats-server decodes it (strictly: unknown keys refused),
    JSInvalidJSONErr with Go's text when it cannot."""
    try:
        fields = gojson.decode_request(bytes(payload or b""), CREATE_REQUEST)
    except gojson.GoJSONError as exc:
        raise api_errors.JSInvalidJSONErr(err=exc) from None
    config = cc.config_from_fields(fields.pop("config", {}))
    return CreateConsumerRequest(config=config, **fields)


# -- the request checks ----------------------------------------------------------------------
@dataclass(frozen=True)
class CreateSubject:
    """What a create subject names: its form, the stream, the consumer and the filter."""
    form: Literal["ephemeral", "named", "durable"]
    stream: str
    consumer: str = ""
    filter: str = ""


def parse_create_subject(subject: str) -> CreateSubject | None:
    """The create subject's parts; None for a subject no create handler serves (a
    published "*" or ">" token is a name like any other: the checks refuse it)."""
    if subject.startswith(DURABLE_CREATE_PREFIX):
        tokens = subject[len(DURABLE_CREATE_PREFIX):].split(".")
        if len(tokens) != 2 or not all(tokens):
            return None
        return CreateSubject("durable", tokens[0], tokens[1])
    if not subject.startswith(CREATE_PREFIX):
        return None
    tokens = subject[len(CREATE_PREFIX):].split(".")
    if not all(tokens):
        return None
    if len(tokens) == 1:
        return CreateSubject("ephemeral", tokens[0])
    return CreateSubject("named", tokens[0], tokens[1], ".".join(tokens[2:]))


def check_stream_and_name(request: CreateConsumerRequest, target: CreateSubject) -> None:
    """The checks every form shares: the stream of the body is the subject's, and the
    consumer name (the subject's, or the body's on the legacy ephemeral subject) has no
    path separators."""
    if request.stream_name != target.stream:
        raise api_errors.JSStreamMismatchErr()
    name = target.consumer if target.form != "ephemeral" else request.config.name
    if "/" in name or "\\" in name:
        raise api_errors.JSConsumerNameContainsPathSeparatorsErr()


def check_legacy_durable(config: cc.ConsumerConfig, durable: str) -> cc.ConsumerConfig:
    """``CONSUMER.DURABLE.CREATE.<stream>.<durable>``: the body must name the same durable;
    the consumer takes the durable's name."""
    if not config.durable_name:
        raise api_errors.JSConsumerDurableNameNotSetErr()
    if config.durable_name != durable:
        raise api_errors.JSConsumerDurableNameNotMatchSubjectErr()
    return msgspec.structs.replace(config, name=durable)


def check_named(config: cc.ConsumerConfig, consumer: str, filter: str) -> cc.ConsumerConfig:
    """``CONSUMER.CREATE.<stream>.<consumer>[.<filter>]``: a durable name must be the
    subject's; the consumer takes the subject's name; a filter in the subject must be the
    body's filter_subject, and rules out filter_subjects."""
    if config.durable_name and config.durable_name != consumer:
        raise api_errors.JSConsumerDurableNameNotMatchSubjectErr()
    if filter and config.filter_subjects:
        raise api_errors.JSConsumerMultipleFiltersNotAllowed()
    if filter and config.filter_subject != filter:
        raise api_errors.JSConsumerCreateFilterSubjectMismatchErr()
    return msgspec.structs.replace(config, name=consumer)


def check_legacy_ephemeral(config: cc.ConsumerConfig) -> cc.ConsumerConfig:
    """``CONSUMER.CREATE.<stream>``: no durable name (a ``name`` in the body is kept)."""
    if config.durable_name:
        raise api_errors.JSConsumerEphemeralWithDurableNameErr()
    return config


def check_single_server(config: cc.ConsumerConfig) -> None:
    """One server keeps one copy: more replicas are refused before the stream is looked
    up."""
    if (config.num_replicas or 0) > 1:
        raise api_errors.JSStreamReplicasNotSupportedErr()


def check_request(request: CreateConsumerRequest, target: CreateSubject) -> cc.ConsumerConfig:
    """The handler's checks before the stream is looked up, in nats-server's order; the
    configuration with the names the subject gives it."""
    check_stream_and_name(request, target)
    if target.form == "durable":
        config = check_legacy_durable(request.config, target.consumer)
    elif target.form == "named":
        config = check_named(request.config, target.consumer, target.filter)
    else:
        config = check_legacy_ephemeral(request.config)
    check_single_server(config)
    return config


def parse_create_request(payload: bytes) -> CreateConsumerRequest:
    """The body of a create request (``decode_request``)."""
    return decode_request(payload)


def check_create_subject(stream: str, consumer: str, filter: str,
                         request: CreateConsumerRequest) -> CreateConsumerRequest:
    """The request checks of ``CONSUMER.CREATE.<stream>[.<consumer>[.<filter>]]`` (no
    consumer: the legacy ephemeral form); `request.config` gets the subject's names."""
    form = "named" if consumer else "ephemeral"
    request.config = check_request(request, CreateSubject(form, stream, consumer, filter))
    return request


def check_durable_subject(stream: str, durable: str,
                          request: CreateConsumerRequest) -> CreateConsumerRequest:
    """The request checks of ``CONSUMER.DURABLE.CREATE.<stream>.<durable>``;
    `request.config` gets the durable's name."""
    request.config = check_request(request, CreateSubject("durable", stream, durable))
    return request


@dataclass(frozen=True)
class CreatePlan:
    """What a create request comes to: the consumer's name ("" for a new unnamed
    ephemeral, whose name the engine picks; nats-server then answers a config without
    "name"), the configuration to store and answer, and whether the consumer exists."""
    stream: str
    name: str
    config: cc.ConsumerConfig
    exists: bool
    action: Action


class Others:
    """The stream's other consumers' configurations, read only when a check needs them
    (max_consumers, work queues): a stream with 10,000 consumers makes its next one
    without a pass over them."""

    def __init__(self, consumers: Mapping[str, cc.ConsumerConfig], name: str):
        self.consumers = consumers
        self.name = name

    def __iter__(self):
        name = self.name
        return (other for other_name, other in self.consumers.items() if other_name != name)


def plan_request(request: CreateConsumerRequest, target: CreateSubject, *,
                 stream: streamconfig.StreamConfig | None,
                 consumers: Mapping[str, cc.ConsumerConfig],
                 limits: cc.ServerLimits = cc.NO_LIMITS,
                 has_interest: Callable[[str], bool] | None = None) -> CreatePlan:
    """A decoded request for `target`, against the stream's configuration (None: no such
    stream) and its consumers' stored configurations by name.  `has_interest(subject)`:
    whether a client listens on a subject (an update may not move a push consumer off a
    deliver subject somebody listens on); None: nobody does."""
    config = check_request(request, target)
    if stream is None:
        raise api_errors.JSStreamNotFoundErr()
    lookup = target.consumer if target.form != "ephemeral" else config.name
    if lookup in consumers:
        config = msgspec.structs.replace(config, pause_until=consumers[lookup].pause_until)
    config = cc.with_static_metadata(config)
    config = cc.normalize(config, stream, pedantic=request.pedantic, limits=limits)
    consumer_checks.validate(config, stream, limits=limits)
    name = config.durable_name or config.name
    others = Others(consumers, name)
    current = consumers.get(name) if name else None
    if current is not None:
        if request.action == "create" and not consumer_checks.same_config(config, current):
            raise api_errors.JSConsumerAlreadyExists()
        consumer_checks.check_workqueue_update(config, stream, name, others)
        in_use = bool(has_interest is not None and current.deliver_subject
                      and has_interest(current.deliver_subject))
        consumer_checks.check_update(current, config, stream,
                                     deliver_subject_has_interest=in_use)
        return CreatePlan(target.stream, name, consumer_checks.apply_update(current, config), True,
                          request.action)
    if request.action == "update":
        raise api_errors.JSConsumerDoesNotExist()
    consumer_checks.check_new_consumer(config, stream, others, limits=limits)
    if cc.storable_error(config):           # the last step: writing the consumer's store
        raise store_failed_error()
    return CreatePlan(target.stream, name, cc.with_ephemeral_threshold(config), False,
                      request.action)


def plan_create(subject: str, payload: bytes, *, stream: streamconfig.StreamConfig | None,
                consumers: Mapping[str, cc.ConsumerConfig],
                limits: cc.ServerLimits = cc.NO_LIMITS) -> CreatePlan | None:
    """A CONSUMER.CREATE or DURABLE.CREATE request checked as nats-server does (see the
    module's docstring); None for a subject no create handler serves."""
    target = parse_create_subject(subject)
    if target is None:
        return None
    return plan_request(decode_request(payload), target, stream=stream, consumers=consumers,
                        limits=limits)


def store_failed_error() -> api_errors.ApiError:
    """The answer when the consumer's store cannot be made (nats-server hides the cause)."""
    return api_errors.JSConsumerCreateErrF(err="error creating store for consumer")


def create_error_response(exc: api_errors.ApiError) -> bytes:
    """The JSON answer to a failed create request, as nats-server writes it."""
    return gojson.encode({"type": CONSUMER_CREATE_TYPE, "error": exc.to_dict()})
