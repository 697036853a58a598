package io.triggeronce.jobs.decode;

/**
 * What a landed line's bytes are, before any JSON is read: valid UTF-8 or not (and where
 * not, as Python's decoder says), blank or not (as Python's str.strip() has it), and how
 * deeply it nests (without recursing), as tests/reference/line_reader.py and depth.py find them.
 */
final class Bytes {
    private Bytes() {}

    /** The index of the first byte of the first sequence that is not UTF-8, or -1 when it all is. */
    static int firstInvalidUtf8(byte[] raw) {
        int i = 0;
        int n = raw.length;
        while (i < n) {
            int b = raw[i] & 0xFF;
            if (b < 0x80) {
                i++;
                continue;
            }
            int need;
            int low = 0x80;
            int high = 0xBF;
            if (b >= 0xC2 && b <= 0xDF) {
                need = 1;
            } else if (b == 0xE0) {
                need = 2;
                low = 0xA0;
            } else if (b == 0xED) {
                need = 2;
                high = 0x9F; // no surrogates
            } else if (b >= 0xE1 && b <= 0xEF) {
                need = 2;
            } else if (b == 0xF0) {
                need = 3;
                low = 0x90;
            } else if (b == 0xF4) {
                need = 3;
                high = 0x8F;
            } else if (b >= 0xF1 && b <= 0xF3) {
                need = 3;
            } else {
                return i;
            }
            if (i + 1 >= n) {
                return i;
            }
            int second = raw[i + 1] & 0xFF;
            if (second < low || second > high) {
                return i;
            }
            for (int k = 2; k <= need; k++) {
                if (i + k >= n) {
                    return i;
                }
                int next = raw[i + k] & 0xFF;
                if (next < 0x80 || next > 0xBF) {
                    return i;
                }
            }
            i += need + 1;
        }
        return -1;
    }

    /** Whether a character is one Python's str.strip() removes (str.isspace()). */
    static boolean isPythonSpace(int c) {
        return (c >= 0x09 && c <= 0x0D)
                || (c >= 0x1C && c <= 0x20)
                || c == 0x85
                || c == 0xA0
                || c == 0x1680
                || (c >= 0x2000 && c <= 0x200A)
                || c == 0x2028
                || c == 0x2029
                || c == 0x202F
                || c == 0x205F
                || c == 0x3000;
    }

    /** Whether the text (valid UTF-8, its byte order mark already off) holds only spaces. */
    static boolean isBlank(String text) {
        for (int i = 0; i < text.length(); i++) {
            if (!isPythonSpace(text.charAt(i))) {
                return false;
            }
        }
        return true;
    }

    /** How many `{` and `[` bytes the line holds, wherever they are. */
    static int openers(byte[] raw) {
        int count = 0;
        for (byte b : raw) {
            if (b == '{' || b == '[') {
                count++;
            }
        }
        return count;
    }

    /**
     * How deeply the line nests objects and arrays: brackets inside strings do not count,
     * where a string is what the regular expression "(?:[^"\\]|\\.)*" matches, leftmost
     * first (tests/reference/depth.py); a closing bracket never takes the depth below zero.
     */
    static int nestingDepth(byte[] raw) {
        int n = raw.length;
        int depth = 0;
        int deepest = 0;
        int i = 0;
        while (i < n) {
            byte b = raw[i];
            if (b == '"') {
                int end = closingQuote(raw, i);
                if (end >= 0) {
                    i = end + 1;
                    continue;
                }
            } else if (b == '[' || b == '{') {
                depth++;
                deepest = Math.max(deepest, depth);
            } else if (b == ']' || b == '}') {
                depth = Math.max(depth - 1, 0);
            }
            i++;
        }
        return deepest;
    }

    /** The closing quote of a string opened at `open`, or -1 when none closes it. */
    private static int closingQuote(byte[] raw, int open) {
        int j = open + 1;
        while (j < raw.length) {
            byte c = raw[j];
            if (c == '\\') {
                if (j + 1 >= raw.length) {
                    return -1;
                }
                j += 2;
            } else if (c == '"') {
                return j;
            } else {
                j++;
            }
        }
        return -1;
    }
}
