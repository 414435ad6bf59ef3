# Disk faults on demand: every write(2), fsync(2) and posix_fallocate(3) of a store goes
# through io_write / io_fsync / io_fallocate, which tests can arm (faults.pyx: arm, disarm) to fail with an errno (ENOSPC,
# EIO, ...) at the Nth matching call, on a path pattern.  Unarmed, a call costs one C flag
# check before the system call.  They return what the call returns (io_write, io_fsync: -1
# with errno set on failure; io_fallocate: the error number) and never raise.
cdef ssize_t io_write(int fd, const void* buf, size_t n, object path) noexcept
cdef int io_fsync(int fd, object path) noexcept
cdef int io_fallocate(int fd, long offset, long length, object path) noexcept
