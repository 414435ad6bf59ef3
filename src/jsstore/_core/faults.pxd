# Disk faults on demand: every write(2) and fsync(2) of a store goes through io_write /
# io_fsync, which tests can arm (faults.pyx: arm, disarm) to fail with an errno (ENOSPC,
# EIO, ...) at the Nth matching call, on a path pattern.  Unarmed, a call costs one C flag
# check before the system call.  Both return what the system call returns (-1 with errno
# set on failure) and never raise.
cdef ssize_t io_write(int fd, const void* buf, size_t n, object path) noexcept
cdef int io_fsync(int fd, object path) noexcept
