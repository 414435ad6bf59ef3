"""Write the seed corpora: valid inputs of each kind, so fuzzing starts from real structure."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import jsstore  # noqa: E402
from jsstore import StoreOptions, StreamConfig  # noqa: E402
from jsstore._core.compress import ALG_S2, compress_block  # noqa: E402
from jsstore._core.seqcodec import encode as encode_seqset  # noqa: E402
from jsstore._core.seqset import SeqSet  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def save(target: str, name: str, data: bytes) -> None:
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        fs = jsstore.FileStore(d, StreamConfig(name="FUZZ", subjects=[">"]), StoreOptions(block_size=2048))
        for i in range(150):
            fs.store_msg(f"a.{i % 3}", b"NATS/1.0\r\nX: y\r\n\r\n" if i % 4 == 0 else None, b"m%d" % i)
        fs.remove_msg(3)
        fs.skip_msgs(fs.state().last_seq + 1, 3)
        fs.stop()
        msgs = os.path.join(d, "msgs")
        blocks = sorted(n for n in os.listdir(msgs) if n.endswith(".blk"))
        for n in blocks[:3] + blocks[-1:]:
            data = open(os.path.join(msgs, n), "rb").read()
            save("block_records", n, data)
            save("filestore_open", n, data)
            save("block_file", n + ".s2", compress_block(data, ALG_S2))
        save("index_db", "index.db", open(os.path.join(msgs, "index.db"), "rb").read())
    ss = SeqSet()
    for s in (1, 2, 3, 5000, 5001, 99999):
        ss.insert(s)
    save("seqset_decode", "small", encode_seqset(ss))
    save("seqset_decode", "empty", encode_seqset(SeqSet()))


if __name__ == "__main__":
    main()
