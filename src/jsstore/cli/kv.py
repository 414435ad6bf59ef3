"""``jsstore kv ls|add|get|put|del|purge|history|watch``: key-value buckets as ``nats kv``
handles them -- a bucket is the stream ``KV_<bucket>`` on ``$KV.<bucket>.>`` and each verb
is the stream request or publish nats-py's KeyValue would send."""

from __future__ import annotations

from jsstore.cli import output
from jsstore.cli.errors import ApiError, CliError, UsageError
from jsstore.cli.streams import message_of, stored_messages
from jsstore.cli.values import asset_name, duration_ns, size_bytes
from jsstore.cli.wireapi import call, check_storage, paged

DUPLICATE_WINDOW = 120 * 10**9
OPERATION = "KV-Operation"


def register(commands, parent) -> None:
    kv = commands.add_parser("kv", help="key-value buckets")
    verbs = kv.add_subparsers(dest="verb", metavar="VERB", required=True)
    ls = verbs.add_parser("ls", aliases=["list"], parents=[parent],
                          help="the buckets, or a bucket's keys")
    ls.add_argument("bucket", nargs="?", type=asset_name)
    ls.add_argument("-n", "--names", action="store_true", help="names only")
    ls.set_defaults(run=kv_ls)
    add = verbs.add_parser("add", aliases=["create"], parents=[parent], help="create a bucket")
    add.add_argument("bucket", type=asset_name)
    add.add_argument("--history", type=int, default=1, help="values kept per key")
    add.add_argument("--ttl", help="how long values live")
    add.add_argument("--max-value-size", dest="max_value_size", default="-1")
    add.add_argument("--max-bucket-size", dest="max_bucket_size", default="-1")
    add.add_argument("--storage", choices=["file", "memory"], default="file")
    add.add_argument("--replicas", type=int, default=1)
    add.add_argument("--description", default="")
    add.set_defaults(run=kv_add)
    for verb, run, text in (("get", kv_get, "a key's value"), ("put", kv_put, "set a value"),
                            ("del", kv_del, "delete a key"),
                            ("purge", kv_purge, "delete a key and its history"),
                            ("history", kv_history, "a key's values")):
        p = verbs.add_parser(verb, aliases=["rm"] if verb == "del" else [], parents=[parent],
                             help=text)
        p.add_argument("bucket", type=asset_name)
        p.add_argument("key")
        if verb == "put":
            p.add_argument("value")
        if verb == "get":
            p.add_argument("--raw", action="store_true", help="only the value")
            p.add_argument("--revision", type=int, help="this revision of the key")
        if verb in ("del", "purge"):
            p.add_argument("-f", "--force", action="store_true", help="(no prompt is ever shown)")
        p.set_defaults(run=run)
    watch = verbs.add_parser("watch", parents=[parent],
                             help="the current values, then (with --server) each change")
    watch.add_argument("bucket", type=asset_name)
    watch.add_argument("key", nargs="?", default=">")
    watch.add_argument("--count", type=int, default=0, help="stop after this many changes")
    watch.add_argument("--wait", default="0", metavar="DURATION",
                       help="stop after this long (10s, 1m; 0: never)")
    watch.set_defaults(run=kv_watch)


def stream_of(bucket: str) -> str:
    if not bucket or any(c in bucket for c in ".*> \t"):
        raise UsageError(f"invalid bucket name {bucket!r}")
    return f"KV_{bucket}"


def subject_of(bucket: str, key: str) -> str:
    if not key or key.startswith(".") or key.endswith(".") or any(c in key for c in " \t*>"):
        raise UsageError(f"invalid key {key!r}")
    return f"$KV.{bucket}.{key}"


def operation(message: dict) -> str:
    return message["headers"].get(OPERATION, "PUT")


def kv_add(backend, args) -> int:
    ttl = duration_ns(args.ttl, "--ttl") if args.ttl else 0
    config = {"name": stream_of(args.bucket), "description": args.description,
              "subjects": [f"$KV.{args.bucket}.>"], "retention": "limits",
              "max_consumers": -1, "max_msgs": -1,
              "max_bytes": size_bytes(args.max_bucket_size, "--max-bucket-size"),
              "max_age": ttl, "max_msgs_per_subject": args.history,
              "max_msg_size": size_bytes(args.max_value_size, "--max-value-size"),
              "storage": args.storage, "discard": "new", "num_replicas": args.replicas,
              "duplicate_window": min(ttl, DUPLICATE_WINDOW) if ttl else DUPLICATE_WINDOW,
              "allow_rollup_hdrs": True, "deny_delete": True, "allow_direct": True,
              "allow_msg_ttl": True}
    check_storage(backend, args.storage)
    if not 1 <= args.history <= 64:
        raise UsageError("--history must be between 1 and 64")
    reply = call(backend, f"STREAM.CREATE.{config['name']}", config)
    output.print_json(reply.raw) if args.json else show_bucket(args.bucket, reply.body)
    return 0


def show_bucket(bucket: str, info: dict) -> None:
    config, state = info["config"], info["state"]
    print(output.bold(f"Information for Key-Value Store Bucket {bucket} created "
                      f"{output.when(info.get('created'))}"))
    print()
    print(output.fields([
        ("Bucket Name", bucket), ("History Kept", str(config.get("max_msgs_per_subject"))),
        ("Values Stored", output.count(state.get("messages"))),
        ("Backing Store Kind", "JetStream"), ("JetStream Stream", config["name"]),
        ("Maximum Age", output.duration(config.get("max_age"))),
        ("Storage", config.get("storage", "file").capitalize()),
        ("Bucket Size", output.size(state.get("bytes")))]))


def kv_ls(backend, args) -> int:
    if args.bucket:
        return kv_keys(backend, args)
    streams, _ = paged(backend, "STREAM.LIST", "streams", {"subject": "$KV.*.>"})
    buckets = [s for s in streams if s["config"]["name"].startswith("KV_")]
    if args.json:
        output.print_json({"total": len(buckets), "offset": 0, "limit": len(buckets),
                           "streams": buckets})
        return 0
    if args.names:
        for s in buckets:
            print(s["config"]["name"][3:])
        return 0
    if not buckets:
        print("No Key-Value buckets found")
        return 0
    rows = [[s["config"]["name"][3:], s["config"].get("description", ""),
             output.when(s.get("created")), output.size(s["state"]["bytes"]),
             output.count(s["state"]["messages"]), output.when(s["state"].get("last_ts"))]
            for s in sorted(buckets, key=lambda s: s["config"]["name"])]
    print(output.table("Key-Value Buckets", ["Bucket", "Description", "Created", "Size",
                                             "Values", "Last Update"], rows))
    return 0


def kv_keys(backend, args) -> int:
    stream = stream_of(args.bucket)
    info = call(backend, f"STREAM.INFO.{stream}", {"subjects_filter": f"$KV.{args.bucket}.>"})
    keys = []
    for subject in sorted(info["state"].get("subjects") or {}):
        message = message_of(call(backend, f"STREAM.MSG.GET.{stream}",
                                  {"last_by_subj": subject}))
        if operation(message) == "PUT":
            keys.append(subject[len(f"$KV.{args.bucket}."):])
    if args.json:
        output.print_json(keys)
    elif not keys:
        print(f"No keys found in bucket {args.bucket}")
    else:
        print("\n".join(keys))
    return 0


def kv_get(backend, args) -> int:
    stream, subject = stream_of(args.bucket), subject_of(args.bucket, args.key)
    body = {"seq": args.revision} if args.revision else {"last_by_subj": subject}
    try:
        reply = call(backend, f"STREAM.MSG.GET.{stream}", body)
    except ApiError as exc:
        if exc.err_code == 10037:
            raise CliError("key not found") from None
        raise
    message = message_of(reply)
    if message["subject"] != subject or operation(message) != "PUT":
        raise CliError("key not found")
    if args.json:
        output.print_json(reply.raw)
    elif args.raw:
        print(message["data"].decode("utf-8", "replace"))
    else:
        print(output.bold(f"{args.bucket} > {args.key} revision: {message['seq']} created @ "
                          f"{output.when(message.get('time'))}"))
        print()
        print(message["data"].decode("utf-8", "replace"))
    return 0


def publish(backend, args, value: bytes, headers: dict | None = None) -> dict:
    stream_of(args.bucket)
    answer = backend.request(subject_of(args.bucket, args.key), value, headers)
    if args.json:
        answer.json()
        output.print_json(answer.data)
    return answer.json()


def kv_put(backend, args) -> int:
    publish(backend, args, args.value.encode())
    if not args.json:
        print(args.value)
    return 0


def kv_del(backend, args) -> int:
    publish(backend, args, b"", {OPERATION: "DEL"})
    if not args.json:
        print(f"Deleted key {args.key} of bucket {args.bucket}")
    return 0


def kv_purge(backend, args) -> int:
    publish(backend, args, b"", {OPERATION: "PURGE", "Nats-Rollup": "sub"})
    if not args.json:
        print(f"Purged key {args.key} of bucket {args.bucket}")
    return 0


def kv_history(backend, args) -> int:
    stream, subject = stream_of(args.bucket), subject_of(args.bucket, args.key)
    entries = list(stored_messages(backend, stream, 1, subject))
    if not entries:
        raise CliError("key not found")
    if args.json:
        output.print_json([{"revision": m["seq"], "operation": operation(m),
                            "created": m.get("time"),
                            "value": m["data"].decode("utf-8", "replace")} for _, m in entries])
        return 0
    rows = [[args.key, m["seq"], operation(m), output.when(m.get("time")), len(m["data"]),
             m["data"].decode("utf-8", "replace")[:40]] for _, m in entries]
    print(output.table(f"History for {args.bucket} > {args.key}",
                       ["Key", "Revision", "Op", "Created", "Length", "Value"], rows))
    return 0


def kv_watch(backend, args) -> int:
    stream = stream_of(args.bucket)
    subject = f"$KV.{args.bucket}.{args.key}"
    info = call(backend, f"STREAM.INFO.{stream}", {"subjects_filter": subject})
    for name in sorted(info["state"].get("subjects") or {}):
        message = message_of(call(backend, f"STREAM.MSG.GET.{stream}", {"last_by_subj": name}))
        show_change(args.bucket, message["subject"], message["seq"], operation(message),
                    message["data"])
    if backend.where == "server":
        def each(msg) -> None:
            show_change(args.bucket, msg.subject, "", msg.headers.get(OPERATION, "PUT"),
                        msg.data)
        backend.subscribe(subject, args.count, duration_ns(args.wait, "--wait") / 1e9, each)
    return 0


def show_change(bucket: str, subject: str, revision, op: str, data: bytes) -> None:
    key = subject[len(f"$KV.{bucket}."):]
    value = data.decode("utf-8", "replace")
    print(f"[{op}] {bucket} > {key}" + (f" revision {revision}" if revision else "")
          + (f": {value}" if op == "PUT" else ""), flush=True)
