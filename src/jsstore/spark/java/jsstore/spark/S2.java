/*
 * Decoder of the S2 stream format nats-server compresses sealed blocks with (klauspost/s2):
 * Snappy's framing format whose identifier may read "S2sTwO" as well as "sNaPpY", with blocks
 * that may use S2's repeat-offset copies. Accepts what csrc/s2.c accepts:
 *
 *   chunk = 1 byte type, 3 bytes LE length, body
 *   0xff identifier ("sNaPpY": chunks decode to <= 64 KiB, "S2sTwO": <= 4 MiB), must come first
 *   0x00 compressed (masked CRC-32C of the decoded bytes, then one block), 0x01 uncompressed
 *   (masked CRC-32C, then the bytes), 0x80-0xfe skipped, 0x02-0x7f an error.
 *   block = uvarint decoded length, then literal / copy elements (tag & 3); a copy1 with offset
 *   0 repeats the block's previous offset, with extended length codes 5, 6, 7.
 *
 * Every read and write is bounds checked: corrupt input gives an IOException with the byte
 * offset of the bad chunk or element, never an exception of another kind.
 */
package jsstore.spark;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

final class S2 {
    private static final VarHandle LE64 =
        MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    static final int SNAPPY_MAX_BLOCK = 65536;
    static final int S2_MAX_BLOCK = 4 << 20;
    private static final byte[] ID_SNAPPY = {'s', 'N', 'a', 'P', 'p', 'Y'};
    private static final byte[] ID_S2 = {'S', '2', 's', 'T', 'w', 'O'};

    private S2() {
    }

    /** Whether src[off..] starts with a stream identifier chunk. */
    static boolean startsWithIdentifier(byte[] src, int off, int len) {
        if (len < 10 || (src[off] & 0xff) != 0xff || src[off + 1] != 6 || src[off + 2] != 0
            || src[off + 3] != 0) {
            return false;
        }
        return matches(src, off + 4, ID_SNAPPY) || matches(src, off + 4, ID_S2);
    }

    /** The decoded size of the stream src[off, off+len), after checking its framing. */
    static long streamDecodedLen(byte[] src, int off, int len, String what) throws IOException {
        return walk(src, off, len, null, 0, what);
    }

    /** Decode the stream src[off, off+len), which must decode to exactly dstLen bytes, into
     * dst[0, dstLen), checking every chunk's CRC. Error offsets are counted from src[0]. */
    static void decodeStream(byte[] src, int off, int len, byte[] dst, int dstLen, String what)
            throws IOException {
        if (dstLen < 0 || dstLen > dst.length) {
            throw new IllegalArgumentException("dstLen " + dstLen + " of " + dst.length);
        }
        walk(src, off, len, dst, dstLen, what);
    }

    private static boolean matches(byte[] src, int at, byte[] text) {
        for (int i = 0; i < text.length; i++) {
            if (src[at + i] != text[i]) {
                return false;
            }
        }
        return true;
    }

    private static int le16(byte[] b, int p) {
        return (b[p] & 0xff) | (b[p + 1] & 0xff) << 8;
    }

    private static int le24(byte[] b, int p) {
        return le16(b, p) | (b[p + 2] & 0xff) << 16;
    }

    private static long le32(byte[] b, int p) {
        return le24(b, p) | (b[p + 3] & 0xffL) << 24;
    }

    static int maskedCrc(byte[] data, int off, int len) {
        CRC32C crc = new CRC32C();
        crc.update(data, off, len);
        int c = (int) crc.getValue();
        return ((c >>> 15) | (c << 17)) + 0xa282ead8;
    }

    private static IOException error(String what, String detail, long at) {
        return new IOException(what + ": " + detail + " at byte " + at);
    }

    // Walk the chunks; with dst == null only check the framing and sum the decoded sizes,
    // else also decode into dst[0, dstLen) (which the stream must fill exactly) and verify
    // each CRC.
    private static long walk(byte[] src, int off, int len, byte[] dst, int dstLen, String what)
            throws IOException {
        if (off < 0 || len < 0 || off > src.length - len) {
            throw new IOException(what + ": range " + off + "+" + len + " outside the input");
        }
        final int end = off + len;
        int pos = off;
        long out = 0;
        boolean seenIdentifier = false;
        int maxBlock = S2_MAX_BLOCK;
        while (pos < end) {
            final int chunkStart = pos;
            if (end - pos < 4) {
                throw error(what, "data ends inside a chunk header", chunkStart);
            }
            int type = src[pos] & 0xff;
            int chunkLen = le24(src, pos + 1);
            pos += 4;
            if (chunkLen > end - pos) {
                throw error(what, "data ends inside a chunk", chunkStart);
            }
            if (!seenIdentifier && type != 0xff) {
                throw error(what, "stream does not start with a stream identifier chunk",
                            chunkStart);
            }
            if (type == 0xff) {
                if (chunkLen != 6) {
                    throw error(what, "stream identifier chunk of length " + chunkLen, chunkStart);
                }
                if (matches(src, pos, ID_SNAPPY)) {
                    maxBlock = SNAPPY_MAX_BLOCK;
                } else if (matches(src, pos, ID_S2)) {
                    maxBlock = S2_MAX_BLOCK;
                } else {
                    throw error(what, "stream identifier is not \"sNaPpY\" or \"S2sTwO\"",
                                chunkStart);
                }
                seenIdentifier = true;
            } else if (type == 0x00 || type == 0x01) {
                if (chunkLen < 4) {
                    throw error(what, "data chunk shorter than its 4-byte checksum", chunkStart);
                }
                int wantCrc = (int) le32(src, pos);
                int payload = pos + 4;
                int payloadLen = chunkLen - 4;
                long n;
                if (type == 0x00) {
                    n = blockDecodedLen(src, payload, payload + payloadLen, what);
                } else {
                    n = payloadLen;
                }
                if (n > maxBlock) {
                    throw error(what, "chunk decodes to " + n + " bytes, more than the maximum "
                                + "block size " + maxBlock, chunkStart);
                }
                if (dst != null) {
                    if (n > dstLen - out) {
                        throw error(what, "stream decodes to more than the expected "
                                    + dstLen + " bytes", chunkStart);
                    }
                    int target = (int) out;
                    if (type == 0x00) {
                        decodeBlock(src, payload, payload + payloadLen, dst, target, (int) n, what);
                    } else {
                        System.arraycopy(src, payload, dst, target, (int) n);
                    }
                    if (maskedCrc(dst, target, (int) n) != wantCrc) {
                        throw error(what, "CRC-32C mismatch", chunkStart);
                    }
                }
                out += n;
            } else if (type < 0x80) {
                throw error(what, "reserved unskippable chunk type 0x"
                            + Integer.toHexString(type), chunkStart);
            }
            // 0x80-0xfe: padding, S2's index and other skippable chunks
            pos += chunkLen;
        }
        if (dst != null && out != dstLen) {
            throw error(what, "stream decodes to " + out + " bytes, expected " + dstLen, end);
        }
        return out;
    }

    // A Go uvarint at src[pos, end): its value, and the position after it via posOut[0].
    // Returns -1 when it is truncated or over 64 bits.
    static long uvarint(byte[] src, int pos, int end, int[] posOut) {
        long value = 0;
        int shift = 0;
        for (int k = 0; k < 10; k++) {
            if (pos >= end) {
                return -1;
            }
            int b = src[pos++] & 0xff;
            if (b < 0x80) {
                if (k == 9 && b > 1) {
                    return -1;
                }
                posOut[0] = pos;
                return value | ((long) b << shift);
            }
            value |= (long) (b & 0x7f) << shift;
            shift += 7;
        }
        return -1;
    }

    private static long blockDecodedLen(byte[] src, int start, int end, String what)
            throws IOException {
        int[] after = new int[1];
        long n = uvarint(src, start, end, after);
        if (after[0] == 0 || n < 0 || n > 0xffffffffL) {
            throw error(what, "invalid block length preamble", start);
        }
        return n;
    }

    // Decode one block src[start, end) (preamble included) into dst[d0, d0+n).
    private static void decodeBlock(byte[] src, int start, int end, byte[] dst, int d0, int n,
                                    String what) throws IOException {
        int[] after = new int[1];
        long want = uvarint(src, start, end, after);
        if (after[0] == 0 || want != n) {
            throw error(what, "invalid block length preamble", start);
        }
        int s = after[0];
        final int dEnd = d0 + n;
        int d = d0;
        int offset = 0;     // last copy offset, for S2 repeats; 0 = none yet
        while (s < end) {
            final int elem = s;
            final int tag = src[s] & 0xff;
            long length;
            switch (tag & 3) {
                case 0: {
                    long x = tag >>> 2;
                    if (x < 60) {
                        s += 1;
                    } else {
                        int extra = (int) x - 59;
                        if (end - s < 1 + extra) {
                            throw error(what, "data ends inside a literal", elem);
                        }
                        x = 0;
                        for (int i = 0; i < extra; i++) {
                            x |= (src[s + 1 + i] & 0xffL) << (8 * i);
                        }
                        s += 1 + extra;
                    }
                    length = x + 1;
                    if (length > dEnd - d) {
                        throw error(what, "element writes past the block's decoded length", elem);
                    }
                    if (length > end - s) {
                        throw error(what, "data ends inside a literal", elem);
                    }
                    if (length <= 16 && end - s >= 16 && dEnd - d >= 16) {
                        // short literal with room to spare: two 8-byte moves
                        LE64.set(dst, d, (long) LE64.get(src, s));
                        LE64.set(dst, d + 8, (long) LE64.get(src, s + 8));
                    } else {
                        System.arraycopy(src, s, dst, d, (int) length);
                    }
                    d += (int) length;
                    s += (int) length;
                    continue;
                }
                case 1: {
                    if (end - s < 2) {
                        throw error(what, "data ends inside a copy", elem);
                    }
                    length = (tag >>> 2) & 7;
                    int tagOffset = ((tag & 0xe0) << 3) | (src[s + 1] & 0xff);
                    s += 2;
                    if (tagOffset == 0) {
                        if (length == 5) {
                            if (end - s < 1) {
                                throw error(what, "data ends inside a repeat", elem);
                            }
                            length = (src[s] & 0xff) + 4;
                            s += 1;
                        } else if (length == 6) {
                            if (end - s < 2) {
                                throw error(what, "data ends inside a repeat", elem);
                            }
                            length = le16(src, s) + (1 << 8);
                            s += 2;
                        } else if (length == 7) {
                            if (end - s < 3) {
                                throw error(what, "data ends inside a repeat", elem);
                            }
                            length = le24(src, s) + (1 << 16);
                            s += 3;
                        }
                    } else {
                        offset = tagOffset;
                    }
                    length += 4;
                    break;
                }
                case 2:
                    if (end - s < 3) {
                        throw error(what, "data ends inside a copy", elem);
                    }
                    length = 1 + (tag >>> 2);
                    offset = le16(src, s + 1);
                    s += 3;
                    break;
                default: {
                    if (end - s < 5) {
                        throw error(what, "data ends inside a copy", elem);
                    }
                    length = 1 + (tag >>> 2);
                    long wide = le32(src, s + 1);
                    offset = wide > Integer.MAX_VALUE ? Integer.MAX_VALUE : (int) wide;
                    s += 5;
                    break;
                }
            }
            if (offset == 0 || offset > d - d0) {
                throw error(what, "copy offset is zero or before the start of the block", elem);
            }
            if (length > dEnd - d) {
                throw error(what, "element writes past the block's decoded length", elem);
            }
            if (length <= 16 && offset >= 8 && dEnd - d >= 16) {
                // short copy whose source ends 8+ bytes back: two 8-byte moves, in order
                LE64.set(dst, d, (long) LE64.get(dst, d - offset));
                LE64.set(dst, d + 8, (long) LE64.get(dst, d - offset + 8));
            } else {
                copyBack(dst, d, offset, (int) length);
            }
            d += (int) length;
        }
        if (d != dEnd) {
            throw error(what, "block ends before its decoded length", end);
        }
    }

    // Copy length bytes starting offset bytes back; overlapping copies repeat the pattern.
    private static void copyBack(byte[] buf, int at, int offset, int length) {
        int from = at - offset;
        if (offset >= length) {
            System.arraycopy(buf, from, buf, at, length);
            return;
        }
        int done = 0;
        while (done < length) {
            int k = Math.min(offset + done, length - done);
            System.arraycopy(buf, from, buf, at + done, k);
            done += k;
        }
    }
}
