/*
 * HighwayHash-64 with a 32-byte key: the keyed hash nats-server (and jsstore) put after every
 * message record, in meta.sum files and at the end of index.db. Same algorithm and outputs as
 * csrc/highwayhash.c (portable path): input in 32-byte packets of four little-endian u64 lanes,
 * a final partial packet folded in with a length-dependent mix, four permute rounds at the end.
 */
package jsstore.spark;

final class HighwayHash {
    private static final long[] INIT_MUL0 = {
        0xdbe6d5d5fe4cce2fL, 0xa4093822299f31d0L, 0x13198a2e03707344L, 0x243f6a8885a308d3L};
    private static final long[] INIT_MUL1 = {
        0x3bd39e10cb0ef593L, 0xc0acf169b5f18a8cL, 0xbe5466cf34e90c6cL, 0x452821e638d01377L};

    private final long[] v0 = new long[4];
    private final long[] v1 = new long[4];
    private final long[] mul0 = new long[4];
    private final long[] mul1 = new long[4];
    private final long[] lanes = new long[4];

    private HighwayHash(byte[] key32) {
        if (key32 == null || key32.length != 32) {
            throw new IllegalArgumentException("HighwayHash key must be 32 bytes");
        }
        for (int i = 0; i < 4; i++) {
            long key = le64(key32, 8 * i);
            mul0[i] = INIT_MUL0[i];
            mul1[i] = INIT_MUL1[i];
            v0[i] = INIT_MUL0[i] ^ key;
            v1[i] = INIT_MUL1[i] ^ swapHalves(key);
        }
    }

    /** HighwayHash-64 of data[off, off+len) under a 32-byte key. */
    static long hash64(byte[] key32, byte[] data, int off, int len) {
        if (off < 0 || len < 0 || off > data.length - len) {
            throw new IndexOutOfBoundsException("range " + off + "+" + len + " of " + data.length);
        }
        HighwayHash h = new HighwayHash(key32);
        int end = off + len;
        int pos = off;
        for (; end - pos >= 32; pos += 32) {
            h.mixPacket(data, pos);
        }
        if (pos < end) {
            h.mixRemainder(data, pos, end - pos);
        }
        return h.finish();
    }

    /** The 8 bytes nats-server stores: hash64 in little-endian order. */
    static byte[] digest64(byte[] key32, byte[] data, int off, int len) {
        long value = hash64(key32, data, off, len);
        byte[] out = new byte[8];
        for (int i = 0; i < 8; i++) {
            out[i] = (byte) (value >>> (8 * i));
        }
        return out;
    }

    static long le64(byte[] b, int p) {
        return (b[p] & 0xffL) | (b[p + 1] & 0xffL) << 8 | (b[p + 2] & 0xffL) << 16
            | (b[p + 3] & 0xffL) << 24 | (b[p + 4] & 0xffL) << 32 | (b[p + 5] & 0xffL) << 40
            | (b[p + 6] & 0xffL) << 48 | (b[p + 7] & 0xffL) << 56;
    }

    private static long swapHalves(long lane) {
        return (lane >>> 32) | (lane << 32);
    }

    private static long rotateHalves(long lane, int count) {
        int low = Integer.rotateLeft((int) lane, count);
        int high = Integer.rotateLeft((int) (lane >>> 32), count);
        return ((long) high << 32) | (low & 0xffffffffL);
    }

    private void mixPacket(byte[] data, int pos) {
        lanes[0] = le64(data, pos);
        lanes[1] = le64(data, pos + 8);
        lanes[2] = le64(data, pos + 16);
        lanes[3] = le64(data, pos + 24);
        mix(lanes);
    }

    private void mix(long[] in) {
        for (int i = 0; i < 4; i++) {
            v1[i] += mul0[i] + in[i];
            mul0[i] ^= (v1[i] & 0xffffffffL) * (v0[i] >>> 32);
            v0[i] += mul1[i];
            mul1[i] ^= (v0[i] & 0xffffffffL) * (v1[i] >>> 32);
        }
        v0[0] += zipperEven(v1[0], v1[1]);
        v0[1] += zipperOdd(v1[0], v1[1]);
        v0[2] += zipperEven(v1[2], v1[3]);
        v0[3] += zipperOdd(v1[2], v1[3]);
        v1[0] += zipperEven(v0[0], v0[1]);
        v1[1] += zipperOdd(v0[0], v0[1]);
        v1[2] += zipperEven(v0[2], v0[3]);
        v1[3] += zipperOdd(v0[2], v0[3]);
    }

    // Byte shuffle of the 16 bytes (even, odd): destination byte k of the even result takes
    // source byte {3, 12, 2, 5, 14, 1, 15, 0}[k], of the odd result {11, 4, 10, 13, 9, 6, 8, 7}[k].
    private static long zipperEven(long even, long odd) {
        return (((even & 0x00000000ff000000L) | (odd & 0x000000ff00000000L)) >>> 24)
            | (((even & 0x0000ff0000000000L) | (odd & 0x00ff000000000000L)) >>> 16)
            | (even & 0x0000000000ff0000L)
            | ((even & 0x000000000000ff00L) << 32)
            | ((odd & 0xff00000000000000L) >>> 8)
            | (even << 56);
    }

    private static long zipperOdd(long even, long odd) {
        return (((odd & 0x00000000ff000000L) | (even & 0x000000ff00000000L)) >>> 24)
            | ((odd & 0x0000ff0000000000L) >>> 16)
            | (odd & 0x0000000000ff0000L)
            | ((odd & 0x000000000000ff00L) << 24)
            | ((even & 0x00ff000000000000L) >>> 8)
            | ((odd & 0x00000000000000ffL) << 48)
            | (even & 0xff00000000000000L);
    }

    // A final partial packet of 1..31 bytes: the whole 4-byte groups first, then either the last
    // 4 bytes at offset 28 (length >= 16) or up to 3 leftover bytes at offset 16.
    private void mixRemainder(byte[] data, int pos, int length) {
        long lengthWord = ((long) length << 32) + length;
        for (int i = 0; i < 4; i++) {
            v0[i] += lengthWord;
            v1[i] = rotateHalves(v1[i], length);
        }
        byte[] packet = new byte[32];
        int leftover = length & 3;
        int whole = length & ~3;
        System.arraycopy(data, pos, packet, 0, whole);
        if ((length & 16) != 0) {
            System.arraycopy(data, pos + length - 4, packet, 28, 4);
        } else if (leftover != 0) {
            packet[16] = data[pos + whole];
            packet[17] = data[pos + whole + (leftover >> 1)];
            packet[18] = data[pos + length - 1];
        }
        mixPacket(packet, 0);
    }

    private long finish() {
        for (int round = 0; round < 4; round++) {
            lanes[0] = swapHalves(v0[2]);
            lanes[1] = swapHalves(v0[3]);
            lanes[2] = swapHalves(v0[0]);
            lanes[3] = swapHalves(v0[1]);
            mix(lanes);
        }
        return v0[0] + v1[0] + mul0[0] + mul1[0];
    }
}
