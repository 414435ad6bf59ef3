"""``jsstore obj add|ls|put|get|rm``: object store buckets as ``nats obj`` handles them,
through the asyncio API of each back end (jsstore.aio's JetStreamContext in process,
nats-py's over a connection: the same names, the same wire requests)."""

from __future__ import annotations

import os
import sys

from jsstore.cli import output
from jsstore.cli.values import asset_name
from jsstore.cli.errors import CliError
from jsstore.cli.wireapi import call, check_storage, paged


def register(commands, parent) -> None:
    obj = commands.add_parser("obj", aliases=["object"], help="object store buckets")
    verbs = obj.add_subparsers(dest="verb", metavar="VERB", required=True)
    add = verbs.add_parser("add", aliases=["create"], parents=[parent], help="create a bucket")
    add.add_argument("bucket", type=asset_name)
    add.add_argument("--description", default=None)
    add.add_argument("--storage", choices=["file", "memory"], default="file")
    add.set_defaults(run=obj_add)
    ls = verbs.add_parser("ls", aliases=["list"], parents=[parent],
                          help="the buckets, or a bucket's objects")
    ls.add_argument("bucket", nargs="?", type=asset_name)
    ls.set_defaults(run=obj_ls)
    put = verbs.add_parser("put", parents=[parent], help="store a file")
    put.add_argument("bucket", type=asset_name)
    put.add_argument("file", help="the file to store (- for stdin)")
    put.add_argument("--name", help="the object's name (default: the file's name)")
    put.set_defaults(run=obj_put)
    get = verbs.add_parser("get", parents=[parent], help="fetch an object")
    get.add_argument("bucket", type=asset_name)
    get.add_argument("name")
    get.add_argument("-O", "--output", metavar="FILE", help="write it here (default: stdout)")
    get.set_defaults(run=obj_get)
    rm = verbs.add_parser("rm", aliases=["del"], parents=[parent], help="delete an object")
    rm.add_argument("bucket", type=asset_name)
    rm.add_argument("name")
    rm.add_argument("-f", "--force", action="store_true", help="(no prompt is ever shown)")
    rm.set_defaults(run=obj_rm)


def drive(backend, work):
    """`work(js)` run on the back end's asyncio JetStream; a "not found" error is one line."""
    try:
        return backend.run(work(backend.jetstream()))
    except Exception as exc:
        kind = type(exc).__name__
        if "NotFound" in kind:
            raise CliError(f"{'bucket' if 'Bucket' in kind else 'object'} not found") from None
        if kind.endswith("Error") and not isinstance(exc, (CliError, OSError)):
            raise CliError(str(exc) or kind) from None
        raise


def info_row(info) -> dict:
    return {"name": info.name, "bucket": info.bucket, "size": info.size, "chunks": info.chunks,
            "mtime": info.mtime, "digest": info.digest, "deleted": bool(info.deleted)}


def obj_add(backend, args) -> int:
    check_storage(backend, args.storage)
    async def work(js):
        await js.create_object_store(args.bucket, description=args.description,
                                     storage=args.storage)
    drive(backend, work)
    if args.json:
        output.print_json(call(backend, f"STREAM.INFO.OBJ_{args.bucket}").raw)
    else:
        print(f"Created Object Store bucket {args.bucket}")
    return 0


def obj_ls(backend, args) -> int:
    if not args.bucket:
        streams, _ = paged(backend, "STREAM.LIST", "streams", {"subject": "$O.*.M.>"})
        buckets = [s for s in streams if s["config"]["name"].startswith("OBJ_")]
        if args.json:
            output.print_json({"total": len(buckets), "streams": buckets})
        elif not buckets:
            print("No Object Store buckets found")
        else:
            print(output.table("Object Store Buckets", ["Bucket", "Description", "Created",
                                                        "Size"],
                               [[s["config"]["name"][4:], s["config"].get("description", ""),
                                 output.when(s.get("created")), output.size(s["state"]["bytes"])]
                                for s in sorted(buckets, key=lambda s: s["config"]["name"])]))
        return 0

    async def work(js):
        store = await js.object_store(args.bucket)
        try:
            return await store.list(ignore_deletes=True)
        except Exception as exc:     # an empty bucket: nats-py's "no objects found"
            if "NoObjectsFound" in type(exc).__name__ or "NotFound" in type(exc).__name__:
                return []
            raise
    infos = [i for i in drive(backend, work) if not i.deleted]
    if args.json:
        output.print_json([info_row(i) for i in infos])
    elif not infos:
        print(f"No objects in bucket {args.bucket}")
    else:
        print(output.table(f"Bucket Contents: {args.bucket}", ["Name", "Size", "Time"],
                           [[i.name, output.size(i.size), output.when(i.mtime)]
                            for i in sorted(infos, key=lambda i: i.name)]))
    return 0


def obj_put(backend, args) -> int:
    try:
        if args.file == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(args.file, "rb") as f:
                data = f.read()
    except OSError as exc:
        raise CliError(f"{args.file}: {exc.strerror or exc}") from None
    name = args.name or (os.path.basename(args.file) if args.file != "-" else None)
    if not name:
        raise CliError("give the object a --name")

    async def work(js):
        store = await js.object_store(args.bucket)
        return await store.put(name, data)
    info = drive(backend, work)
    if args.json:
        output.print_json(info_row(info))
    else:
        print(f"Stored {name} in {args.bucket}: {output.size(info.size)} in "
              f"{info.chunks} chunks, digest {info.digest}")
    return 0


def obj_get(backend, args) -> int:
    async def work(js):
        store = await js.object_store(args.bucket)
        return await store.get(args.name)
    result = drive(backend, work)
    data = bytes(result.data or b"")
    if args.output:
        try:
            with open(args.output, "wb") as f:
                f.write(data)
        except OSError as exc:
            raise CliError(f"{args.output}: {exc.strerror or exc}") from None
        print(f"Wrote {output.size(len(data))} to {args.output}")
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return 0


def obj_rm(backend, args) -> int:
    async def work(js):
        store = await js.object_store(args.bucket)
        await store.delete(args.name)
    drive(backend, work)
    print(f"Deleted {args.name} from {args.bucket}")
    return 0
