# cython: language_level=3, boundscheck=False, wraparound=False
"""The plain publish run: socket bytes to stored records to PubAck frames in the core (see
plainpub.pxd)."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memchr, memcmp, memcpy

from jsstore._core.engine cimport BlockStore

CACHE_LIMIT = 4096      # subjects and replies remembered (then forgotten all at once)


cdef class _Target:
    """A stream the run may store into, as checked in the current run."""


cdef class _Subject:
    """A subject seen: its text and the stream it goes to."""


cdef class _Reply:
    """A reply subject seen: the subscription that takes its answers."""


cdef struct _Out:
    char* buf
    Py_ssize_t len
    Py_ssize_t cap


cdef int _reserve(_Out* out, Py_ssize_t more) except -1:
    cdef Py_ssize_t cap
    cdef char* grown
    if out.len + more <= out.cap:
        return 0
    cap = max(out.cap * 2, out.len + more, 4096)
    grown = <char*>PyMem_Realloc(out.buf, cap)
    if grown == NULL:
        raise MemoryError()
    out.buf = grown
    out.cap = cap
    return 0


cdef inline Py_ssize_t _digits(uint64_t n, char* to) noexcept:
    """n in decimal at `to`; returns how many characters."""
    cdef char tmp[24]
    cdef Py_ssize_t i = 0, j
    if n == 0:
        to[0] = 48
        return 1
    while n:
        tmp[i] = <char>(48 + n % 10)
        n //= 10
        i += 1
    for j in range(i):
        to[j] = tmp[i - 1 - j]
    return i


cdef inline Py_ssize_t _count_digits(uint64_t n) noexcept:
    cdef Py_ssize_t i = 1
    while n >= 10:
        n //= 10
        i += 1
    return i


cdef Py_ssize_t _size(const unsigned char* s, Py_ssize_t start, Py_ssize_t end) noexcept:
    """Decimal digits s[start:end] (at most 9 of them), -1 when not that."""
    cdef Py_ssize_t n = 0, i
    if end <= start or end - start > 9:
        return -1
    for i in range(start, end):
        if s[i] < 48 or s[i] > 57:
            return -1
        n = n * 10 + (s[i] - 48)
    return n


cdef inline Py_ssize_t _token_end(const unsigned char* s, Py_ssize_t i, Py_ssize_t end) noexcept:
    """Where the token at i ends (a space or end); -1 when it holds a tab or CR."""
    cdef unsigned char c
    while i < end:
        c = s[i]
        if c == 32:
            return i
        if c == 9 or c == 13 or c == 10:
            return -1
        i += 1
    return i


cdef inline bint _same(bytes raw, const unsigned char* s, Py_ssize_t start,
                      Py_ssize_t end) noexcept:
    return (PyBytes_GET_SIZE(raw) == end - start
            and memcmp(PyBytes_AS_STRING(raw), s + start, end - start) == 0)


cdef class PlainPublisher:
    """One client's plain publish runs (see plainpub.pxd)."""

    def __init__(self, subject_of, target_of, reply_of, replies_under, reply_ok):
        self.subject_of = subject_of
        self.target_of = target_of
        self.reply_of = reply_of
        self.replies_under = replies_under
        self.reply_ok = reply_ok
        self.subjects = {}
        self.replies = {}
        self.heads = {}
        self.targets = {}
        self.key = None
        self.epoch = 0

    cdef _Subject _subject(self, const unsigned char* s, Py_ssize_t start, Py_ssize_t end,
                           dict targets):
        cdef bytes raw = PyBytes_FromStringAndSize(<const char*>s + start, end - start)
        cdef object found = self.subjects.get(raw)
        cdef _Subject entry
        cdef _Target target
        if found is not None or raw in self.subjects:
            return <_Subject>found if found is not None else None
        if len(self.subjects) >= CACHE_LIMIT:
            self.subjects.clear()
            targets.clear()
        text = raw.decode("utf-8", "surrogateescape")
        stream = self.subject_of(text)
        if stream is None:
            self.subjects[raw] = None
            return None
        target = targets.get(stream)
        if target is None:
            target = _Target()
            target.stream = stream
            target.epoch = -1
            targets[stream] = target
        entry = _Subject()
        entry.raw = raw
        entry.text = text
        entry.target = target
        self.subjects[raw] = entry
        return entry

    cdef _Reply _reply(self, dict cache, object ask, const unsigned char* s,
                       Py_ssize_t start, Py_ssize_t end):
        """The cached answer of `ask` (reply_of or replies_under) for s[start:end]."""
        cdef bytes raw = PyBytes_FromStringAndSize(<const char*>s + start, end - start)
        cdef object found = cache.get(raw)
        cdef _Reply entry
        if found is not None or raw in cache:
            return <_Reply>found if found is not None else None
        if len(cache) >= CACHE_LIMIT:
            cache.clear()
        answer = ask(raw.decode("utf-8", "surrogateescape"))
        if answer is None:
            cache[raw] = None
            return None
        entry = _Reply()
        entry.raw = raw
        entry.sub, entry.sid_part = answer
        entry.epoch = -1
        cache[raw] = entry
        return entry

    cdef bint _check_target(self, _Target target) except -1:
        target.epoch = self.epoch
        answer = self.target_of(target.stream)
        target.ok = answer is not None and isinstance(answer[0], BlockStore)
        if target.ok:
            (target.store, target.ack_head, target.listeners, target.on_due, target.max_age,
             target.max_msg_size, target.reset_msg_id) = answer
        return target.ok

    def run(self, data, origin, key, Py_ssize_t max_payload, Py_ssize_t max_control_line):
        """Take the leading plain PUBs of `data` (see plainpub.pxd); returns (consumed,
        msgs, payload_bytes, answered, answered_bytes, failure): failure is an exception a
        listener raised (the run stopped after that message), else None."""
        cdef bytes buf = data if type(data) is bytes else bytes(data)
        cdef const unsigned char* s = <const unsigned char*>PyBytes_AS_STRING(buf)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(buf), pos = 0, eol, line_end, i, t1, t2, t3
        cdef Py_ssize_t subj_start, subj_end, reply_start, reply_end, size_start, size, body
        cdef Py_ssize_t msgs = 0, payload_bytes = 0, answered = 0, answered_bytes = 0
        cdef Py_ssize_t head_len, prefix_len, digits, length
        cdef const unsigned char* found
        cdef _Subject subject
        cdef _Target target
        cdef _Reply reply
        cdef _Subject last_subject = None    # the run's last subject and inbox: a publisher
        cdef _Reply last_head = None         # sends on the same ones again and again
        cdef BlockStore store
        cdef int64_t ts
        cdef uint64_t seq
        cdef _Out out
        cdef list used = []             # replies answered in this run
        cdef dict targets = self.targets
        cdef object failure = None
        if key != self.key:
            self.subjects.clear()
            self.replies.clear()
            self.heads.clear()
            self.targets.clear()
            self.key = key
        self.epoch += 1
        out.buf = NULL
        out.len = out.cap = 0
        try:
            while pos < n:
                # -- the frame: PUB <subject> [<reply>] <size>\r\n<payload>\r\n
                if n - pos < 4 or s[pos] != 80 or s[pos + 1] != 85 or s[pos + 2] != 66 \
                        or s[pos + 3] != 32:
                    break
                found = <const unsigned char*>memchr(s + pos, 10, n - pos)
                if found == NULL:
                    break
                eol = found - s
                if eol - pos > max_control_line or s[eol - 1] != 13:
                    break
                line_end = eol - 1
                subj_start = pos + 4
                t1 = _token_end(s, subj_start, line_end)
                if t1 <= subj_start or t1 >= line_end:
                    break
                t2 = _token_end(s, t1 + 1, line_end)
                if t2 <= t1 + 1:
                    break
                if t2 == line_end:
                    reply_start = reply_end = -1
                    size_start = t1 + 1
                else:
                    t3 = _token_end(s, t2 + 1, line_end)
                    if t3 != line_end or t3 <= t2 + 1:
                        break
                    reply_start, reply_end = t1 + 1, t2
                    size_start = t2 + 1
                subj_end = t1
                size = _size(s, size_start, line_end)
                if size < 0 or (max_payload >= 0 and size > max_payload):
                    break
                body = eol + 1
                if body + size + 2 > n or s[body + size] != 13 or s[body + size + 1] != 10:
                    break
                # -- may the core take it?
                if subj_end - subj_start >= 4 and s[subj_start] == 36 and s[subj_start + 1] == 74 \
                        and s[subj_start + 2] == 83 and s[subj_start + 3] == 46:
                    break       # $JS.: API requests, acks
                if last_subject is not None and _same(last_subject.raw, s, subj_start, subj_end):
                    subject = last_subject
                else:
                    subject = self._subject(s, subj_start, subj_end, targets)
                    if subject is None:
                        break
                    last_subject = subject
                target = subject.target
                if target.epoch != self.epoch and not self._check_target(target):
                    break
                if not target.ok:
                    break
                if 0 <= target.max_msg_size < size:
                    break
                reply = None
                if reply_start >= 0:
                    # an inbox first: the answers to <head>.<anything> may all go to one
                    # subscription (one lookup for a client's every request)
                    i = reply_end - 1
                    while i > reply_start and s[i] != 46:
                        i -= 1
                    if reply_start < i < reply_end - 1:
                        if last_head is not None and _same(last_head.raw, s, reply_start, i):
                            reply = last_head
                        else:
                            reply = self._reply(self.heads, self.replies_under, s,
                                                reply_start, i)
                            if reply is not None:
                                last_head = reply
                    if reply is None:
                        reply = self._reply(self.replies, self.reply_of, s, reply_start,
                                            reply_end)
                    if reply is None:
                        break
                    if reply.epoch != self.epoch:
                        reply.epoch = self.epoch
                        reply.ok = bool(self.reply_ok(reply.sub))
                        reply.count = 0
                    if not reply.ok:
                        break
                # -- stored as store_msg stores it; a store that raises declines it
                store = target.store
                seq = store.last_seq
                try:
                    store.c_check_writable()
                    ts = store.c_next_ts()
                    store.c_store(<const uint8_t*>s + subj_start, subj_end - subj_start,
                                  NULL, 0, False, <const uint8_t*>s + body, size,
                                  0, ts, True, True)
                except Exception as exc:
                    if store.last_seq != seq:
                        # stored, then something after it failed (a bug, or a write of
                        # the limits' removals): it is taken, unanswered, and reported
                        msgs += 1
                        payload_bytes += size
                        pos = body + size + 2
                        failure = exc
                    break       # else refused before storing: the Python path answers
                seq = store.last_seq
                store.c_after_store(ts, 0)
                msgs += 1
                payload_bytes += size
                pos = body + size + 2
                if target.reset_msg_id:
                    target.reset_msg_id = False
                    target.stream.last_msg_id = ""
                if target.on_due is not None and store.msgs == 1:
                    target.on_due(ts + target.max_age)
                if target.listeners:
                    if out.len:         # the answers so far go first, as in Python
                        origin.write(PyBytes_FromStringAndSize(out.buf, out.len))
                        out.len = 0
                    payload = PyBytes_FromStringAndSize(<const char*>s + body, size)
                    try:
                        for listener in target.listeners:
                            listener(target.stream, seq, subject.text, None, payload, ts)
                    except Exception as exc:
                        # (a bug: the caller logs it; the publish is stored, as on the
                        # Python path, and goes unanswered)
                        failure = exc
                        break
                if reply is None:
                    continue
                # -- MSG <reply> <sid> <len>\r\n<ack_head><seq>}\r\n
                head_len = PyBytes_GET_SIZE(target.ack_head)
                prefix_len = PyBytes_GET_SIZE(reply.sid_part)
                digits = _count_digits(seq)
                length = head_len + digits + 1
                _reserve(&out, 4 + (reply_end - reply_start) + prefix_len + 12 + length + 2)
                memcpy(out.buf + out.len, b"MSG ", 4)
                out.len += 4
                memcpy(out.buf + out.len, s + reply_start, reply_end - reply_start)
                out.len += reply_end - reply_start
                memcpy(out.buf + out.len, PyBytes_AS_STRING(reply.sid_part), prefix_len)
                out.len += prefix_len
                out.len += _digits(<uint64_t>length, out.buf + out.len)
                out.buf[out.len] = 13
                out.buf[out.len + 1] = 10
                out.len += 2
                memcpy(out.buf + out.len, PyBytes_AS_STRING(target.ack_head), head_len)
                out.len += head_len
                out.len += _digits(seq, out.buf + out.len)
                out.buf[out.len] = 125      # }
                out.buf[out.len + 1] = 13
                out.buf[out.len + 2] = 10
                out.len += 3
                if reply.count == 0:
                    used.append(reply)
                reply.count += 1
                answered += 1
                answered_bytes += length
            if out.len:
                origin.write(PyBytes_FromStringAndSize(out.buf, out.len))
        finally:
            PyMem_Free(out.buf)
            for reply in used:
                reply.sub.delivered += reply.count
                reply.count = 0
        return pos, msgs, payload_bytes, answered, answered_bytes, failure
