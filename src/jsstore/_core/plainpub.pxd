# The plain publish run: a client's leading run of plain PUBs, from socket bytes to stored
# records to PubAck frames, without a Python object per message.
#
# PlainPublisher.run(data, origin, key, max_payload, max_control_line) reads PUB frames from
# the start of `data` for as long as each is one the core may take, and returns
# (consumed, msgs, payload_bytes, answered, answered_bytes, failure); the caller hands
# data[consumed:] to the protocol parser as before.  A frame is taken when:
#
#   - it is spelled the plain way: "PUB <subject> [<reply>] <size>\r\n<payload>\r\n", upper
#     case, single spaces, within max_control_line and max_payload (anything else -- HPUB,
#     other operations, unusual spelling, a frame not complete yet -- ends the run and the
#     parser decides, exactly as it would have);
#   - subject(subject) names a stream for it (the Python side declines subjects under $JS.,
#     subjects someone subscribes to, subjects no stream captures), and target(stream),
#     asked once per run and stream, says the stream does nothing with a message beyond
#     storing it (its answer: (store, ack_head, listeners, on_due, max_age, max_msg_size,
#     reset_msg_id) or None);
#   - the payload is within the stream's max_msg_size, and its reply (if any) is answered by
#     the publisher's own single subscription: replies_under(head) says so for every
#     <head>.<token> (an inbox subscription <head>.*), reply_of(reply) for one reply; both
#     answer (sub, b" <sid> "), and reply_ok(sub) checks the subscription again per run.
#
# Then it is stored as BlockStore.store_msg stores it (the store's limits, discard policy
# and per-subject limits in the core; a store that raises ends the run before that message,
# which the Python path then answers as it would), the stream's listeners are told, and
# "MSG <reply> <sid> <len>\r\n<ack_head><seq>}\r\n" goes into origin.out.  The answers and
# every listener call keep the order the Python path has (answers so far are put into
# origin.out before a listener runs).  The caches of subject and reply lookups hold while
# `key` stays the same (the caller's versions of what they depend on).

from libc.stdint cimport int64_t

from jsstore._core.engine cimport BlockStore


cdef class _Target:
    cdef object stream
    cdef BlockStore store
    cdef bytes ack_head             # b'{"stream":"S"[,"domain":"D"],"seq":'
    cdef list listeners             # the stream's own list
    cdef object on_due              # None unless the stream has a max_age
    cdef int64_t max_age
    cdef int64_t max_msg_size
    cdef bint reset_msg_id          # the first store of a run sets last_msg_id = ""
    cdef bint ok
    cdef Py_ssize_t epoch           # the run it was checked in


cdef class _Subject:
    cdef bytes raw
    cdef str text
    cdef _Target target


cdef class _Reply:
    cdef bytes raw                  # the reply or inbox head it stands for
    cdef object sub
    cdef bytes sid_part             # b" <sid> "
    cdef bint ok
    cdef Py_ssize_t epoch
    cdef Py_ssize_t count           # answers of this run (added to sub.delivered after)


cdef class PlainPublisher:
    cdef object subject_of        # subject str -> stream or None
    cdef object target_of         # stream -> target tuple or None (see above)
    cdef object reply_of          # reply str -> (sub, b" <sid> ") or None
    cdef object replies_under     # head str -> (sub, b" <sid> ") or None: <head>.* inboxes
    cdef object reply_ok          # sub -> whether it still takes the answer directly
    cdef dict subjects            # subject bytes -> _Target or None
    cdef dict replies             # reply bytes -> _Reply or None
    cdef dict heads               # reply head bytes -> _Reply or None
    cdef dict targets             # stream -> its _Target
    cdef object key               # what the caches hold for
    cdef Py_ssize_t epoch         # runs so far: a target / reply is checked once per run

    cdef _Subject _subject(self, const unsigned char* s, Py_ssize_t start, Py_ssize_t end,
                           dict targets)
    cdef _Reply _reply(self, dict cache, object ask, const unsigned char* s,
                       Py_ssize_t start, Py_ssize_t end)
    cdef bint _check_target(self, _Target target) except -1
