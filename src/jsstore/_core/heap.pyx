# cython: language_level=3
"""The C allocator's handling of the large buffers a server turns over on every loop turn.

A server reads up to 256 KiB per read and renders as much into a client's output buffer,
then frees both before the next turn.  glibc's malloc, by default, raises its mmap
threshold to the largest block freed and gives the top of the heap back to the kernel
whenever more than twice that lies free there: each turn then moves the heap's end down
and up again (brk) and the kernel zeroes the pages anew (page faults), which cost a busy
server more CPU than its parsing.  ``keep_heap`` fixes both thresholds, so freed buffers
are reused; the process's idle memory is unchanged (nothing is allocated ahead), and at most
`trim` bytes freed at the top of the heap stay with the process.  jsstore serve calls it
at start; a library never does (it is the process owner's choice).  Without glibc it does
nothing.
"""

cdef extern from *:
    """
    #if defined(__GLIBC__)
    #include <malloc.h>
    static int jss_keep_heap(int mmap_threshold, int trim) {
        return mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1
            && mallopt(M_TRIM_THRESHOLD, trim) == 1;
    }
    #else
    static int jss_keep_heap(int mmap_threshold, int trim) { return 0; }
    #endif
    """
    int jss_keep_heap(int mmap_threshold, int trim)

MMAP_THRESHOLD = 4 * 1024 * 1024    # blocks at least this large are mapped (and unmapped) alone
TRIM_THRESHOLD = 32 * 1024 * 1024   # free bytes at the heap's top given back beyond this


def keep_heap(int mmap_threshold=MMAP_THRESHOLD, int trim=TRIM_THRESHOLD) -> bool:
    """Fix the allocator's thresholds (see the module's docstring); whether it could."""
    return bool(jss_keep_heap(mmap_threshold, trim))
