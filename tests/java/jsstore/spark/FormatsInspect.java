/*
 * Test driver of the file-format classes (BlockBytes, S2, HighwayHash, IndexDb): reads commands
 * from stdin, one a line, and prints one line of JSON for each, so that a single JVM launch can
 * check many files against the Python implementation:
 *
 *   plain <path>                 {"len": N, "sha256": "<hex>"} of the plain block, or {"error"}
 *                                (plainSize + plainInto into a reused buffer must agree)
 *   highway <key-hex> <data-hex> [off len]
 *                                {"digest": "<hex>"}: HighwayHash.digest64 of the data, or of
 *                                data[off, off+len)
 *   index <stream> <path>        the decoded index.db (keys as decode_index's dict; subjects as
 *                                [subject, total, fblk, lblk]; lchk in hex) or {"error": ...}
 *
 * The path is the rest of the line after the command (and the stream name, which has no
 * spaces). Unsigned 64-bit values are printed unsigned, timestamps signed.
 */
package jsstore.spark;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;

public final class FormatsInspect {
    private FormatsInspect() {
    }

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in,
                                                                     StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            out.println(run(line));
            out.flush();
        }
    }

    static String run(String line) {
        String[] parts = line.split(" ", 2);
        String rest = parts.length > 1 ? parts[1] : "";
        try {
            switch (parts[0]) {
                case "plain":
                    return plain(rest);
                case "highway": {
                    String[] hex = rest.split(" ", -1);
                    byte[] key = HexFormat.of().parseHex(hex[0]);
                    byte[] data = HexFormat.of().parseHex(hex.length > 1 ? hex[1] : "");
                    int off = hex.length > 3 ? Integer.parseInt(hex[2]) : 0;
                    int len = hex.length > 3 ? Integer.parseInt(hex[3]) : data.length;
                    byte[] digest = HighwayHash.digest64(key, data, off, len);
                    return "{\"digest\": \"" + HexFormat.of().formatHex(digest) + "\"}";
                }
                case "index": {
                    String[] args = rest.split(" ", 2);
                    byte[] buf = Files.readAllBytes(Path.of(args[1]));
                    return index(IndexDb.decode(args[0], buf));
                }
                default:
                    return error("unknown command " + parts[0]);
            }
        } catch (IOException | RuntimeException exc) {
            return error(exc.getClass().getSimpleName() + ": " + exc.getMessage());
        }
    }

    // plainInto's buffer, reused from command to command (so it holds the last block's bytes)
    private static byte[] reused = new byte[0];

    private static String plain(String path) throws IOException {
        byte[] data = BlockBytes.readPlain(Path.of(path));
        // the same bytes through plainSize and plainInto, into a longer buffer already used
        byte[] raw = Files.readAllBytes(Path.of(path));
        int size = BlockBytes.plainSize(raw);
        if (reused.length < size + 64) {
            byte[] grown = new byte[size + 64 + size / 2];
            Arrays.fill(grown, (byte) 0x5a);
            System.arraycopy(reused, 0, grown, 0, reused.length);
            reused = grown;
        }
        if (BlockBytes.plainInto(raw, reused) != size || size != data.length
            || !Arrays.equals(reused, 0, size, data, 0, size)) {
            return error("plainSize/plainInto differ from readPlain");
        }
        try {
            byte[] sha = MessageDigest.getInstance("SHA-256").digest(data);
            return "{\"len\": " + data.length + ", \"sha256\": \""
                + HexFormat.of().formatHex(sha) + "\"}";
        } catch (NoSuchAlgorithmException exc) {
            throw new IllegalStateException(exc);
        }
    }

    private static String index(IndexDb db) {
        StringBuilder sb = new StringBuilder("{");
        sb.append("\"msgs\": ").append(u(db.msgs));
        sb.append(", \"bytes\": ").append(u(db.bytes));
        sb.append(", \"first_seq\": ").append(u(db.firstSeq));
        sb.append(", \"first_ts\": ").append(db.firstTs);
        sb.append(", \"last_seq\": ").append(u(db.lastSeq));
        sb.append(", \"last_ts\": ").append(db.lastTs);
        sb.append(", \"subjects\": [");
        for (int i = 0; i < db.subjects.size(); i++) {
            IndexDb.Subject s = db.subjects.get(i);
            sb.append(i == 0 ? "" : ", ").append('[');
            quote(sb, s.subject());
            sb.append(", ").append(u(s.total())).append(", ").append(u(s.firstBlock()))
                .append(", ").append(u(s.lastBlock())).append(']');
        }
        sb.append("], \"blocks\": [");
        for (int i = 0; i < db.blocks.size(); i++) {
            IndexDb.Block b = db.blocks.get(i);
            sb.append(i == 0 ? "" : ", ");
            sb.append("{\"index\": ").append(u(b.index()));
            sb.append(", \"bytes\": ").append(u(b.bytes()));
            sb.append(", \"first_seq\": ").append(u(b.firstSeq()));
            sb.append(", \"first_ts\": ").append(b.firstTs());
            sb.append(", \"last_seq\": ").append(u(b.lastSeq()));
            sb.append(", \"last_ts\": ").append(b.lastTs());
            sb.append(", \"deleted\": [");
            long[] deleted = b.deleted();
            for (int k = 0; k < deleted.length; k++) {
                sb.append(k == 0 ? "" : ", ").append(u(deleted[k]));
            }
            sb.append("]}");
        }
        sb.append("], \"last_index\": ").append(u(db.lastIndex));
        sb.append(", \"lchk\": \"").append(HexFormat.of().formatHex(db.lchk)).append("\"}");
        return sb.toString();
    }

    private static String u(long value) {
        return Long.toUnsignedString(value);
    }

    private static String error(String message) {
        StringBuilder sb = new StringBuilder("{\"error\": ");
        quote(sb, message == null ? "" : message);
        return sb.append('}').toString();
    }

    private static void quote(StringBuilder sb, String text) {
        sb.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        sb.append('"');
    }
}
