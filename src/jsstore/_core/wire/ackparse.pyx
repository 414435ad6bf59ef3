# cython: freethreading_compatible = False
"""The plain acks of a read, taken apart in C: plain_v1_acks(subjects) groups v1 ack
subjects (``$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<delivery seq>.<ts>.
<pending>``, exactly 9 tokens) by stream and consumer, in the order each pair first
appears, as a list of [stream, consumer, stream seqs, delivery seqs, subjects] (each
consumer's acks in the order sent).

It takes every subject ASCII, of 9 tokens, the delivered count, stream seq and delivery
seq 1 to 18 digits, the stream seq not 0, the timestamp and pending count digits: subjects
whose seqs nats-server's ackReplyInfo (jsstore.wire.ackreply.ack_reply_info) reads the same
way.  For anything else it returns None, and the read's acks are applied one by one
(Acknowledgements.process).  The router hands each consumer's group to
Acknowledgements.ack_run.
"""

from libc.stdint cimport uint64_t
from libc.string cimport memcmp

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object unicode, Py_ssize_t* size) except NULL
    bint PyUnicode_IS_ASCII(object unicode)


cdef inline bint _digits(const char* s, Py_ssize_t start, Py_ssize_t end,
                         Py_ssize_t longest) noexcept nogil:
    cdef Py_ssize_t i
    if end <= start or (longest > 0 and end - start > longest):
        return False
    for i in range(start, end):
        if s[i] < 48 or s[i] > 57:
            return False
    return True


cdef inline uint64_t _value(const char* s, Py_ssize_t start, Py_ssize_t end) noexcept nogil:
    cdef uint64_t n = 0
    cdef Py_ssize_t i
    for i in range(start, end):
        n = n * 10 + <uint64_t>(s[i] - 48)
    return n


def plain_v1_acks(list subjects):
    """[[stream, consumer, stream seqs, delivery seqs, subjects], ...] or None: see the
    module."""
    cdef dict groups = {}
    cdef list out = [], group = None
    cdef Py_ssize_t n, i, count
    cdef Py_ssize_t dots[9]
    cdef const char* s
    cdef const char* last = NULL     # the previous ack's subject: its group is `group`
    cdef Py_ssize_t last_key_end = 0
    cdef uint64_t sseq
    cdef object subject, key
    for subject in subjects:
        if type(subject) is not str or not PyUnicode_IS_ASCII(subject):
            return None
        s = PyUnicode_AsUTF8AndSize(subject, &n)
        if n < 8 or s[0] != 36 or s[1] != 74 or s[2] != 83 or s[3] != 46 \
                or s[4] != 65 or s[5] != 67 or s[6] != 75 or s[7] != 46:   # "$JS.ACK."
            return None
        # the ends of tokens 1..8 (0-based: the dots after tokens 0..7), then the end
        count = 0
        for i in range(n):
            if s[i] == 46:
                if count == 8:
                    return None             # more than 9 tokens
                dots[count] = i
                count += 1
        if count != 8:
            return None
        dots[8] = n
        # tokens: 2 stream, 3 consumer, 4 delivered, 5 sseq, 6 dseq, 7 ts, 8 pending
        if not (_digits(s, dots[3] + 1, dots[4], 18) and _digits(s, dots[4] + 1, dots[5], 18)
                and _digits(s, dots[5] + 1, dots[6], 18) and _digits(s, dots[6] + 1, dots[7], 0)
                and _digits(s, dots[7] + 1, dots[8], 0)):
            return None
        sseq = _value(s, dots[4] + 1, dots[5])
        if sseq == 0:
            return None
        # (acks come in runs for one consumer: the previous one's group, when the stream
        # and consumer tokens are the same bytes)
        if not (last != NULL and dots[3] == last_key_end
                and memcmp(s + 8, last + 8, dots[3] - 8) == 0):
            key = subject[8:dots[3]]
            group = groups.get(key)
            if group is None:
                group = [subject[8:dots[2]], subject[dots[2] + 1:dots[3]], [], [], []]
                groups[key] = group
                out.append(group)
            last_key_end = dots[3]
        last = s                     # (alive as long as `subjects` holds its subject)
        (<list>group[2]).append(sseq)
        (<list>group[3]).append(_value(s, dots[5] + 1, dots[6]))
        (<list>group[4]).append(subject)
    return out
