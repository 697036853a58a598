package io.triggeronce.jobs.decode;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JSON values as text, as the Python decoder writes them (msgspec's encoder): compact, a
 * float as its shortest digits, a string escaping only what JSON needs; and a value kept as
 * landed (`as_text`), and a document with one value set to null (`nulled`), as
 * tests/reference/line_reader.py has them.
 */
final class JsonText {
    private JsonText() {}

    private static final Object NULL = new Object();

    /**
     * A value as the decoder hands back one it keeps as landed: a string as it is, null as
     * null, anything else as compact JSON; as landed (trimmed) when it holds a number no
     * double holds.
     */
    static String asText(byte[] bytes, int start, int end) {
        Object value;
        try {
            JsonReader reader = new JsonReader(bytes, start, end);
            value = read(reader);
            reader.expectEnd();
        } catch (JsonReader.Malformed | OutOfRange error) {
            return pythonStrip(new String(bytes, start, end - start, StandardCharsets.UTF_8));
        }
        if (value == NULL) {
            return null;
        }
        if (value instanceof String text) {
            return text;
        }
        StringBuilder out = new StringBuilder();
        write(value, out);
        return out.toString();
    }

    static final class OutOfRange extends Exception {
        OutOfRange() {
            super("Number out of range", null, false, false);
        }
    }

    /** A value read as msgspec reads it untyped: objects (the last of a key's values, the
     * first one's place), lists, strings, whole numbers of any size, doubles, booleans, null. */
    private static Object read(JsonReader reader) throws JsonReader.Malformed, OutOfRange {
        int next = reader.peek();
        switch (next) {
            case '{' -> {
                reader.pos++;
                Map<String, Object> members = new LinkedHashMap<>();
                if (reader.peek() == '}') {
                    reader.pos++;
                    return members;
                }
                while (true) {
                    String key = reader.readKey();
                    reader.expect(':');
                    members.put(key, read(reader));
                    if (reader.commaOrClose('}')) {
                        return members;
                    }
                }
            }
            case '[' -> {
                reader.pos++;
                List<Object> items = new ArrayList<>();
                if (reader.peek() == ']') {
                    reader.pos++;
                    return items;
                }
                while (true) {
                    items.add(read(reader));
                    if (reader.commaOrClose(']')) {
                        return items;
                    }
                }
            }
            case '"' -> {
                return reader.readString();
            }
            case 't' -> {
                reader.literal("true");
                return Boolean.TRUE;
            }
            case 'f' -> {
                reader.literal("false");
                return Boolean.FALSE;
            }
            case 'n' -> {
                reader.literal("null");
                return NULL;
            }
            default -> {
                reader.readNumber();
                String text = reader.numberText();
                if (reader.numberIsInteger) {
                    return new BigInteger(text);
                }
                double number = Double.parseDouble(text);
                if (Double.isInfinite(number)) {
                    throw new OutOfRange();
                }
                return number;
            }
        }
    }

    @SuppressWarnings("unchecked")
    private static void write(Object value, StringBuilder out) {
        if (value == NULL || value == null) {
            out.append("null");
        } else if (value instanceof String text) {
            string(text, out);
        } else if (value instanceof Boolean flag) {
            out.append(flag ? "true" : "false");
        } else if (value instanceof BigInteger whole) {
            out.append(whole);
        } else if (value instanceof Double number) {
            out.append(formatDouble(number));
        } else if (value instanceof Map<?, ?> members) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<String, Object> member : ((Map<String, Object>) members).entrySet()) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                string(member.getKey(), out);
                out.append(':');
                write(member.getValue(), out);
            }
            out.append('}');
        } else if (value instanceof List<?> items) {
            out.append('[');
            for (int i = 0; i < items.size(); i++) {
                if (i > 0) {
                    out.append(',');
                }
                write(items.get(i), out);
            }
            out.append(']');
        } else {
            throw new IllegalArgumentException("not a JSON value: " + value.getClass());
        }
    }

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    /** A JSON string as msgspec writes one: `"` and `\` escaped, control characters too. */
    static void string(String text, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                default -> {
                    if (c < 0x20) {
                        out.append("\\u00").append(HEX[c >> 4]).append(HEX[c & 0xF]);
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }

    static String string(String text) {
        StringBuilder out = new StringBuilder(text.length() + 2);
        string(text, out);
        return out.toString();
    }

    /**
     * A double as msgspec writes one: its shortest digits that read back the same; in plain
     * notation from 1e-5 to below 1e16 (with ".0" for a whole number), else as d.ddde±N.
     */
    static String formatDouble(double value) {
        if (value == 0) {
            return (1 / value < 0) ? "-0.0" : "0.0";
        }
        BigDecimal shortest = shortest(value);
        String digits = shortest.unscaledValue().abs().toString();
        int exponent = digits.length() - 1 - shortest.scale(); // value = d.ddd x 10^exponent
        String sign = value < 0 ? "-" : "";
        if (exponent >= -5 && exponent < 16) {
            if (exponent >= 0) {
                String whole = exponent + 1 >= digits.length()
                        ? digits + "0".repeat(exponent + 1 - digits.length())
                        : digits.substring(0, exponent + 1);
                String fraction = exponent + 1 >= digits.length() ? "0" : digits.substring(exponent + 1);
                return sign + whole + "." + fraction;
            }
            return sign + "0." + "0".repeat(-exponent - 1) + digits;
        }
        String mantissa = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
        return sign + mantissa + "e" + exponent;
    }

    /** The shortest decimal that reads back as `value` (the nearest one of that length). */
    private static BigDecimal shortest(double value) {
        BigDecimal exact = new BigDecimal(value);
        for (int precision = 1; precision <= 17; precision++) {
            BigDecimal best = null;
            for (RoundingMode mode : new RoundingMode[] {RoundingMode.HALF_EVEN, RoundingMode.DOWN, RoundingMode.UP}) {
                BigDecimal candidate = exact.round(new MathContext(precision, mode));
                if (candidate.doubleValue() == value) {
                    if (best == null
                            || candidate.subtract(exact).abs().compareTo(best.subtract(exact).abs()) < 0) {
                        best = candidate;
                    }
                }
            }
            if (best != null) {
                return best.stripTrailingZeros();
            }
        }
        return exact.round(MathContext.DECIMAL64).stripTrailingZeros();
    }

    /** Python's str.strip(): its whitespace off both ends. */
    static String pythonStrip(String text) {
        int start = 0;
        int end = text.length();
        while (start < end && Bytes.isPythonSpace(text.charAt(start))) {
            start++;
        }
        while (end > start && Bytes.isPythonSpace(text.charAt(end - 1))) {
            end--;
        }
        return text.substring(start, end);
    }

    // A document with one value set to null, as line_reader.py's _nulled does it.

    /** (the document with the value at `steps` set to null, that value as `asText` gives it),
     * or null when there is no value there. Each container on the way is read as a mapping
     * (or a list) of values as landed, and written again compactly: a key given twice is
     * there once, with its last value. */
    static String[] nulled(byte[] bytes, int start, int end, List<Object> steps, int from) {
        if (from == steps.size()) {
            return new String[] {"null", asText(bytes, start, end)};
        }
        Object step = steps.get(from);
        JsonReader reader = new JsonReader(bytes, start, end);
        try {
            if (step instanceof Integer index) {
                List<int[]> items = rawItems(reader);
                if (index >= items.size()) {
                    return null;
                }
                int[] span = items.get(index);
                String[] inner = nulled(bytes, span[0], span[1], steps, from + 1);
                if (inner == null) {
                    return null;
                }
                StringBuilder out = new StringBuilder("[");
                for (int i = 0; i < items.size(); i++) {
                    if (i > 0) {
                        out.append(',');
                    }
                    out.append(i == index ? inner[0] : raw(bytes, items.get(i)));
                }
                return new String[] {out.append(']').toString(), inner[1]};
            }
            Map<String, int[]> members = rawMembers(reader);
            int[] span = members.get((String) step);
            if (span == null) {
                return null;
            }
            String[] inner = nulled(bytes, span[0], span[1], steps, from + 1);
            if (inner == null) {
                return null;
            }
            StringBuilder out = new StringBuilder("{");
            boolean first = true;
            for (Map.Entry<String, int[]> member : members.entrySet()) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                string(member.getKey(), out);
                out.append(':').append(member.getKey().equals(step) ? inner[0] : raw(bytes, member.getValue()));
            }
            return new String[] {out.append('}').toString(), inner[1]};
        } catch (JsonReader.Malformed error) {
            return null;
        }
    }

    private static String raw(byte[] bytes, int[] span) {
        return new String(bytes, span[0], span[1] - span[0], StandardCharsets.UTF_8);
    }

    /** Each member of the object at the reader's position: key -> where its value is (the
     * last value of a key given twice, in the place of its first). */
    static Map<String, int[]> rawMembers(JsonReader reader) throws JsonReader.Malformed {
        reader.expect('{');
        Map<String, int[]> members = new LinkedHashMap<>();
        if (reader.peek() == '}') {
            reader.pos++;
            reader.expectEnd();
            return members;
        }
        while (true) {
            String key = reader.readKey();
            reader.expect(':');
            reader.skipSpace();
            int valueStart = reader.pos;
            reader.skipValue();
            members.put(key, new int[] {valueStart, reader.pos});
            if (reader.commaOrClose('}')) {
                reader.expectEnd();
                return members;
            }
        }
    }

    static List<int[]> rawItems(JsonReader reader) throws JsonReader.Malformed {
        reader.expect('[');
        List<int[]> items = new ArrayList<>();
        if (reader.peek() == ']') {
            reader.pos++;
            reader.expectEnd();
            return items;
        }
        while (true) {
            reader.skipSpace();
            int valueStart = reader.pos;
            reader.skipValue();
            items.add(new int[] {valueStart, reader.pos});
            if (reader.commaOrClose(']')) {
                reader.expectEnd();
                return items;
            }
        }
    }
}
