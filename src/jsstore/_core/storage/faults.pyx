"""The disk fault shim (see faults.pxd): the store's writes and fsyncs, and faults to arm.

    faults.arm("write", errno.ENOSPC, after=3, path="*.blk")   # the 4th block write fails
    faults.arm("fsync", errno.EIO)                              # every fsync fails
    faults.arm("fallocate", errno.ENOSPC)                       # no room for a mapped block
    faults.disarm()

An armed fault fires on a call whose operation matches and, when `path` is given, whose
file path matches the pattern (fnmatch, against the whole path or its base name), once
`after` such calls have passed; it then fires on every matching call until disarmed, as a
full or failing disk keeps failing (`times` limits how often).  With `partial`, a write
fault first lets half of the bytes through (a short write, as ENOSPC gives when the disk
fills in the middle of a record) and fails the call after it.

The Python layers call `write` and `fsync` here (os.write / os.fsync semantics: OSError on
failure); the core calls io_write / io_fsync.
"""
from libc.errno cimport errno

cdef extern from *:
    """
    #include <errno.h>
    static inline void jsstore_set_errno(int e) { errno = e; }
    """
    void set_errno "jsstore_set_errno"(int e) noexcept nogil

cdef extern from "fcntl.h" nogil:
    int posix_fallocate(int fd, long offset, long length)
from posix.unistd cimport write as c_write, fsync as c_fsync
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE

import fnmatch
import os

cdef bint armed = False        # the one check on the unarmed path
cdef object op_armed = None    # "write", "fsync" or "fallocate"
cdef int err_armed = 0
cdef long after_left = 0
cdef long times_left = -1      # -1: until disarmed
cdef object path_pattern = None
cdef bint partial_armed = False
cdef bint fail_next_write = False   # the call after a partial write fails
cdef long fired_count = 0


cdef bint _matches(str op, object path) noexcept:
    """Whether an armed fault fires on this call (counts `after` down)."""
    global after_left, times_left, fired_count
    try:
        if op != op_armed or times_left == 0:
            return False
        if path_pattern is not None:
            if path is None:
                return False
            p = os.fsdecode(path)
            if not (fnmatch.fnmatchcase(p, path_pattern)
                    or fnmatch.fnmatchcase(os.path.basename(p), path_pattern)):
                return False
        if after_left > 0:
            after_left -= 1
            return False
        if times_left > 0:
            times_left -= 1
        fired_count += 1
        return True
    except BaseException:
        return False


cdef ssize_t io_write(int fd, const void* buf, size_t n, object path) noexcept:
    global fail_next_write
    if not armed:
        return c_write(fd, buf, n)
    if fail_next_write and op_armed == "write":
        fail_next_write = False
        set_errno(err_armed)
        return -1
    if _matches("write", path):
        if partial_armed and n > 1:
            fail_next_write = True
            return c_write(fd, buf, n // 2)
        set_errno(err_armed)
        return -1
    return c_write(fd, buf, n)


cdef int io_fsync(int fd, object path) noexcept:
    if armed and _matches("fsync", path):
        set_errno(err_armed)
        return -1
    return _fsync_released(fd)


cdef int _fsync_released(int fd) noexcept:
    """fsync(2) with the GIL let go: the disk's wait is no other thread's (the event loop
    runs on while a sync thread waits); errno is the call's."""
    cdef int result
    with nogil:
        result = c_fsync(fd)
    return result


cdef int io_fallocate(int fd, long offset, long length, object path) noexcept:
    if not armed:
        return posix_fallocate(fd, offset, length)
    if _matches("fallocate", path):
        return err_armed
    return posix_fallocate(fd, offset, length)


def arm(str op, int err, long after=0, path=None, long times=-1, bint partial=False):
    """Make the (after+1)th matching `op` ("write", "fsync" or "fallocate": the space a
    mapped block reserves) fail with errno `err`, and
    every one after it (at most `times` in all; -1 = until disarm)."""
    global armed, op_armed, err_armed, after_left, times_left, path_pattern, partial_armed
    global fail_next_write, fired_count
    if op not in ("write", "fsync", "fallocate"):
        raise ValueError(f"unknown operation {op!r}")
    if err <= 0:
        raise ValueError("errno must be positive")
    op_armed, err_armed, after_left, times_left = op, err, after, times
    path_pattern = os.fsdecode(path) if path is not None else None
    partial_armed = partial and op == "write"
    fail_next_write = False
    fired_count = 0
    armed = True


def disarm():
    """No more faults: every call goes straight to the system."""
    global armed, op_armed, fail_next_write
    armed = False
    op_armed = None
    fail_next_write = False


def is_armed():
    return armed


def fired():
    """How many calls the armed fault has failed."""
    return fired_count


def write(int fd, data, path=None):
    """os.write through the shim: the number of bytes written; OSError on failure."""
    cdef Py_buffer view
    cdef ssize_t n
    cdef int err
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        n = io_write(fd, view.buf, <size_t>view.len, path)
        if n < 0:
            err = errno
            raise OSError(err, os.strerror(err), path)
        return n
    finally:
        PyBuffer_Release(&view)


def fsync(int fd, path=None):
    """os.fsync through the shim; OSError on failure."""
    cdef int err
    if io_fsync(fd, path) != 0:
        err = errno
        raise OSError(err, os.strerror(err), path)


def errno_text(int err):
    """An errno as Go writes it (syscall.Errno's text: the C library's, first letter lower
    case), which is how nats-server's store errors read: "no space left on device"."""
    text = os.strerror(err)
    return text[:1].lower() + text[1:]


def write_all(int fd, data, path=None):
    """Write every byte of data (short writes continued); OSError on failure."""
    view = memoryview(data).cast("B")
    while view:
        view = view[write(fd, view, path):]
