"""Replay the fuzz seed corpora (and every crasher ever saved there) through the fuzz
targets, plus deterministic mutations of each seed: truncations and byte flips. The
protocol parser's saved inputs are also fed split in two at every point."""

import os
import random
import sys

import pytest

FUZZ = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz")
sys.path.insert(0, FUZZ)

import targets  # noqa: E402


def _cases():
    root = os.path.join(FUZZ, "corpus")
    for target in sorted(os.listdir(root)):
        for name in sorted(os.listdir(os.path.join(root, target))):
            yield target, name


def _mutations(data: bytes, count: int, seed: str):
    rng = random.Random(seed)
    yield data
    for _ in range(count):
        kind = rng.randrange(3)
        if kind == 0 and data:
            yield data[: rng.randrange(len(data))]
        elif kind == 1 and data:
            b = bytearray(data)
            pos = rng.randrange(len(b))
            b[pos] ^= 1 << rng.randrange(8)
            yield bytes(b)
        else:
            b = bytearray(data)
            for _ in range(rng.randrange(1, 8)):
                if b:
                    b[rng.randrange(len(b))] = rng.randrange(256)
            yield bytes(b)


# targets that build a store or a JetStream per input replay fewer mutations
_SLOW = {"filestore_open": 20, "api_request": 60, "consumer_create": 60, "consumer_session": 60}


def test_every_target_has_a_corpus():
    root = os.path.join(FUZZ, "corpus")
    assert sorted(os.listdir(root)) == sorted(targets.TARGETS)
    for target in targets.TARGETS:
        assert os.listdir(os.path.join(root, target)), target


@pytest.mark.parametrize("target,name", list(_cases()))
def test_corpus_entry(target, name):
    with open(os.path.join(FUZZ, "corpus", target, name), "rb") as f:
        data = f.read()
    fn = targets.REPLAY[target]
    count = _SLOW.get(target, 300)
    for mutated in _mutations(data, count, f"{target}/{name}"):
        try:
            fn(mutated)
        except targets.EXPECTED:
            pass
