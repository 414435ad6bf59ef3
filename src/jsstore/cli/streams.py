"""``jsstore stream ls|info|add|edit|rm|purge|get|rmm|view``: the nats CLI's stream verbs,
each one ``$JS.API.STREAM.*`` request and its answer rendered (``--json``: the answer)."""

from __future__ import annotations

import base64
import json

from jsstore.cli import output
from jsstore.cli.errors import ApiError, UsageError
from jsstore.cli.values import asset_name, duration_ns, size_bytes
from jsstore.cli.wireapi import call, check_storage, paged
from jsstore.wire.headers import decode_headers

# flag -> (configuration field, value reader)
LIMIT_FLAGS = {
    "max_msgs": ("max_msgs", int), "max_msgs_per_subject": ("max_msgs_per_subject", int),
    "max_bytes": ("max_bytes", lambda v: size_bytes(v, "--max-bytes")),
    "max_msg_size": ("max_msg_size", lambda v: size_bytes(v, "--max-msg-size")),
    "max_age": ("max_age", lambda v: duration_ns(v, "--max-age")),
    "dupe_window": ("duplicate_window", lambda v: duration_ns(v, "--dupe-window")),
    "max_consumers": ("max_consumers", int), "replicas": ("num_replicas", int),
    "description": ("description", str),
}
RETENTION = {"limits": "limits", "interest": "interest", "work": "workqueue",
             "workq": "workqueue", "workqueue": "workqueue"}


def register(commands, parent) -> None:
    stream = commands.add_parser("stream", aliases=["str"], help="manage streams")
    verbs = stream.add_subparsers(dest="verb", metavar="VERB", required=True)
    ls = verbs.add_parser("ls", aliases=["list"], parents=[parent], help="list the streams")
    ls.add_argument("-n", "--names", action="store_true", help="names only")
    ls.set_defaults(run=stream_ls)
    info = verbs.add_parser("info", parents=[parent], help="a stream's configuration and state")
    info.add_argument("stream", type=asset_name)
    info.set_defaults(run=stream_info)
    for verb, run, text in (("add", stream_add, "create a stream"),
                            ("edit", stream_edit, "change a stream's configuration")):
        p = verbs.add_parser(verb, aliases=["create"] if verb == "add" else [],
                             parents=[parent], help=text)
        p.add_argument("stream", type=asset_name)
        config_flags(p, verb == "add")
        p.set_defaults(run=run)
    rm = verbs.add_parser("rm", aliases=["delete"], parents=[parent], help="delete a stream")
    rm.add_argument("stream", type=asset_name)
    rm.add_argument("-f", "--force", action="store_true", help="(no prompt is ever shown)")
    rm.set_defaults(run=stream_rm)
    purge = verbs.add_parser("purge", parents=[parent], help="remove a stream's messages")
    purge.add_argument("stream", type=asset_name)
    purge.add_argument("-f", "--force", action="store_true", help="(no prompt is ever shown)")
    purge.add_argument("--subject", help="only messages on this subject")
    purge.add_argument("--seq", type=int, help="messages below this sequence")
    purge.add_argument("--keep", type=int, help="keep this many of the newest messages")
    purge.set_defaults(run=stream_purge)
    get = verbs.add_parser("get", parents=[parent], help="one message by sequence")
    get.add_argument("stream", type=asset_name)
    get.add_argument("seq", type=int, nargs="?")
    get.add_argument("-S", "--last-for", metavar="SUBJECT", help="the last message on SUBJECT")
    get.set_defaults(run=stream_get)
    rmm = verbs.add_parser("rmm", parents=[parent], help="delete one message")
    rmm.add_argument("stream", type=asset_name)
    rmm.add_argument("seq", type=int)
    rmm.add_argument("-f", "--force", action="store_true", help="(no prompt is ever shown)")
    rmm.set_defaults(run=stream_rmm)
    view = verbs.add_parser("view", parents=[parent], help="print a stream's messages")
    view.add_argument("stream", type=asset_name)
    view.add_argument("--id", type=int, default=1, metavar="SEQ", help="first sequence")
    view.add_argument("--subject", default=">", help="only messages on this subject filter")
    view.add_argument("--count", type=int, default=0, help="at most this many (0: all)")
    view.set_defaults(run=stream_view)


def config_flags(p, adding: bool) -> None:
    p.add_argument("--subjects", action="append", metavar="SUBJECTS",
                   help="subjects the stream captures (comma separated; repeatable)")
    if adding:
        p.add_argument("--storage", choices=["file", "memory"], default="file")
        p.add_argument("--defaults", action="store_true",
                       help="defaults for everything not given (always the case: no prompts)")
        p.add_argument("--config", metavar="FILE", help="a JSON stream configuration")
    p.add_argument("--retention", choices=sorted(RETENTION))
    p.add_argument("--discard", choices=["old", "new"])
    for flag in LIMIT_FLAGS:
        p.add_argument("--" + flag.replace("_", "-"), dest=flag)
    for flag in ("allow_rollup", "deny_delete", "deny_purge", "allow_direct"):
        p.add_argument("--" + flag.replace("_", "-"), dest=flag, action="store_true",
                       default=None)


def apply_flags(config: dict, args) -> dict:
    """The configuration with the command line's settings over it."""
    if args.subjects:
        config["subjects"] = [s for arg in args.subjects for s in arg.split(",") if s]
    if args.retention:
        config["retention"] = RETENTION[args.retention]
    if args.discard:
        config["discard"] = args.discard
    for flag, (field, read) in LIMIT_FLAGS.items():
        value = getattr(args, flag)
        if value is not None:
            try:
                config[field] = read(value)
            except ValueError:
                raise UsageError(f"--{flag.replace('_', '-')}: invalid value {value!r}") from None
    for flag in ("allow_rollup", "deny_delete", "deny_purge", "allow_direct"):
        if getattr(args, flag):
            config[flag + ("_hdrs" if flag == "allow_rollup" else "")] = True
    return config


def stream_ls(backend, args) -> int:
    streams, raws = paged(backend, "STREAM.LIST", "streams")
    if args.json:
        output.print_json(raws[0] if len(raws) == 1 else
                          {"total": len(streams), "offset": 0, "limit": len(streams),
                           "streams": streams})
        return 0
    if args.names:
        for s in streams:
            print(s["config"]["name"])
        return 0
    if not streams:
        print("No Streams defined")
        return 0
    rows = [[s["config"]["name"], s["config"].get("description", ""),
             output.when(s.get("created")), output.count(s["state"]["messages"]),
             output.size(s["state"]["bytes"]), output.when(s["state"].get("last_ts"))]
            for s in sorted(streams, key=lambda s: s["config"]["name"])]
    print(output.table(f"Streams: {len(streams)}",
                       ["Name", "Description", "Created", "Messages", "Size", "Last Message"],
                       rows))
    return 0


def show_info(info: dict) -> None:
    config, state = info["config"], info["state"]
    print(output.bold(f"Information for Stream {config['name']} created "
                      f"{output.when(info.get('created'))}"))
    print()
    pairs = [("Subjects", ", ".join(config.get("subjects") or [])),
             ("Replicas", str(config.get("num_replicas", 1))),
             ("Storage", config.get("storage", "file").capitalize())]
    if config.get("description"):
        pairs.insert(0, ("Description", config["description"]))
    print(output.fields(pairs))
    print("\n" + output.bold("Options:") + "\n")
    print(output.fields([
        ("Retention", config.get("retention", "limits").capitalize()),
        ("Acknowledgments", str(not config.get("no_ack", False)).lower()),
        ("Discard Policy", config.get("discard", "old").capitalize()),
        ("Duplicate Window", output.duration(config.get("duplicate_window"))),
        ("Allows Msg Delete", str(not config.get("deny_delete", False)).lower()),
        ("Allows Purge", str(not config.get("deny_purge", False)).lower()),
        ("Allows Rollups", str(bool(config.get("allow_rollup_hdrs"))).lower())]))
    print("\n" + output.bold("Limits:") + "\n")
    print(output.fields([
        ("Maximum Messages", output.limit(config.get("max_msgs"))),
        ("Maximum Per Subject", output.limit(config.get("max_msgs_per_subject"))),
        ("Maximum Bytes", output.limit(config.get("max_bytes"))),
        ("Maximum Age", output.duration(config.get("max_age"))),
        ("Maximum Message Size", output.limit(config.get("max_msg_size"))),
        ("Maximum Consumers", output.limit(config.get("max_consumers")))]))
    print("\n" + output.bold("State:") + "\n")
    print(output.fields([
        ("Messages", output.count(state.get("messages"))),
        ("Bytes", output.size(state.get("bytes"))),
        ("First Sequence", f"{output.count(state.get('first_seq'))}"
                           f" @ {output.when(state.get('first_ts'))}".rstrip(" @")),
        ("Last Sequence", f"{output.count(state.get('last_seq'))}"
                          f" @ {output.when(state.get('last_ts'))}".rstrip(" @")),
        ("Deleted Messages", output.count(state.get("num_deleted"))),
        ("Active Consumers", output.count(state.get("consumer_count"))),
        ("Number of Subjects", output.count(state.get("num_subjects")))]))


def stream_info(backend, args) -> int:
    reply = call(backend, f"STREAM.INFO.{args.stream}")
    output.print_json(reply.raw) if args.json else show_info(reply.body)
    return 0


def stream_add(backend, args) -> int:
    config = {"name": args.stream}
    if args.config:
        try:
            with open(args.config) as f:
                config = {**json.load(f), "name": args.stream}
        except (OSError, ValueError) as exc:
            raise UsageError(f"--config {args.config}: {exc}") from None
    else:
        config.update(storage=args.storage, retention="limits", discard="old")
    config = apply_flags(config, args)
    check_storage(backend, config.get("storage"))
    reply = call(backend, f"STREAM.CREATE.{args.stream}", config)
    output.print_json(reply.raw) if args.json else show_info(reply.body)
    return 0


def stream_edit(backend, args) -> int:
    current = call(backend, f"STREAM.INFO.{args.stream}")["config"]
    reply = call(backend, f"STREAM.UPDATE.{args.stream}", apply_flags(dict(current), args))
    output.print_json(reply.raw) if args.json else show_info(reply.body)
    return 0


def stream_rm(backend, args) -> int:
    reply = call(backend, f"STREAM.DELETE.{args.stream}")
    output.print_json(reply.raw) if args.json else print(f"Deleted stream {args.stream}")
    return 0


def stream_purge(backend, args) -> int:
    body = {k: v for k, v in (("filter", args.subject), ("seq", args.seq),
                              ("keep", args.keep)) if v is not None}
    reply = call(backend, f"STREAM.PURGE.{args.stream}", body or None)
    if args.json:
        output.print_json(reply.raw)
    else:
        print(f"Purged {output.count(reply.get('purged'))} messages from {args.stream}")
    return 0


def message_of(reply) -> dict:
    """The stored message of a STREAM.MSG.GET answer, its headers and data decoded."""
    message = dict(reply["message"])
    message["data"] = base64.b64decode(message.get("data") or "")
    hdrs = base64.b64decode(message.get("hdrs") or "")
    message["headers"] = decode_headers(hdrs) or {}
    return message


def show_message(stream: str, message: dict) -> None:
    print(output.bold(f"Item: {stream}#{message['seq']} received "
                      f"{output.when(message.get('time'))} on Subject {message['subject']}"))
    print()
    if message["headers"]:
        print("Headers:")
        for key, value in message["headers"].items():
            print(f"  {key}: {value}")
        print()
    print(message["data"].decode("utf-8", "replace"))


def stream_get(backend, args) -> int:
    if (args.seq is None) == (args.last_for is None):
        raise UsageError("stream get: give a sequence or --last-for SUBJECT")
    body = {"seq": args.seq} if args.seq is not None else {"last_by_subj": args.last_for}
    reply = call(backend, f"STREAM.MSG.GET.{args.stream}", body)
    output.print_json(reply.raw) if args.json else show_message(args.stream, message_of(reply))
    return 0


def stream_rmm(backend, args) -> int:
    reply = call(backend, f"STREAM.MSG.DELETE.{args.stream}", {"seq": args.seq})
    if args.json:
        output.print_json(reply.raw)
    else:
        print(f"Deleted message {args.seq} from {args.stream}")
    return 0


def stored_messages(backend, stream: str, first: int = 1, subject: str = ">", limit: int = 0):
    """The stored messages from sequence `first` on (STREAM.MSG.GET next_by_subj), as
    (raw answer, message) pairs."""
    seq, seen = max(first, 1), 0
    last = int(call(backend, f"STREAM.INFO.{stream}")["state"]["last_seq"])
    while seq <= last and (not limit or seen < limit):
        try:
            reply = call(backend, f"STREAM.MSG.GET.{stream}",
                         {"seq": seq, "next_by_subj": subject})
        except ApiError as exc:     # 10037 no message found: past the last match
            if exc.err_code == 10037:
                return
            raise
        message = message_of(reply)
        yield reply.raw, message
        seen += 1
        seq = int(message["seq"]) + 1


def stream_view(backend, args) -> int:
    for raw, message in stored_messages(backend, args.stream, args.id, args.subject, args.count):
        if args.json:
            print(raw.decode())
            continue
        print(output.bold(f"[{message['seq']}] Subject: {message['subject']} Received: "
                          f"{output.when(message.get('time'))}"))
        for key, value in message["headers"].items():
            print(f"  {key}: {value}")
        print()
        print(message["data"].decode("utf-8", "replace"))
        print()
    return 0
