"""Tests of the deleted-sequence set (jsstore._core.storage.seqset.SeqSet) and its byte encoding
(jsstore._core.storage.seqcodec).

The reference for the encoding is nats-server's avl.SequenceSet.  Besides hand-built
byte strings, the tests carry a small Python model of the Go tree (`GoTree`): its AVL
insert, its pre-order Encode, and its Decode, which hangs nodes under a binary-search
walk in file order and trusts the stored heights.  Our encodings must rebuild, in that
model, a tree whose stored heights are the true heights and that is AVL-balanced.
"""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from jsstore._core.storage.seqcodec import decode, encode, encoded_len
from jsstore._core.storage.seqset import SeqSet
from jsstore.errors import CorruptStreamState

NODE_BITS = 2048
TOP = 2**64 - 1
HEADER = struct.Struct("<BBII")          # magic, version, node count, size
V2_NODE_LEN = 8 + 32 * 8 + 2
V1_NODE_LEN = 8 + 64 * 8 + 2


# ---- a model of nats-server's tree ------------------------------------------------------


class GoNode:
    def __init__(self, base: int, height: int = 1):
        self.base = base
        self.words = [0] * 32
        self.left: GoNode | None = None
        self.right: GoNode | None = None
        self.height = height


def _height(node):
    return node.height if node else 0


def _fix_height(node):
    node.height = max(_height(node.left), _height(node.right)) + 1


def _balance(node):
    return _height(node.left) - _height(node.right) if node else 0


def _rotate_left(node):
    pivot = node.right
    node.right, pivot.left = pivot.left, node
    _fix_height(node)
    _fix_height(pivot)
    return pivot


def _rotate_right(node):
    pivot = node.left
    node.left, pivot.right = pivot.right, node
    _fix_height(node)
    _fix_height(pivot)
    return pivot


class GoTree:
    """The shape nats-server's SequenceSet builds: an AVL tree keyed by node base."""

    def __init__(self):
        self.root: GoNode | None = None
        self.size = 0
        self.node_count = 0

    def insert(self, seq: int) -> None:
        self.root = self._insert(self.root, seq)

    def _insert(self, node, seq):
        if node is None:
            node = GoNode(seq // NODE_BITS * NODE_BITS)
            self.node_count += 1
        if seq < node.base:
            node.left = self._insert(node.left, seq)
        elif seq >= node.base + NODE_BITS:
            node.right = self._insert(node.right, seq)
        else:
            offset = seq - node.base
            if not node.words[offset // 64] >> (offset % 64) & 1:
                node.words[offset // 64] |= 1 << (offset % 64)
                self.size += 1
            return node
        _fix_height(node)
        if _balance(node) > 1:
            if _balance(node.left) < 0:
                node.left = _rotate_left(node.left)
            return _rotate_right(node)
        if _balance(node) < -1:
            if _balance(node.right) > 0:
                node.right = _rotate_right(node.right)
            return _rotate_left(node)
        return node

    def preorder(self):
        stack = [self.root] if self.root else []
        while stack:
            node = stack.pop()
            yield node
            stack.extend(child for child in (node.right, node.left) if child)

    def encode(self) -> bytes:
        parts = [HEADER.pack(22, 2, self.node_count, self.size)]
        for node in self.preorder():
            parts.append(struct.pack("<Q32QH", node.base, *node.words, node.height))
        return b"".join(parts)

    @classmethod
    def decode_v2(cls, buf: bytes) -> "GoTree":
        """Decode as nats-server does: no rebalancing, heights taken from the bytes."""
        magic, version, node_count, size = HEADER.unpack_from(buf)
        assert (magic, version) == (22, 2)
        tree = cls()
        tree.size = size
        for index in range(node_count):
            fields = struct.unpack_from("<Q32QH", buf, HEADER.size + index * V2_NODE_LEN)
            node = GoNode(fields[0], fields[33])
            node.words = list(fields[1:33])
            tree.node_count += 1
            if tree.root is None:
                tree.root = node
                continue
            parent = tree.root
            while True:
                side = "left" if node.base < parent.base else "right"
                child = getattr(parent, side)
                if child is None:
                    setattr(parent, side, node)
                    break
                parent = child
        return tree

    def members(self) -> list[int]:
        out = []

        def walk(node):
            if node:
                walk(node.left)
                for word, bits in enumerate(node.words):
                    out.extend(node.base + word * 64 + bit for bit in range(64) if bits >> bit & 1)
                walk(node.right)

        walk(self.root)
        return out

    def check_heights_and_balance(self) -> None:
        for node in self.preorder():
            assert node.height == max(_height(node.left), _height(node.right)) + 1, node.base
            assert -1 <= _balance(node) <= 1, node.base


def go_encoding(members) -> bytes:
    tree = GoTree()
    for seq in members:
        tree.insert(seq)
    return tree.encode()


def v2_node(base: int, members=(), height: int = 1) -> bytes:
    words = [0] * 32
    for seq in members:
        words[(seq - base) // 64] |= 1 << ((seq - base) % 64)
    return struct.pack("<Q32QH", base, *words, height)


def v1_node(base: int, members=(), height: int = 1) -> bytes:
    words = [0] * 64
    for seq in members:
        words[(seq - base) // 64] |= 1 << ((seq - base) % 64)
    return struct.pack("<Q64QH", base, *words, height)


def check_go_decodes(seqs: SeqSet) -> None:
    """nats-server's Decode of our bytes yields the same members in a sound AVL tree."""
    encoded = encode(seqs)
    tree = GoTree.decode_v2(encoded)
    tree.check_heights_and_balance()
    assert tree.members() == seqs.to_list()
    assert tree.size == len(seqs) % 2**32
    assert tree.node_count == seqs.node_count()


# ---- basics ---------------------------------------------------------------------------


def test_basic_membership_and_counts():
    seqs = SeqSet()
    for seq in (22, 222, 2000, 2, 2, 4):
        seqs.insert(seq)
        assert seqs.exists(seq) and seq in seqs
    assert len(seqs) == 5 and seqs.node_count() == 1
    assert seqs.min() == 2 and seqs.max() == 2000
    assert list(seqs) == [2, 4, 22, 222, 2000] == seqs.to_list()
    assert seqs.delete(22) and not seqs.delete(22) and 22 not in seqs
    assert not seqs.delete(10**12)
    assert SeqSet([5, 1, 5]).to_list() == [1, 5]


def test_empty_set():
    seqs = SeqSet()
    assert len(seqs) == 0 and seqs.node_count() == 0
    assert seqs.min() == 0 and seqs.max() == 0
    assert list(seqs) == [] and seqs.to_list() == []
    assert seqs.count_range(0, TOP) == 0
    assert seqs.next_absent(7) == 7 and seqs.prev_absent(7) == 7
    assert seqs.delete_below(TOP) == 0 and seqs.delete_above(0) == 0


def test_contains_is_lenient_and_methods_are_strict():
    seqs = SeqSet([0, TOP])
    assert TOP in seqs and 0 in seqs
    assert -1 not in seqs and 2**64 not in seqs and "1" not in seqs and None not in seqs
    with pytest.raises(OverflowError):
        seqs.insert(-1)
    with pytest.raises(OverflowError):
        seqs.exists(2**64)


def test_empty_nodes_are_removed():
    seqs = SeqSet([1, 2048, 4096, 4097])
    assert seqs.node_count() == 3
    seqs.delete(2048)
    assert seqs.node_count() == 2
    seqs.delete(4096)
    assert seqs.node_count() == 2
    seqs.delete(4097)
    assert seqs.node_count() == 1
    seqs.delete(1)
    assert seqs.node_count() == 0 and len(seqs) == 0


def test_insert_range_spanning_existing_and_new_nodes():
    seqs = SeqSet([5, 3 * NODE_BITS + 7, 10 * NODE_BITS])
    added = seqs.insert_range(NODE_BITS - 3, 6 * NODE_BITS + 2)
    expected = {5, 10 * NODE_BITS} | set(range(NODE_BITS - 3, 6 * NODE_BITS + 3))
    assert added == (6 * NODE_BITS + 3) - (NODE_BITS - 3) - 1     # 3 * NODE_BITS + 7 was there
    assert seqs.to_list() == sorted(expected)
    assert seqs.node_count() == len({seq // NODE_BITS for seq in expected})
    assert seqs.insert_range(10, 9) == 0
    assert seqs.insert_range(TOP - 2, TOP) == 3 and seqs.max() == TOP


def test_delete_below_and_above_drop_whole_nodes():
    seqs = SeqSet()
    seqs.insert_range(1, 100 * NODE_BITS)
    assert seqs.node_count() == 101
    assert seqs.delete_below(60 * NODE_BITS + 5) == 60 * NODE_BITS + 4
    assert seqs.min() == 60 * NODE_BITS + 5 and seqs.node_count() == 41
    assert seqs.delete_above(70 * NODE_BITS) == 30 * NODE_BITS
    assert seqs.max() == 70 * NODE_BITS and seqs.node_count() == 11
    assert len(seqs) == 10 * NODE_BITS - 4
    remaining = len(seqs)
    assert seqs.delete_below(0) == 0 and seqs.delete_above(TOP) == 0
    assert seqs.delete_below(TOP) == remaining
    assert len(seqs) == 0 and seqs.node_count() == 0


def test_next_and_prev_absent_cross_nodes_and_edges():
    seqs = SeqSet()
    seqs.insert_range(1, 3 * NODE_BITS + 10)
    assert seqs.next_absent(1) == 3 * NODE_BITS + 11
    assert seqs.next_absent(0) == 0
    assert seqs.prev_absent(3 * NODE_BITS) == 0
    seqs.insert(0)
    assert seqs.prev_absent(3 * NODE_BITS) is None
    seqs.insert_range(TOP - 3 * NODE_BITS, TOP)
    assert seqs.next_absent(TOP - 3 * NODE_BITS) is None
    assert seqs.prev_absent(TOP) == TOP - 3 * NODE_BITS - 1
    seqs.delete(TOP - 70)
    assert seqs.next_absent(TOP - 3 * NODE_BITS) == TOP - 70


EDGES = sorted({base + delta for base in (0, 64, 1984, 2048, 4032, 4096, 6144)
                for delta in (-2, -1, 0, 1, 2) if base + delta >= 0})


@pytest.mark.parametrize("pattern", ["full", "odd", "sparse"])
def test_edges_of_words_and_nodes(pattern):
    """Every query and trim at offsets around word and node boundaries, against a set."""
    step = {"full": 1, "odd": 2, "sparse": 61}[pattern]
    model = set(range(1, 3 * NODE_BITS + 5, step))
    for seq in EDGES:
        seqs = SeqSet(model)
        assert seqs.next_absent(seq) == model_next_absent(model, seq)
        assert seqs.prev_absent(seq) == model_prev_absent(model, seq)
        for last in EDGES:
            assert seqs.count_range(seq, last) == sum(seq <= s <= last for s in model)
        assert seqs.delete_above(seq) == sum(s > seq for s in model)
        assert seqs.to_list() == sorted(s for s in model if s <= seq)
        seqs = SeqSet(model)
        assert seqs.delete_below(seq) == sum(s < seq for s in model)
        assert seqs.to_list() == sorted(s for s in model if s >= seq)
        seqs = SeqSet()
        assert seqs.insert_range(seq, seq + 70) == 71
        assert seqs.to_list() == list(range(seq, seq + 71))


def test_count_range():
    seqs = SeqSet([0, 63, 64, 2047, 2048, 5000, TOP])
    assert seqs.count_range(0, TOP) == 7
    assert seqs.count_range(63, 2048) == 4
    assert seqs.count_range(64, 64) == 1
    assert seqs.count_range(65, 2046) == 0
    assert seqs.count_range(10, 5) == 0
    assert seqs.count_range(TOP, TOP) == 1


def test_copy_union_clear_and_equality():
    first = SeqSet([1, 10, 100, 200])
    second = SeqSet([5000, 6100, 6200, 6222, 100])
    duplicate = first.copy()
    assert duplicate == first and duplicate is not first
    duplicate.union(second)
    assert duplicate.to_list() == [1, 10, 100, 200, 5000, 6100, 6200, 6222]
    assert first.to_list() == [1, 10, 100, 200]
    assert len(duplicate) == 8 and duplicate.node_count() == 3
    duplicate.union(duplicate)
    assert len(duplicate) == 8
    empty = SeqSet()
    empty.union(second)
    assert empty == second
    duplicate.clear()
    assert duplicate == SeqSet() and duplicate.node_count() == 0
    duplicate.insert(3)
    assert duplicate.to_list() == [3]
    assert first != second and first != [1, 10, 100, 200]
    with pytest.raises(TypeError):
        hash(first)


def test_iteration_survives_mutation():
    seqs = SeqSet(range(0, 50 * NODE_BITS, 97))
    seen = []
    for seq in seqs:
        seen.append(seq)
        seqs.delete(seq + 97)                  # remove the next member ahead of the cursor
        if len(seen) == 5:
            seqs.clear()                       # frees the node array under the iterator
            seqs.insert_range(10**9, 10**9 + 3)
    assert seen == [0, 194, 388, 582, 776, 10**9, 10**9 + 1, 10**9 + 2, 10**9 + 3]


def test_large_ascending_inserts_stay_compact():
    seqs = SeqSet()
    for seq in range(1, 200_001):
        seqs.insert(seq)
    assert len(seqs) == 200_000 and seqs.node_count() == 200_000 // NODE_BITS + 1
    assert seqs.count_range(1000, 1999) == 1000
    check_go_decodes(seqs)


# ---- the encoding ---------------------------------------------------------------------


def test_encode_empty_set_is_the_bare_header():
    assert encode(SeqSet()) == bytes([22, 2, 0, 0, 0, 0, 0, 0, 0, 0])
    assert encoded_len(SeqSet()) == 10
    decoded, consumed = decode(encode(SeqSet()))
    assert len(decoded) == 0 and consumed == 10


def test_codec_rejects_what_is_not_a_set():
    for function in (encode, encoded_len):
        with pytest.raises(TypeError):
            function(None)
        with pytest.raises(TypeError):
            function([1, 2])
    with pytest.raises(TypeError):
        decode("not bytes")


def test_encode_single_node_byte_for_byte():
    seqs = SeqSet([1, 2, 64, 2047])
    expected = (bytes([22, 2]) + struct.pack("<II", 1, 4) + struct.pack("<Q", 0)
                + struct.pack("<Q", 0b110) + struct.pack("<Q", 1) + bytes(8 * 29)
                + struct.pack("<Q", 1 << 63) + struct.pack("<H", 1))
    assert encode(seqs) == expected
    assert len(expected) == encoded_len(seqs) == 10 + 266


def test_encode_three_and_four_nodes_byte_for_byte():
    three = SeqSet([3, NODE_BITS + 100, 2 * NODE_BITS])
    assert encode(three) == (HEADER.pack(22, 2, 3, 3)
                             + v2_node(NODE_BITS, [NODE_BITS + 100], height=2)
                             + v2_node(0, [3]) + v2_node(2 * NODE_BITS, [2 * NODE_BITS]))
    members = [3, NODE_BITS + 100, 2 * NODE_BITS + 2047, 3 * NODE_BITS]
    four = SeqSet(members)
    expected = (HEADER.pack(22, 2, 4, 4)
                + v2_node(NODE_BITS, [NODE_BITS + 100], height=3)
                + v2_node(0, [3])
                + v2_node(2 * NODE_BITS, [2 * NODE_BITS + 2047], height=2)
                + v2_node(3 * NODE_BITS, [3 * NODE_BITS]))
    assert encode(four) == expected
    # nats-server builds exactly these shapes from ascending inserts
    assert go_encoding(sorted(members)) == expected
    assert go_encoding(three.to_list()) == encode(three)


@pytest.mark.parametrize("node_count", [1, 2, 3, 5, 7, 8, 15, 16, 100, 1000])
def test_encoding_rebuilds_a_sound_tree_in_nats_server(node_count):
    rng = random.Random(node_count)
    seqs = SeqSet()
    for index in range(node_count):
        base = index * 3 * NODE_BITS
        for _ in range(rng.randint(1, 5)):
            seqs.insert(base + rng.randrange(NODE_BITS))
    assert seqs.node_count() == node_count
    check_go_decodes(seqs)
    root_height = struct.unpack_from("<H", encode(seqs), 10 + 264)[0]
    assert root_height == node_count.bit_length()


@pytest.mark.parametrize("seed", range(8))
def test_decode_nats_server_shaped_encodings(seed):
    rng = random.Random(seed)
    members = {rng.randrange(60 * NODE_BITS) for _ in range(rng.randint(1, 400))}
    order = list(members)
    rng.shuffle(order)
    encoded = go_encoding(order)
    decoded, consumed = decode(encoded + b"trailing")
    assert consumed == len(encoded)
    assert decoded.to_list() == sorted(members)
    assert decoded.node_count() == len({seq // NODE_BITS for seq in members})


def test_decode_accepts_bytes_like_and_reports_consumed():
    seqs = SeqSet([7, 9000, 123456789])
    encoded = encode(seqs)
    for buf in (encoded, bytearray(encoded), memoryview(b"xx" + encoded + b"yy")[2:]):
        decoded, consumed = decode(buf)
        assert decoded == seqs and consumed == len(encoded)


def test_decode_v1_hand_built():
    # v1 nodes hold 64 words (4096 sequences); the upper 32 words land in base+2048.
    body = v1_node(0, [1, 40 * 64 + 5]) + v1_node(8192, [8192 + 4095], height=2)
    encoded = bytes([22, 1]) + struct.pack("<II", 2, 3) + body
    decoded, consumed = decode(encoded + b"\x00" * 7)
    assert consumed == 10 + 2 * 522 == len(encoded)
    assert decoded.to_list() == [1, 2565, 12287]
    assert decoded.node_count() == 3
    # a v1 set re-encodes as v2
    assert encode(decoded)[1] == 2 and decode(encode(decoded))[0] == decoded


def test_decode_v1_size_mismatch_is_corrupt():
    encoded = bytes([22, 1]) + struct.pack("<II", 1, 5) + v1_node(0, [1, 2])
    with pytest.raises(CorruptStreamState):
        decode(encoded)


def test_decode_unaligned_base():
    # nats-server's SetInitialMin makes a node whose base is not a multiple of 2048.
    encoded = HEADER.pack(22, 2, 1, 3) + v2_node(1000, [1000, 1001, 1000 + 2047])
    decoded, _ = decode(encoded)
    assert decoded.to_list() == [1000, 1001, 3047] and decoded.node_count() == 2
    v1 = bytes([22, 1]) + struct.pack("<II", 1, 2) + v1_node(100, [100, 100 + 4095])
    assert decode(v1)[0].to_list() == [100, 4195]


def test_decode_merges_duplicate_nodes_and_skips_empty_ones():
    encoded = (HEADER.pack(22, 2, 4, 3) + v2_node(4096, [4097]) + v2_node(0, [])
               + v2_node(4096, [4100]) + v2_node(0, [5]))
    decoded, consumed = decode(encoded)
    assert decoded.to_list() == [5, 4097, 4100] and decoded.node_count() == 2
    assert consumed == len(encoded)


CORRUPT_CASES = {
    "empty": b"",
    "short header": bytes([22, 2, 0, 0, 0, 0, 0, 0, 0]),
    "bad magic": bytes([23, 2]) + bytes(8),
    "version 0": bytes([22, 0]) + bytes(8),
    "version 3": bytes([22, 3]) + bytes(8),
    "version 255": bytes([22, 255]) + bytes(8),
    "v2 huge count": HEADER.pack(22, 2, 0xFFFFFFFF, 0),
    "v2 overflowing count": HEADER.pack(22, 2, 0x00800000, 0),
    "v1 huge count": HEADER.pack(22, 1, 0xFFFFFFFF, 0),
    "v1 overflowing count": HEADER.pack(22, 1, 0x00800000, 0),
    "count one past the data": HEADER.pack(22, 2, 2, 1) + v2_node(0, [1]),
    "size mismatch": HEADER.pack(22, 2, 1, 2) + v2_node(0, [1]),
    "members past 2**64": HEADER.pack(22, 2, 1, 1) + v2_node(TOP - 10, [TOP - 10 + 20]),
    "v1 upper half past 2**64": (bytes([22, 1]) + struct.pack("<II", 1, 1)
                                 + struct.pack("<Q64QH", TOP - 2047, *([0] * 63 + [1]), 1)),
}


@pytest.mark.parametrize("name", sorted(CORRUPT_CASES))
def test_corrupt_inputs_raise_cleanly(name):
    with pytest.raises(CorruptStreamState):
        decode(CORRUPT_CASES[name])


def test_every_truncation_is_corrupt():
    encoded = encode(SeqSet([1, 5000, 90000, 10**10]))
    for length in range(len(encoded)):
        with pytest.raises(CorruptStreamState):
            decode(encoded[:length])
    single_v1 = bytes([22, 1]) + struct.pack("<II", 1, 1) + v1_node(0, [9])
    for length in range(len(single_v1)):
        with pytest.raises(CorruptStreamState):
            decode(single_v1[:length])


@settings(max_examples=300, deadline=None)
@given(version=st.sampled_from([1, 2]), node_count=st.integers(0, 4), size=st.integers(0, 2**32 - 1),
       body=st.binary(max_size=1200))
def test_garbage_never_crashes(version, node_count, size, body):
    buf = HEADER.pack(22, version, node_count, size) + body
    try:
        decoded, consumed = decode(buf)
    except CorruptStreamState:
        return
    assert consumed <= len(buf)
    assert decode(encode(decoded)) == (decoded, encoded_len(decoded))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, TOP), max_size=60), st.lists(st.integers(0, 40_000), max_size=60))
def test_round_trip(sparse, dense):
    seqs = SeqSet(sparse + dense)
    decoded, consumed = decode(encode(seqs))
    assert decoded == seqs and consumed == encoded_len(seqs)
    assert decoded.to_list() == sorted(set(sparse + dense))
    check_go_decodes(seqs)


# ---- a state machine against a Python set ---------------------------------------------

SEQS = st.one_of(
    st.integers(0, 20_000),
    st.builds(lambda node, delta: max(0, node * NODE_BITS + delta), st.integers(0, 12), st.integers(-3, 3)),
    st.integers(TOP - 5000, TOP),
    st.integers(0, TOP),
)
LENGTHS = st.integers(0, 600)


def model_next_absent(model, seq):
    while seq in model:
        if seq == TOP:
            return None
        seq += 1
    return seq


def model_prev_absent(model, seq):
    while seq in model:
        if seq == 0:
            return None
        seq -= 1
    return seq


class SeqSetMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.seqs = SeqSet()
        self.model: set[int] = set()

    @rule(seq=SEQS)
    def insert(self, seq):
        assert self.seqs.insert(seq) == (seq not in self.model)
        self.model.add(seq)

    @rule(first=SEQS, length=LENGTHS)
    def insert_range(self, first, length):
        last = min(first + length, TOP)
        new = set(range(first, last + 1)) - self.model
        assert self.seqs.insert_range(first, last) == len(new)
        self.model |= new

    @rule(seq=SEQS)
    def delete(self, seq):
        assert self.seqs.delete(seq) == (seq in self.model)
        self.model.discard(seq)

    @rule(data=st.data())
    def delete_existing(self, data):
        assume(self.model)
        seq = data.draw(st.sampled_from(sorted(self.model)))
        assert self.seqs.delete(seq)
        self.model.discard(seq)

    @rule(seq=SEQS)
    def delete_below(self, seq):
        removed = {member for member in self.model if member < seq}
        assert self.seqs.delete_below(seq) == len(removed)
        self.model -= removed

    @rule(seq=SEQS)
    def delete_above(self, seq):
        removed = {member for member in self.model if member > seq}
        assert self.seqs.delete_above(seq) == len(removed)
        self.model -= removed

    @rule()
    def clear(self):
        self.seqs.clear()
        self.model.clear()

    @rule(members=st.lists(SEQS, max_size=20), first=SEQS, length=LENGTHS)
    def union(self, members, first, length):
        other = SeqSet(members)
        other.insert_range(first, min(first + length, TOP))
        before = other.to_list()
        self.seqs.union(other)
        self.model.update(before)
        assert other.to_list() == before

    @rule(seq=SEQS)
    def queries(self, seq):
        assert self.seqs.exists(seq) == (seq in self.model) == (seq in self.seqs)
        assert self.seqs.next_absent(seq) == model_next_absent(self.model, seq)
        assert self.seqs.prev_absent(seq) == model_prev_absent(self.model, seq)

    @rule(data=st.data())
    def queries_on_members(self, data):
        assume(self.model)
        seq = data.draw(st.sampled_from(sorted(self.model)))
        assert self.seqs.exists(seq)
        assert self.seqs.next_absent(seq) == model_next_absent(self.model, seq)
        assert self.seqs.prev_absent(seq) == model_prev_absent(self.model, seq)

    @rule(first=SEQS, length=st.one_of(LENGTHS, st.integers(0, TOP)))
    def count_range(self, first, length):
        last = min(first + length, TOP)
        assert self.seqs.count_range(first, last) == sum(first <= s <= last for s in self.model)
        assert self.seqs.count_range(last, first) == (last == first and first in self.model)

    @rule(seq=SEQS)
    def copy_is_independent(self, seq):
        duplicate = self.seqs.copy()
        assert duplicate == self.seqs
        duplicate.insert(seq)
        duplicate.delete_below(seq)
        assert self.seqs.to_list() == sorted(self.model)

    @rule()
    def encode_decode(self):
        encoded = encode(self.seqs)
        assert len(encoded) == encoded_len(self.seqs)
        decoded, consumed = decode(encoded)
        assert decoded == self.seqs and consumed == len(encoded)
        check_go_decodes(self.seqs)

    @rule()
    def iterate(self):
        assert list(self.seqs) == sorted(self.model)

    @invariant()
    def matches_model(self):
        assert len(self.seqs) == len(self.model)
        assert self.seqs.to_list() == sorted(self.model)
        assert self.seqs.min() == (min(self.model) if self.model else 0)
        assert self.seqs.max() == (max(self.model) if self.model else 0)
        assert self.seqs.node_count() == len({seq // NODE_BITS for seq in self.model})


SeqSetMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_seqset_against_python_set = SeqSetMachine.TestCase


# ---- against the real nats-server ---------------------------------------------------------


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@pytest.mark.natsserver
def test_index_db_delete_map_round_trips_through_nats_server(tmp_path):
    """nats-server writes a block's delete map into msgs/index.db as an avl.SequenceSet.

    We decode the one it wrote, then replace it with our own encoding of a different set
    (one extra deleted sequence that exists only there, not as a tombstone), fix the
    counts and the checksum, and restart the server: it must report our set.
    """
    import asyncio
    import hashlib

    import nats

    from jsstore._core.storage.hashing import highway64_digest
    from natsserver import nats_server, require_nats_server

    require_nats_server()
    deleted = [5, 100, 2047, 2048, 2100, 4500, 7000, 7001, 9999]
    extra = 3000
    total = 10_050

    async def fill(url):
        nc = await nats.connect(url)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.>"])
        for _ in range(total):
            await nc.publish("s.x", b"p")
        await nc.flush()
        for _ in range(200):
            if (await js.stream_info("S")).state.messages == total:
                break
            await asyncio.sleep(0.05)
        for seq in deleted:
            await js.delete_msg("S", seq)
        await nc.close()

    async def inspect(url):
        nc = await nats.connect(url)
        js = nc.jetstream()
        state = (await js.stream_info("S")).state
        present = {}
        for seq in (extra, extra + 1, 100, 101):
            try:
                await js.get_msg("S", seq)
                present[seq] = True
            except nats.js.errors.NotFoundError:
                present[seq] = False
        await nc.close()
        return state, present

    with nats_server(tmp_path) as server:
        asyncio.run(fill(server.url))
    (index_path,) = tmp_path.glob("**/streams/S/msgs/index.db")
    data = bytearray(index_path.read_bytes())
    key = hashlib.sha256(b"S").digest()
    assert bytes(data[-8:]) == highway64_digest(key, bytes(data[:-8]))

    hits = []
    for pos in range(len(data) - 1):
        if data[pos] == 22 and data[pos + 1] == 2:
            try:
                decoded, consumed = decode(bytes(data[pos:-8]))
            except CorruptStreamState:
                continue
            hits.append((pos, decoded, consumed))
    assert [hit[1].to_list() for hit in hits] == [deleted]
    pos, decoded, consumed = hits[0]
    assert decoded.node_count() == 5 and consumed == 10 + 5 * 266
    # index.db v3+: uvarint numDeleted, uvarint ttls, uvarint schedules, then the set
    assert data[1] >= 3 and bytes(data[pos - 3:pos]) == bytes([len(deleted), 0, 0])

    ours = decoded.copy()
    ours.insert(extra)
    encoded = encode(ours)
    assert len(encoded) == consumed and encoded != bytes(data[pos:pos + consumed])
    data[pos:pos + consumed] = encoded
    data[pos - 3] = len(deleted) + 1
    msgs = _uvarint(total - len(deleted))
    assert bytes(data[2:2 + len(msgs)]) == msgs
    replacement = _uvarint(total - len(deleted) - 1)
    assert len(replacement) == len(msgs)
    data[2:2 + len(msgs)] = replacement
    data[-8:] = highway64_digest(key, bytes(data[:-8]))
    index_path.write_bytes(bytes(data))

    with nats_server(tmp_path) as server:
        state, present = asyncio.run(inspect(server.url))
    assert state.num_deleted == len(deleted) + 1
    assert state.messages == total - len(deleted) - 1
    assert present == {extra: False, extra + 1: True, 100: False, 101: True}
