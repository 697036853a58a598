package io.triggeronce.jobs.decode;

import java.nio.charset.StandardCharsets;

/**
 * A strict JSON reader over the bytes of one line (valid UTF-8): RFC 8259 and nothing more
 * (no NaN or Infinity, no comments, no leading zeros, no control characters in strings, no
 * lone UTF-16 surrogate escapes), the syntax msgspec reads. It reads one token at a time and
 * says where each value starts and ends, so that a caller can keep a value as landed.
 * A syntax error is a {@link Malformed}, with what and where.
 */
final class JsonReader {
    /** Thrown at the first byte that is not JSON; no stack trace (a line's verdict, not a bug). */
    static final class Malformed extends Exception {
        Malformed(String message) {
            super(message, null, false, false);
        }
    }

    final byte[] bytes;
    final int end;
    int pos;

    JsonReader(byte[] bytes, int start, int end) {
        this.bytes = bytes;
        this.pos = start;
        this.end = end;
    }

    Malformed malformed(String what) {
        return new Malformed("JSON is malformed: " + what + " (byte " + pos + ")");
    }

    void skipSpace() {
        while (pos < end) {
            byte b = bytes[pos];
            if (b == ' ' || b == '\t' || b == '\n' || b == '\r') {
                pos++;
            } else {
                return;
            }
        }
    }

    /** The next byte after spaces, not consumed; -1 at the end. */
    int peek() {
        skipSpace();
        return pos < end ? bytes[pos] & 0xFF : -1;
    }

    void expect(char c) throws Malformed {
        if (peek() != c) {
            throw pos >= end ? truncated() : malformed(c == ':' ? "expected ':'" : "invalid character");
        }
        pos++;
    }

    /** An object's key at `pos`. */
    String readKey() throws Malformed {
        int next = peek();
        if (next != '"') {
            throw next < 0 ? truncated() : malformed("object keys must be strings");
        }
        return readString();
    }

    Malformed truncated() {
        return new Malformed("Input data was truncated");
    }

    /** After the one value: only spaces. */
    void expectEnd() throws Malformed {
        skipSpace();
        if (pos < end) {
            pos++; // msgspec names the byte after the first one too many
            throw malformed("trailing characters");
        }
    }

    // Strings.

    /** A string at `pos` (its opening quote), read; escapes decoded. */
    String readString() throws Malformed {
        expect('"');
        int start = pos;
        while (pos < end) {
            byte b = bytes[pos];
            if (b == '"') {
                String text = new String(bytes, start, pos - start, StandardCharsets.UTF_8);
                pos++;
                return text;
            }
            if (b == '\\') {
                StringBuilder text = new StringBuilder(new String(bytes, start, pos - start, StandardCharsets.UTF_8));
                return readEscaped(text);
            }
            if ((b & 0xFF) < 0x20) {
                throw malformed("invalid character");
            }
            pos++;
        }
        throw truncated();
    }

    private String readEscaped(StringBuilder text) throws Malformed {
        while (pos < end) {
            byte b = bytes[pos];
            if (b == '"') {
                pos++;
                return text.toString();
            }
            if (b == '\\') {
                escape(text);
                continue;
            }
            if ((b & 0xFF) < 0x20) {
                throw malformed("invalid character");
            }
            int start = pos;
            while (pos < end && bytes[pos] != '"' && bytes[pos] != '\\' && (bytes[pos] & 0xFF) >= 0x20) {
                pos++;
            }
            text.append(new String(bytes, start, pos - start, StandardCharsets.UTF_8));
        }
        throw truncated();
    }

    /** One escape at `pos` (its backslash), appended to `text` (null: checked only). */
    private void escape(StringBuilder text) throws Malformed {
        if (pos + 1 >= end) {
            throw truncated();
        }
        byte kind = bytes[pos + 1];
        char c;
        switch (kind) {
            case '"' -> c = '"';
            case '\\' -> c = '\\';
            case '/' -> c = '/';
            case 'b' -> c = '\b';
            case 'f' -> c = '\f';
            case 'n' -> c = '\n';
            case 'r' -> c = '\r';
            case 't' -> c = '\t';
            case 'u' -> {
                unicode(text);
                return;
            }
            default -> {
                pos++;
                throw malformed("invalid escape character in string");
            }
        }
        pos += 2;
        if (text != null) {
            text.append(c);
        }
    }

    /** A \\uXXXX escape (a surrogate pair as two), as msgspec reads it. */
    private void unicode(StringBuilder text) throws Malformed {
        int first = hex4(pos + 2);
        pos += 6;
        if (first >= 0xDC00 && first <= 0xDFFF) {
            throw malformed("invalid utf-16 surrogate pair");
        }
        if (first >= 0xD800 && first <= 0xDBFF) {
            if (pos + 6 > end) {
                throw truncated();
            }
            if (bytes[pos] != '\\' || bytes[pos + 1] != 'u') {
                throw truncated();
            }
            int second = hex4(pos + 2);
            pos += 6;
            if (second < 0xDC00 || second > 0xDFFF) {
                throw malformed("invalid utf-16 surrogate pair");
            }
            if (text != null) {
                text.append((char) first).append((char) second);
            }
            return;
        }
        if (text != null) {
            text.append((char) first);
        }
    }

    private int hex4(int at) throws Malformed {
        if (at + 4 > end) {
            pos = end;
            throw truncated();
        }
        int value = 0;
        for (int i = at; i < at + 4; i++) {
            int digit = Character.digit(bytes[i], 16);
            if (digit < 0) {
                pos = i;
                throw malformed("invalid character in unicode escape");
            }
            value = value * 16 + digit;
        }
        return value;
    }

    /** Past a string at `pos` (its opening quote), checked as readString checks it. */
    void skipString() throws Malformed {
        expect('"');
        while (pos < end) {
            byte b = bytes[pos];
            if (b == '"') {
                pos++;
                return;
            }
            if (b == '\\') {
                escape(null);
                continue;
            }
            if ((b & 0xFF) < 0x20) {
                throw malformed("invalid character");
            }
            pos++;
        }
        throw truncated();
    }

    // Numbers.

    /** Where the number read last began and ended, and whether it has a fraction or exponent. */
    int numberStart;
    boolean numberIsInteger;

    /** A number at `pos`, checked; its text is bytes[numberStart, pos). */
    void readNumber() throws Malformed {
        skipSpace();
        numberStart = pos;
        numberIsInteger = true;
        if (pos < end && bytes[pos] == '-') {
            pos++;
        }
        if (pos >= end) {
            throw truncated();
        }
        if (bytes[pos] == '0') {
            pos++;
        } else if (bytes[pos] >= '1' && bytes[pos] <= '9') {
            digits();
        } else {
            throw malformed("invalid character");
        }
        if (pos < end && bytes[pos] == '.') {
            numberIsInteger = false;
            pos++;
            if (pos >= end || bytes[pos] < '0' || bytes[pos] > '9') {
                throw pos >= end ? truncated() : malformed("invalid number");
            }
            digits();
        }
        if (pos < end && (bytes[pos] == 'e' || bytes[pos] == 'E')) {
            numberIsInteger = false;
            pos++;
            if (pos < end && (bytes[pos] == '+' || bytes[pos] == '-')) {
                pos++;
            }
            if (pos >= end || bytes[pos] < '0' || bytes[pos] > '9') {
                throw pos >= end ? truncated() : malformed("invalid number");
            }
            digits();
        }
        if (pos < end && (bytes[pos] == '0' || (bytes[pos] >= '1' && bytes[pos] <= '9'))) {
            throw malformed("invalid number"); // a leading zero: "01"
        }
        if (!numberIsInteger && firstOutOfRange < 0 && mayOverflow() && Double.isInfinite(Double.parseDouble(numberText()))) {
            firstOutOfRange = numberStart;
        }
    }

    /** Where the first number no double holds began (-1: none yet): a reading of the whole
     * line that converts every number (msgspec's untyped one) stops there, as at an error. */
    int firstOutOfRange = -1;

    /** Whether the number read may be past a double's range: a long mantissa, or an exponent
     * of three digits or more (cheap to tell; only those are converted to find out). */
    private boolean mayOverflow() {
        int digits = 0;
        for (int i = numberStart; i < pos; i++) {
            byte b = bytes[i];
            if (b == 'e' || b == 'E') {
                int exponentDigits = 0;
                for (int j = i + 1; j < pos; j++) {
                    if (bytes[j] >= '0' && bytes[j] <= '9') {
                        exponentDigits++;
                    }
                }
                return exponentDigits >= 3 || digits > 300;
            }
            if (b >= '0' && b <= '9') {
                digits++;
            }
        }
        return digits > 300;
    }

    private void digits() {
        while (pos < end && bytes[pos] >= '0' && bytes[pos] <= '9') {
            pos++;
        }
    }

    String numberText() {
        return new String(bytes, numberStart, pos - numberStart, StandardCharsets.US_ASCII);
    }

    // Literals.

    void literal(String word) throws Malformed {
        skipSpace();
        for (int i = 0; i < word.length(); i++) {
            if (pos >= end) {
                throw truncated();
            }
            if (bytes[pos] != word.charAt(i)) {
                throw malformed("invalid character");
            }
            pos++;
        }
    }

    // Any value, skipped (checked, not kept): an unknown field's.

    void skipValue() throws Malformed {
        int next = peek();
        switch (next) {
            case '{' -> {
                pos++;
                if (peek() == '}') {
                    pos++;
                    return;
                }
                while (true) {
                    if (peek() != '"') {
                        throw pos >= end ? truncated() : malformed("object keys must be strings");
                    }
                    skipString();
                    expect(':');
                    skipValue();
                    if (commaOrClose('}')) {
                        return;
                    }
                }
            }
            case '[' -> {
                pos++;
                if (peek() == ']') {
                    pos++;
                    return;
                }
                while (true) {
                    skipValue();
                    if (commaOrClose(']')) {
                        return;
                    }
                }
            }
            case '"' -> skipString();
            case 't' -> literal("true");
            case 'f' -> literal("false");
            case 'n' -> literal("null");
            case -1 -> throw truncated();
            default -> {
                if (next == '-' || (next >= '0' && next <= '9')) {
                    readNumber();
                } else {
                    throw malformed("invalid character");
                }
            }
        }
    }

    /** After a member or an element: true at the container's close, false after a comma. */
    boolean commaOrClose(char close) throws Malformed {
        int next = peek();
        if (next == ',') {
            pos++;
            if (peek() == close) {
                throw malformed(close == '}' ? "trailing comma in object" : "trailing comma in array");
            }
            return false;
        }
        if (next == close) {
            pos++;
            return true;
        }
        throw next < 0 ? truncated() : malformed("expected ',' or '" + close + "'");
    }
}
