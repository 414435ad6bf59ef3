/*
 * The message record: the unit of every block file (nats-server's file store layout).
 * All integers are little-endian.
 *
 *   off   size  field
 *   0     4     record_len  u32: total length including this field and the trailing hash.
 *                           Bit 31 (RECORD_HDR_BIT) set => the record has a header section.
 *   4     8     seq         u64: bit 63 (SEQ_ERASE_BIT) erased / skip placeholder,
 *                                bit 62 (SEQ_TOMB_BIT) tombstone for a removed message.
 *   12    8     ts          i64: Unix nanoseconds.
 *   20    2     subj_len    u16
 *   22    n     subject
 *   --    4     hdr_len     u32, only when RECORD_HDR_BIT is set
 *   --    h     headers     the NATS header block, only when RECORD_HDR_BIT is set
 *   --    m     payload
 *   len-8 8     hash        HighwayHash-64 (key = SHA-256("<stream>-<block index>")) over
 *                           bytes [4, 20) (seq with its flag bits, ts), the subject, the header
 *                           bytes (not hdr_len) and the payload; stored as the LE u64 value.
 *
 * record_len = 22 + n + m + 8 without headers, 22 + n + 4 + h + m + 8 with headers.
 * A skip or tombstone record has no subject and no data: record_len = 30.
 * An erased record keeps its length, sets SEQ_ERASE_BIT, ts = 0, subj_len = 0 and fills the
 * rest with random bytes under a recomputed hash.
 */
#ifndef JSSTORE_RECORD_H
#define JSSTORE_RECORD_H

#include <stdint.h>
#include "le_bytes.h"

#define RECORD_HDR_SIZE      22u            /* record_len + seq + ts + subj_len */
#define RECORD_HASH_SIZE     8u
#define RECORD_EMPTY_LEN     30u            /* skip / tombstone record */
#define RECORD_HDR_BIT       0x80000000u    /* in record_len */
#define RECORD_LEN_MASK      0x7FFFFFFFu
#define RECORD_MAX_LEN       (32u * 1024u * 1024u)   /* nats rlBadThresh */
#define SEQ_ERASE_BIT        0x8000000000000000ull
#define SEQ_TOMB_BIT         0x4000000000000000ull
#define SEQ_MASK             0x3FFFFFFFFFFFFFFFull
#define RECORD_OFF_SEQ       4u
#define RECORD_OFF_TS        12u
#define RECORD_OFF_SUBJ_LEN  20u
#define RECORD_OFF_SUBJ      22u

#define rec_get_u16 le_load16
#define rec_get_u32 le_load32
#define rec_get_u64 le_load64
#define rec_put_u16 le_store16
#define rec_put_u32 le_store32
#define rec_put_u64 le_store64

/* Length of a record with these parts. */
static inline uint64_t rec_size(size_t subj_len, size_t hdr_len, size_t msg_len, int has_hdr) {
    return (uint64_t)RECORD_HDR_SIZE + subj_len + (has_hdr ? 4u + hdr_len : 0u) + msg_len + RECORD_HASH_SIZE;
}

#endif
