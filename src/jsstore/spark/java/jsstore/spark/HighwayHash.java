/*
 * HighwayHash-64 with a 32-byte key: the keyed hash nats-server (and jsstore) put after every
 * message record, in meta.sum files and at the end of index.db. Same algorithm and outputs as
 * csrc/highwayhash.c: input in 32-byte packets of four little-endian u64 lanes, a final partial
 * packet folded in with a length-dependent mix, four permute rounds at the end.
 *
 * The state (v0, v1, mul0, mul1: four lanes each) is held in sixteen local longs so the JIT
 * keeps it in registers; each step of the loop mixes one packet: an input packet, the final
 * partial packet, or one of the four permuted v0s of the finish.
 */
package jsstore.spark;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

final class HighwayHash {
    private static final VarHandle LE64 =
        MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long MUL0_0 = 0xdbe6d5d5fe4cce2fL;
    private static final long MUL0_1 = 0xa4093822299f31d0L;
    private static final long MUL0_2 = 0x13198a2e03707344L;
    private static final long MUL0_3 = 0x243f6a8885a308d3L;
    private static final long MUL1_0 = 0x3bd39e10cb0ef593L;
    private static final long MUL1_1 = 0xc0acf169b5f18a8cL;
    private static final long MUL1_2 = 0xbe5466cf34e90c6cL;
    private static final long MUL1_3 = 0x452821e638d01377L;

    private HighwayHash() {
    }

    /** HighwayHash-64 of data[off, off+len) under a 32-byte key. */
    static long hash64(byte[] key32, byte[] data, int off, int len) {
        if (key32 == null || key32.length != 32) {
            throw new IllegalArgumentException("HighwayHash key must be 32 bytes");
        }
        if (off < 0 || len < 0 || off > data.length - len) {
            throw new IndexOutOfBoundsException("range " + off + "+" + len + " of " + data.length);
        }
        final long k0 = le64(key32, 0);
        final long k1 = le64(key32, 8);
        final long k2 = le64(key32, 16);
        final long k3 = le64(key32, 24);
        long m00 = MUL0_0;
        long m01 = MUL0_1;
        long m02 = MUL0_2;
        long m03 = MUL0_3;
        long m10 = MUL1_0;
        long m11 = MUL1_1;
        long m12 = MUL1_2;
        long m13 = MUL1_3;
        long v00 = m00 ^ k0;
        long v01 = m01 ^ k1;
        long v02 = m02 ^ k2;
        long v03 = m03 ^ k3;
        long v10 = m10 ^ swapHalves(k0);
        long v11 = m11 ^ swapHalves(k1);
        long v12 = m12 ^ swapHalves(k2);
        long v13 = m13 ^ swapHalves(k3);
        final int end = off + len;
        int pos = off;
        boolean tailDone = false;
        int rounds = 0;
        while (true) {
            long p0;
            long p1;
            long p2;
            long p3;
            if (end - pos >= 32) {
                p0 = le64(data, pos);
                p1 = le64(data, pos + 8);
                p2 = le64(data, pos + 16);
                p3 = le64(data, pos + 24);
                pos += 32;
            } else if (!tailDone) {
                tailDone = true;
                final int length = end - pos;
                if (length == 0) {
                    continue;
                }
                final long lengthWord = ((long) length << 32) + length;
                v00 += lengthWord;
                v01 += lengthWord;
                v02 += lengthWord;
                v03 += lengthWord;
                v10 = rotateHalves(v10, length);
                v11 = rotateHalves(v11, length);
                v12 = rotateHalves(v12, length);
                v13 = rotateHalves(v13, length);
                final byte[] packet = remainderPacket(data, pos, length);
                p0 = le64(packet, 0);
                p1 = le64(packet, 8);
                p2 = le64(packet, 16);
                p3 = le64(packet, 24);
            } else if (rounds < 4) {
                rounds++;
                p0 = swapHalves(v02);
                p1 = swapHalves(v03);
                p2 = swapHalves(v00);
                p3 = swapHalves(v01);
            } else {
                return v00 + v10 + m00 + m10;
            }
            v10 += m00 + p0;
            m00 ^= (v10 & 0xffffffffL) * (v00 >>> 32);
            v00 += m10;
            m10 ^= (v00 & 0xffffffffL) * (v10 >>> 32);
            v11 += m01 + p1;
            m01 ^= (v11 & 0xffffffffL) * (v01 >>> 32);
            v01 += m11;
            m11 ^= (v01 & 0xffffffffL) * (v11 >>> 32);
            v12 += m02 + p2;
            m02 ^= (v12 & 0xffffffffL) * (v02 >>> 32);
            v02 += m12;
            m12 ^= (v02 & 0xffffffffL) * (v12 >>> 32);
            v13 += m03 + p3;
            m03 ^= (v13 & 0xffffffffL) * (v03 >>> 32);
            v03 += m13;
            m13 ^= (v03 & 0xffffffffL) * (v13 >>> 32);
            v00 += zipperEven(v10, v11);
            v01 += zipperOdd(v10, v11);
            v02 += zipperEven(v12, v13);
            v03 += zipperOdd(v12, v13);
            v10 += zipperEven(v00, v01);
            v11 += zipperOdd(v00, v01);
            v12 += zipperEven(v02, v03);
            v13 += zipperOdd(v02, v03);
        }
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

    /** The little-endian u64 at b[p] (bounds checked). */
    static long le64(byte[] b, int p) {
        return (long) LE64.get(b, p);
    }

    private static long swapHalves(long lane) {
        return (lane >>> 32) | (lane << 32);
    }

    private static long rotateHalves(long lane, int count) {
        int low = Integer.rotateLeft((int) lane, count);
        int high = Integer.rotateLeft((int) (lane >>> 32), count);
        return ((long) high << 32) | (low & 0xffffffffL);
    }

    // The packet that carries a final partial input of 1..31 bytes at data[pos]: its whole
    // 4-byte groups first, then either its last 4 bytes at packet offset 28 (length >= 16) or
    // up to 3 leftover bytes (first, middle, last) at offset 16; zeros else.
    private static byte[] remainderPacket(byte[] data, int pos, int length) {
        final byte[] packet = new byte[32];
        final int whole = length & ~3;
        final int leftover = length & 3;
        System.arraycopy(data, pos, packet, 0, whole);
        if ((length & 16) != 0) {
            System.arraycopy(data, pos + length - 4, packet, 28, 4);
        } else if (leftover != 0) {
            packet[16] = data[pos + whole];
            packet[17] = data[pos + whole + (leftover >> 1)];
            packet[18] = data[pos + length - 1];
        }
        return packet;
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
}
