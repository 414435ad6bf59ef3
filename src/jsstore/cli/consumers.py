"""``jsstore consumer ls|info|add|rm|next``: the nats CLI's consumer verbs, each one
``$JS.API.CONSUMER.*`` request and its answer rendered (``--json``: the answer)."""

from __future__ import annotations

from datetime import datetime

from jsstore.cli import output
from jsstore.cli.errors import UsageError
from jsstore.cli.values import asset_name, duration_ns
from jsstore.cli.wireapi import call, paged

DELIVER = {"all": "all", "last": "last", "new": "new", "last_per_subject": "last_per_subject",
           "subject": "last_per_subject"}


def register(commands, parent) -> None:
    consumer = commands.add_parser("consumer", aliases=["con"], help="manage consumers")
    verbs = consumer.add_subparsers(dest="verb", metavar="VERB", required=True)
    ls = verbs.add_parser("ls", aliases=["list"], parents=[parent], help="a stream's consumers")
    ls.add_argument("stream", type=asset_name)
    ls.add_argument("-n", "--names", action="store_true", help="names only")
    ls.set_defaults(run=consumer_ls)
    info = verbs.add_parser("info", parents=[parent], help="a consumer's configuration and state")
    info.add_argument("stream", type=asset_name)
    info.add_argument("consumer", type=asset_name)
    info.set_defaults(run=consumer_info)
    add = verbs.add_parser("add", aliases=["create"], parents=[parent], help="create a consumer")
    add.add_argument("stream", type=asset_name)
    add.add_argument("consumer", type=asset_name)
    add.add_argument("--filter", action="append", metavar="SUBJECT",
                     help="subjects to consume (repeatable)")
    add.add_argument("--ack", choices=["explicit", "all", "none"], default="explicit")
    add.add_argument("--deliver", default="all",
                     help="all, last, new, last_per_subject or a start sequence")
    add.add_argument("--replay", choices=["instant", "original"], default="instant")
    add.add_argument("--max-deliver", type=int, dest="max_deliver")
    add.add_argument("--max-pending", type=int, dest="max_pending", help="max ack pending")
    add.add_argument("--wait", help="acknowledgement waiting time (30s)")
    add.add_argument("--target", help="push consumer: the deliver subject")
    add.add_argument("--pull", action="store_true", help="a pull consumer (the default)")
    add.add_argument("--description")
    add.add_argument("--defaults", action="store_true",
                     help="defaults for everything not given (always the case: no prompts)")
    add.set_defaults(run=consumer_add)
    rm = verbs.add_parser("rm", aliases=["delete"], parents=[parent], help="delete a consumer")
    rm.add_argument("stream", type=asset_name)
    rm.add_argument("consumer", type=asset_name)
    rm.add_argument("-f", "--force", action="store_true", help="(no prompt is ever shown)")
    rm.set_defaults(run=consumer_rm)
    nxt = verbs.add_parser("next", parents=[parent], help="fetch messages of a pull consumer")
    nxt.add_argument("stream", type=asset_name)
    nxt.add_argument("consumer", type=asset_name)
    nxt.add_argument("--count", type=int, default=1)
    nxt.add_argument("--no-ack", dest="ack", action="store_false",
                     help="leave the messages unacknowledged")
    nxt.add_argument("--ack", dest="ack", action="store_true", default=True)
    nxt.add_argument("--raw", action="store_true", help="only the messages' data")
    nxt.add_argument("--wait", default=None, metavar="DURATION",
                     help="how long a server is waited on (1s, 500ms; default: --timeout)")
    nxt.set_defaults(run=consumer_next)


def consumer_ls(backend, args) -> int:
    found, raws = paged(backend, f"CONSUMER.LIST.{args.stream}", "consumers")
    if args.json:
        output.print_json(raws[0] if len(raws) == 1 else
                          {"total": len(found), "offset": 0, "limit": len(found),
                           "consumers": found})
        return 0
    if args.names:
        for c in found:
            print(c["name"])
        return 0
    if not found:
        print(f"No Consumers defined for Stream {args.stream}")
        return 0
    rows = [[c["name"], c["config"].get("description", ""), output.when(c.get("created")),
             output.count(c.get("num_ack_pending")), output.count(c.get("num_pending")),
             output.when((c.get("delivered") or {}).get("last_active"))]
            for c in sorted(found, key=lambda c: c["name"])]
    print(output.table(f"Consumers for Stream {args.stream}: {len(found)}",
                       ["Name", "Description", "Created", "Ack Pending", "Unprocessed",
                        "Last Delivery"], rows))
    return 0


def sequences(pair: dict) -> str:
    return (f"Consumer sequence: {output.count(pair.get('consumer_seq'))} "
            f"Stream sequence: {output.count(pair.get('stream_seq'))}")


def show_info(info: dict) -> None:
    config = info["config"]
    print(output.bold(f"Information for Consumer {info['stream_name']} > {info['name']} "
                      f"created {output.when(info.get('created'))}"))
    print("\n" + output.bold("Configuration:") + "\n")
    pairs = [("Name", info["name"])]
    if config.get("description"):
        pairs.append(("Description", config["description"]))
    pairs += [("Pull Mode", str(not config.get("deliver_subject")).lower())]
    if config.get("deliver_subject"):
        pairs.append(("Delivery Subject", config["deliver_subject"]))
    filters = config.get("filter_subjects") or (
        [config["filter_subject"]] if config.get("filter_subject") else [])
    if filters:
        pairs.append(("Filter Subject", ", ".join(filters)))
    pairs += [("Deliver Policy", config.get("deliver_policy", "all").replace("_", " ").title()),
              ("Ack Policy", config.get("ack_policy", "explicit").title()),
              ("Ack Wait", output.duration(config.get("ack_wait"))),
              ("Replay Policy", config.get("replay_policy", "instant").title()),
              ("Max Deliver", output.limit(config.get("max_deliver"))),
              ("Max Ack Pending", output.limit(config.get("max_ack_pending")))]
    print(output.fields(pairs))
    delivered, floor = info.get("delivered") or {}, info.get("ack_floor") or {}
    print("\n" + output.bold("State:") + "\n")
    print(output.fields([
        ("Last Delivered Message", sequences(delivered)),
        ("Acknowledgment Floor", sequences(floor)),
        ("Outstanding Acks", output.count(info.get("num_ack_pending"))),
        ("Redelivered Messages", output.count(info.get("num_redelivered"))),
        ("Unprocessed Messages", output.count(info.get("num_pending"))),
        ("Waiting Pulls", output.count(info.get("num_waiting")))]))


def consumer_info(backend, args) -> int:
    reply = call(backend, f"CONSUMER.INFO.{args.stream}.{args.consumer}")
    output.print_json(reply.raw) if args.json else show_info(reply.body)
    return 0


def consumer_config(args) -> dict:
    config: dict = {"durable_name": args.consumer, "ack_policy": args.ack,
                    "replay_policy": args.replay}
    if args.deliver.isdigit():
        config.update(deliver_policy="by_start_sequence", opt_start_seq=int(args.deliver))
    elif args.deliver in DELIVER:
        config["deliver_policy"] = DELIVER[args.deliver]
    else:
        raise UsageError(f"--deliver: {args.deliver!r} is not all, last, new, "
                         "last_per_subject or a sequence")
    filters = [f for arg in args.filter or [] for f in arg.split(",") if f]
    if len(filters) == 1:
        config["filter_subject"] = filters[0]
    elif filters:
        config["filter_subjects"] = filters
    if args.max_deliver is not None:
        config["max_deliver"] = args.max_deliver
    if args.max_pending is not None:
        config["max_ack_pending"] = args.max_pending
    if args.wait:
        config["ack_wait"] = duration_ns(args.wait, "--wait")
    if args.target:
        config["deliver_subject"] = args.target
    if args.description:
        config["description"] = args.description
    return config


def consumer_add(backend, args) -> int:
    body = {"stream_name": args.stream, "config": consumer_config(args), "action": "create"}
    reply = call(backend, f"CONSUMER.CREATE.{args.stream}.{args.consumer}", body)
    output.print_json(reply.raw) if args.json else show_info(reply.body)
    return 0


def consumer_rm(backend, args) -> int:
    reply = call(backend, f"CONSUMER.DELETE.{args.stream}.{args.consumer}")
    if args.json:
        output.print_json(reply.raw)
    else:
        print(f"Deleted consumer {args.stream} > {args.consumer}")
    return 0


def ack_fields(reply: str | None) -> dict:
    """What a delivered message's ack subject says ($JS.ACK.<stream>.<consumer>.<delivered>.
    <stream seq>.<consumer seq>.<ns>.<pending>, with domain and account hash in v2)."""
    tokens = (reply or "").split(".")
    if len(tokens) < 9 or tokens[:2] != ["$JS", "ACK"]:
        return {}
    at = 2 if len(tokens) == 9 else 4
    names = ("stream", "consumer", "delivered", "stream_seq", "consumer_seq", "ns", "pending")
    values = dict(zip(names, tokens[at:at + 7]))
    return {k: (v if k in ("stream", "consumer") else int(v)) for k, v in values.items()}


def consumer_next(backend, args) -> int:
    if args.count < 1:
        raise UsageError("--count must be at least 1")
    wait = args.timeout if args.wait is None else duration_ns(args.wait, "--wait") / 1e9
    # a consumer that does not exist is said so, by the API, on both back ends (a pull
    # request to it is answered by nobody, which a server's client can only wait out)
    call(backend, f"CONSUMER.INFO.{args.stream}.{args.consumer}")
    got = backend.fetch(args.stream, args.consumer, args.count, wait)
    if not got:
        raise UsageError(f"no message received from {args.stream} > {args.consumer}")
    for msg in got:
        meta = ack_fields(msg.reply)
        if args.json:
            output.print_json({"subject": msg.subject, "headers": msg.headers,
                               "data": msg.data.decode("utf-8", "replace"),
                               "stream_seq": meta.get("stream_seq"),
                               "consumer_seq": meta.get("consumer_seq"),
                               "delivered": meta.get("delivered"),
                               "pending": meta.get("pending")})
        elif args.raw:
            print(msg.data.decode("utf-8", "replace"))
        else:
            stamp = datetime.now().strftime("%H:%M:%S")
            print(output.bold(f"[{stamp}] subj: {msg.subject} / tries: {meta.get('delivered')}"
                              f" / cons seq: {meta.get('consumer_seq')} / str seq: "
                              f"{meta.get('stream_seq')} / pending: {meta.get('pending')}"))
            print()
            for key, value in msg.headers.items():
                print(f"{key}: {value}")
            print(msg.data.decode("utf-8", "replace"))
            print()
        if args.ack and msg.reply:
            backend.publish(msg.reply, b"+ACK")
            if not args.json and not args.raw:
                print("Acknowledged message")
                print()
    return 0
