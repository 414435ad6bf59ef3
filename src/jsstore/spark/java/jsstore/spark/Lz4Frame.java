/*
 * Decoder of one LZ4 frame (the body of a jsstore LZ4 block file, as python-lz4's
 * lz4.frame.compress writes it: linked 64 KiB blocks, content size and content checksum).
 * lz4-java's LZ4FrameInputStream refuses linked blocks and its block decompressors cannot
 * see earlier blocks, so the frame and block formats are decoded here; lz4-java's XXH32
 * checks the descriptor, block and content checksums.
 *
 *   u32 LE magic 0x184D2204, FLG (version 01, B.Indep, B.Checksum, C.Size, C.Checksum, 0,
 *   DictID), BD (block max size code 4..7 in bits 6-4), [u64 content size], [u32 dict id],
 *   HC = (XXH32(FLG..) >> 8) & 0xff; blocks: u32 LE size (bit 31 = stored uncompressed,
 *   0 = end mark), data, [u32 XXH32 of the data]; after the end mark [u32 XXH32 of content].
 *   A block is LZ4 sequences: token (literal length << 4 | match length - 4, 15 = more
 *   bytes follow, each adding up to 255), literals, u16 LE offset, match.
 *
 * Every bound is checked; corrupt input gives an IOException. As in lz4 1.9's decoder (which
 * python-lz4 uses), a match offset of 0 writes zeros; its end-of-block rules (the last 5 bytes
 * are literals, ...) are not checked here: they depend on its buffers, and the checksums and
 * sizes catch damaged blocks.
 */
package jsstore.spark;

import java.io.IOException;
import java.util.Arrays;
import net.jpountz.xxhash.XXHash32;
import net.jpountz.xxhash.XXHashFactory;

final class Lz4Frame {
    private static final int MAGIC = 0x184D2204;
    private static final XXHash32 XXH32 = XXHashFactory.fastestInstance().hash32();

    private Lz4Frame() {
    }

    private static int le32(byte[] b, int p) {
        return (b[p] & 0xff) | (b[p + 1] & 0xff) << 8 | (b[p + 2] & 0xff) << 16
            | (b[p + 3] & 0xff) << 24;
    }

    private static IOException error(String detail, long at) {
        return new IOException("LZ4 block file: " + detail + " at byte " + at);
    }

    /**
     * Decode the frame that must fill src[off, off+len) exactly into dst[0, dstLen), which it
     * must fill exactly. Error offsets count from src[0].
     */
    static void decode(byte[] src, int off, int len, byte[] dst, int dstLen) throws IOException {
        final int end = off + len;
        int p = off;
        if (end - p < 7) {
            throw error("the LZ4 frame header is truncated", p);
        }
        if (le32(src, p) != MAGIC) {
            throw error("no LZ4 frame magic", p);
        }
        final int descriptor = p + 4;
        int flg = src[descriptor] & 0xff;
        int bd = src[descriptor + 1] & 0xff;
        if ((flg >>> 6) != 1 || (flg & 0x02) != 0 || (bd & 0x8f) != 0 || (bd >>> 4) < 4) {
            throw error("bad LZ4 frame descriptor", descriptor);
        }
        boolean independent = (flg & 0x20) != 0;
        boolean blockChecksum = (flg & 0x10) != 0;
        boolean hasSize = (flg & 0x08) != 0;
        boolean contentChecksum = (flg & 0x04) != 0;
        boolean hasDictId = (flg & 0x01) != 0;
        int blockMax = 1 << (8 + 2 * (bd >>> 4));
        p = descriptor + 2;
        long contentSize = -1;
        if (hasSize) {
            if (end - p < 9) {
                throw error("the LZ4 frame header is truncated", p);
            }
            contentSize = (le32(src, p) & 0xffffffffL) | (long) le32(src, p + 4) << 32;
            p += 8;
        }
        if (hasDictId) {
            // no dictionary is given: a match reaching before the frame's start fails below,
            // as in the reference decoder
            if (end - p < 5) {
                throw error("the LZ4 frame header is truncated", p);
            }
            p += 4;
        }
        if (end - p < 1) {
            throw error("the LZ4 frame header is truncated", p);
        }
        int hc = (XXH32.hash(src, descriptor, p - descriptor, 0) >>> 8) & 0xff;
        if ((src[p] & 0xff) != hc) {
            throw error("LZ4 frame header checksum mismatch", p);
        }
        p += 1;
        int d = 0;
        while (true) {
            if (end - p < 4) {
                throw error("the LZ4 frame ends before its end mark", p);
            }
            int word = le32(src, p);
            int blockStart = p;
            p += 4;
            if (word == 0) {
                break;
            }
            boolean stored = word < 0;
            int size = word & 0x7fffffff;
            if (size > blockMax) {
                throw error("LZ4 block of " + size + " bytes, over the frame's " + blockMax,
                            blockStart);
            }
            if (size > end - p || blockChecksum && size + 4 > end - p) {
                throw error("the LZ4 frame ends inside a block", blockStart);
            }
            if (blockChecksum && XXH32.hash(src, p, size, 0) != le32(src, p + size)) {
                throw error("LZ4 block checksum mismatch", blockStart);
            }
            int limit = (int) Math.min(dstLen, (long) d + blockMax);
            if (stored) {
                if (size > limit - d) {
                    throw error("the LZ4 frame decodes to more than " + dstLen + " bytes",
                                blockStart);
                }
                System.arraycopy(src, p, dst, d, size);
                d += size;
            } else {
                d = decodeBlock(src, p, p + size, dst, d, independent ? d : 0, limit, dstLen);
            }
            p += size + (blockChecksum ? 4 : 0);
        }
        if (contentChecksum) {
            if (end - p < 4) {
                throw error("the LZ4 frame ends inside its content checksum", p);
            }
            if (XXH32.hash(dst, 0, d, 0) != le32(src, p)) {
                throw error("LZ4 content checksum mismatch", p);
            }
            p += 4;
        }
        if (hasSize && contentSize != d) {
            throw error("the LZ4 frame decodes to " + d + " bytes, its header says "
                        + Long.toUnsignedString(contentSize), off);
        }
        if (p != end) {
            throw error((end - p) + " stray bytes after the LZ4 frame", p);
        }
        if (d != dstLen) {
            throw error("the LZ4 frame decodes to " + d + " bytes, the block header says "
                        + dstLen, off);
        }
    }

    // One LZ4 block src[s, end) written at dst[d, limit); matches may reach back to
    // windowStart. Returns the new output position.
    private static int decodeBlock(byte[] src, int s, int end, byte[] dst, int d, int windowStart,
                                   int limit, int dstLen) throws IOException {
        while (true) {
            if (s >= end) {
                throw error("LZ4 block ends without its last literals", s);
            }
            final int sequence = s;
            int token = src[s++] & 0xff;
            long literals = token >>> 4;
            if (literals == 15) {
                int b;
                do {
                    if (s >= end) {
                        throw error("LZ4 block ends inside a literal length", sequence);
                    }
                    b = src[s++] & 0xff;
                    literals += b;
                } while (b == 255 && literals < Integer.MAX_VALUE);
            }
            if (literals > end - s) {
                throw error("LZ4 block ends inside its literals", sequence);
            }
            if (literals > limit - d) {
                throw error("LZ4 block decodes past " + dstLen + " bytes", sequence);
            }
            System.arraycopy(src, s, dst, d, (int) literals);
            s += (int) literals;
            d += (int) literals;
            if (s == end) {
                return d;                      // the last sequence has no match
            }
            if (end - s < 2) {
                throw error("LZ4 block ends inside a match offset", sequence);
            }
            int offset = (src[s] & 0xff) | (src[s + 1] & 0xff) << 8;
            s += 2;
            long match = (token & 15) + 4L;
            if ((token & 15) == 15) {
                int b;
                do {
                    if (s >= end) {
                        throw error("LZ4 block ends inside a match length", sequence);
                    }
                    b = src[s++] & 0xff;
                    match += b;
                } while (b == 255 && match < Integer.MAX_VALUE);
            }
            if (offset > d - windowStart) {
                throw error("LZ4 match offset " + offset + " before the start of the data",
                            sequence);
            }
            if (match > limit - d) {
                throw error("LZ4 block decodes past " + dstLen + " bytes", sequence);
            }
            int from = d - offset;
            if (offset == 0) {
                // not valid LZ4, but the reference decoder (1.9.x, which python-lz4 uses)
                // accepts it and writes zeros; the content checksum decides, as there
                Arrays.fill(dst, d, d + (int) match, (byte) 0);
            } else if (offset >= match) {
                System.arraycopy(dst, from, dst, d, (int) match);
            } else {
                for (int i = 0; i < match; i++) {
                    dst[d + i] = dst[from + i];
                }
            }
            d += (int) match;
        }
    }
}
