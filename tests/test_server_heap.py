"""jsstore serve fixes the C allocator's thresholds at start (jsstore._core.heap): without
that, glibc gives the heap's top back to the kernel after every turn's large read and
output buffers, and takes it again on the next (bench/README.md, "Core NATS delivery")."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from jsstore._core.heap import MMAP_THRESHOLD, TRIM_THRESHOLD, keep_heap

GLIBC = platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not GLIBC, reason="mallopt is glibc's")
def test_keep_heap_sets_both_thresholds():
    # in a child: the thresholds are the whole process's
    code = ("from jsstore._core.heap import keep_heap; import sys; "
            "sys.exit(0 if keep_heap() and keep_heap(1 << 20, 1 << 24) else 3)")
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ}, timeout=60)
    assert done.returncode == 0


@pytest.mark.skipif(GLIBC, reason="without glibc it does nothing")
def test_keep_heap_without_glibc_says_it_did_nothing():
    assert keep_heap() is False


def test_the_thresholds_keep_a_reads_buffers_in_the_heap():
    read_and_output = 2 * 256 * 1024        # a turn's largest read and one client's output
    assert MMAP_THRESHOLD > read_and_output
    assert TRIM_THRESHOLD > MMAP_THRESHOLD

