package io.triggeronce.jobs.decode;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * One landed line -> the declared fields, or the reason it cannot be used: the JVM's reading
 * of tests/reference/decode.py and line_reader.py, the reference it is tested against line by line
 * (same verdict, same reason):
 *
 * <pre>
 *   over RECORD_LIMIT bytes           record_too_large
 *   not UTF-8                         invalid_encoding
 *   only spaces (Python's)            blank: not a record
 *   nested deeper than max_depth      too_deeply_nested
 *   not JSON, or text after it        malformed_json
 *   JSON, but not an object           not_a_json_object
 *   a field of another JSON type, at  wrong_field_type   ("repo.id: expected long, got string")
 *   any depth, or a number its type cannot hold, or a decimal with more digits than it holds
 * </pre>
 *
 * A key given twice is checked each time and counts once, with its last value. Keys no field
 * names are ignored at any depth (a top-level one is handed back with `new_fields`). A
 * top-level timestamp or date, and with `coerce` a top-level string, take any JSON value,
 * as text. With `rescue`, a value of another type is set to null and kept, as landed, under
 * its path. Values are Spark's external types: String, Long, Integer, Double, Boolean,
 * BigDecimal, Row (an object), List (an array); a timestamp or date as its text.
 */
public final class LineDecoder implements Serializable {
    private static final long serialVersionUID = 1L;

    public static final int RECORD_LIMIT = 64 << 20;
    public static final int TOO_LARGE_KEPT = 1 << 20;
    public static final int MAX_RESCUES = 100;
    private static final BigInteger LONG_MIN = BigInteger.valueOf(Long.MIN_VALUE);
    private static final BigInteger LONG_MAX = BigInteger.valueOf(Long.MAX_VALUE);
    private static final BigInteger UNSIGNED_LONG_MAX = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);

    /** A whole number msgspec reads as one (from a long's least to an unsigned long's most);
     * it reads a larger one as a double. */
    static boolean isMachineInteger(String text) {
        if (text.length() < 19) {
            return true;
        }
        BigInteger value = new BigInteger(text);
        return value.compareTo(LONG_MIN) >= 0 && value.compareTo(UNSIGNED_LONG_MAX) <= 0;
    }

    private final List<Kind.Field> fields;
    private final Kind.Struct record;
    private final boolean coerce;
    private final boolean newFields;
    private final boolean rescue;
    private final int maxDepth;

    public LineDecoder(String configJson) {
        JsonNode config;
        try {
            config = new ObjectMapper().readTree(configJson);
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
        List<Kind.Field> declared = new ArrayList<>();
        for (JsonNode field : config.get("fields")) {
            declared.add(new Kind.Field(field.get(0).asText(), Kind.of(field.get(1))));
        }
        this.fields = List.copyOf(declared);
        this.record = new Kind.Struct(this.fields);
        this.coerce = config.path("coerce").asBoolean(false);
        this.newFields = config.path("new_fields").asBoolean(false);
        this.rescue = config.path("rescue").asBoolean(false);
        this.maxDepth = config.get("max_depth").asInt();
    }

    public List<Kind.Field> fields() {
        return fields;
    }

    public boolean handsBackNewFields() {
        return newFields;
    }

    public boolean rescues() {
        return newFields || rescue;
    }

    /** What a line is: blank, or its fields and (when unusable) its reason and detail. */
    public static final class Decoded {
        public boolean blank;
        public String reason;
        public String detail;
        public Object[] values;
        public List<String> newKeys;
        public String rescued;
    }

    public Decoded decode(byte[] raw) {
        Decoded decoded = new Decoded();
        try {
            read(raw, decoded);
        } catch (RuntimeException | StackOverflowError error) {
            // One line must never fail its batch: what no reason foresaw is `unreadable`.
            decoded.values = null;
            decoded.reason = "unreadable";
            String message = String.valueOf(error.getMessage());
            decoded.detail = error.getClass().getSimpleName() + ": " + message.substring(0, Math.min(500, message.length()));
        }
        if (decoded.values == null && !decoded.blank) {
            decoded.values = new Object[fields.size()];
        }
        return decoded;
    }

    /** A line of a file quarantined by hand: its reason, unread (a blank line is not a record). */
    public Decoded quarantinedByHand(byte[] raw, String reason) {
        Decoded decoded = new Decoded();
        int start = bomLength(raw);
        decoded.blank = Bytes.firstInvalidUtf8(raw) < 0
                && Bytes.isBlank(new String(raw, start, raw.length - start, java.nio.charset.StandardCharsets.UTF_8));
        if (!decoded.blank) {
            decoded.reason = "file_quarantined";
            decoded.detail = reason;
            decoded.values = new Object[fields.size()];
        }
        return decoded;
    }

    private static int bomLength(byte[] raw) {
        return raw.length >= 3 && (raw[0] & 0xFF) == 0xEF && (raw[1] & 0xFF) == 0xBB && (raw[2] & 0xFF) == 0xBF ? 3 : 0;
    }

    private void read(byte[] raw, Decoded decoded) {
        if (raw.length > RECORD_LIMIT) {
            decoded.reason = "record_too_large";
            decoded.detail = String.format("%,d bytes; the limit is %,d; its first %,d are kept", raw.length, RECORD_LIMIT, TOO_LARGE_KEPT);
            return;
        }
        int invalid = Bytes.firstInvalidUtf8(raw);
        if (invalid >= 0) {
            decoded.reason = "invalid_encoding";
            decoded.detail = "not UTF-8 at byte " + invalid + "; the line is kept in base64";
            return;
        }
        int start = bomLength(raw);
        if (blank(raw, start)) {
            decoded.blank = true;
            return;
        }
        if (Bytes.openers(raw) > maxDepth) {
            int depth = Bytes.nestingDepth(raw);
            if (depth > maxDepth) {
                decoded.reason = "too_deeply_nested";
                decoded.detail = String.format("%,d levels of objects and arrays; the limit is %d", depth, maxDepth);
                return;
            }
        }
        typed(raw, start, raw.length, decoded);
    }

    private static boolean blank(byte[] raw, int start) {
        for (int i = start; i < raw.length; i++) {
            byte b = raw[i];
            if (b >= 0 && !Bytes.isPythonSpace(b)) {
                return false; // an ASCII byte that is not a space
            }
            if (b < 0) {
                String text = new String(raw, start, raw.length - start, java.nio.charset.StandardCharsets.UTF_8);
                return Bytes.isBlank(text);
            }
        }
        return true;
    }

    // The line read as declared; with `rescue`, each mismatch set to null and kept, again and again.

    private void typed(byte[] raw, int start, int end, Decoded decoded) {
        Map<String, String> rescued = new LinkedHashMap<>();
        byte[] body = raw;
        int from = start;
        int to = end;
        while (true) {
            Walk walk = new Walk(body, from, to);
            walk.run();
            if (walk.malformed != null) {
                decoded.reason = "malformed_json";
                decoded.detail = walk.malformed;
                return;
            }
            if (walk.rootType != null) {
                decoded.reason = "not_a_json_object";
                decoded.detail = "a JSON " + walk.rootType;
                return;
            }
            Mismatch mismatch = walk.mismatch != null ? walk.mismatch : misfit(walk.values);
            if (mismatch == null) {
                decoded.values = walk.values;
                if (newFields) {
                    Map<String, String> found = new LinkedHashMap<>();
                    for (Map.Entry<String, int[]> entry : walk.unknown.entrySet()) {
                        found.put(entry.getKey(), JsonText.asText(body, entry.getValue()[0], entry.getValue()[1]));
                    }
                    decoded.newKeys = new ArrayList<>(found.keySet());
                    for (Map.Entry<String, String> entry : rescued.entrySet()) {
                        found.putIfAbsent(entry.getKey(), entry.getValue());
                    }
                    rescued = found;
                }
                decoded.rescued = rescued.isEmpty() ? null : encodeObject(rescued);
                return;
            }
            String detail = path(mismatch.steps) + ": expected " + declared(mismatch.steps) + ", " + mismatch.got;
            String[] nulled = rescue && rescued.size() < MAX_RESCUES
                    ? JsonText.nulled(body, from, to, mismatch.steps, 0)
                    : null;
            if (nulled == null) {
                decoded.reason = "wrong_field_type";
                decoded.detail = detail;
                return;
            }
            rescued.put(path(mismatch.steps), nulled[1]);
            body = nulled[0].getBytes(java.nio.charset.StandardCharsets.UTF_8);
            from = 0;
            to = body.length;
        }
    }

    private static String encodeObject(Map<String, String> members) {
        StringBuilder out = new StringBuilder("{");
        boolean first = true;
        for (Map.Entry<String, String> member : members.entrySet()) {
            if (!first) {
                out.append(',');
            }
            first = false;
            JsonText.string(member.getKey(), out);
            out.append(':');
            if (member.getValue() == null) {
                out.append("null");
            } else {
                JsonText.string(member.getValue(), out);
            }
        }
        return out.append('}').toString();
    }

    /** A value of another type, or a number its type cannot hold: where, and what was found. */
    record Mismatch(List<Object> steps, String got) {}

    static String path(List<Object> steps) {
        StringBuilder text = new StringBuilder();
        for (Object step : steps) {
            if (step instanceof Integer index) {
                text.append('[').append(index).append(']');
            } else {
                if (text.length() > 0) {
                    text.append('.');
                }
                text.append(step);
            }
        }
        return text.toString();
    }

    private String declared(List<Object> steps) {
        Kind kind = record;
        for (Object step : steps) {
            if (kind instanceof Kind.ArrayOf array && step instanceof Integer) {
                kind = array.element();
            } else if (kind instanceof Kind.Struct struct && step instanceof String name) {
                kind = struct.kindOf(name);
            } else {
                return "?";
            }
            if (kind == null) {
                return "?";
            }
        }
        return kind.spelled();
    }

    // The first decimal (in declaration order) its type cannot hold exactly.

    private Mismatch misfit(Object[] values) {
        List<Object> steps = new ArrayList<>();
        for (int i = 0; i < fields.size(); i++) {
            steps.add(fields.get(i).name());
            Mismatch found = misfit(values[i], fields.get(i).kind(), steps);
            if (found != null) {
                return found;
            }
            steps.remove(steps.size() - 1);
        }
        return null;
    }

    private Mismatch misfit(Object value, Kind kind, List<Object> steps) {
        if (value == null) {
            return null;
        }
        if (kind instanceof Kind.Struct struct) {
            Row row = (Row) value;
            for (int i = 0; i < struct.fields().size(); i++) {
                steps.add(struct.fields().get(i).name());
                Mismatch found = misfit(row.get(i), struct.fields().get(i).kind(), steps);
                if (found != null) {
                    return found;
                }
                steps.remove(steps.size() - 1);
            }
        } else if (kind instanceof Kind.ArrayOf array) {
            List<?> items = (List<?>) value;
            for (int i = 0; i < items.size(); i++) {
                steps.add(i);
                Mismatch found = misfit(items.get(i), array.element(), steps);
                if (found != null) {
                    return found;
                }
                steps.remove(steps.size() - 1);
            }
        } else if (kind instanceof Kind.Decimal decimal && !holds((BigDecimal) value, decimal)) {
            return new Mismatch(List.copyOf(steps), "got " + ((BigDecimal) value).toString() + ", more digits than it holds");
        }
        return null;
    }

    static boolean holds(BigDecimal value, Kind.Decimal type) {
        if (value.signum() == 0) {
            return true;
        }
        BigDecimal exact = value.stripTrailingZeros();
        int after = Math.max(0, exact.scale());
        int before = Math.max(0, exact.precision() - exact.scale());
        return after <= type.scale() && before <= type.precision() - type.scale();
    }

    /** Decimals set to their declared scale, for Spark (they fit: misfit found none). */
    private static Object scaled(Object value, Kind kind) {
        if (value == null) {
            return null;
        }
        if (kind instanceof Kind.Decimal decimal) {
            return ((BigDecimal) value).setScale(decimal.scale());
        }
        if (kind instanceof Kind.Struct struct) {
            Row row = (Row) value;
            Object[] inner = new Object[struct.fields().size()];
            for (int i = 0; i < inner.length; i++) {
                inner[i] = scaled(row.get(i), struct.fields().get(i).kind());
            }
            return RowFactory.create(inner);
        }
        if (kind instanceof Kind.ArrayOf array) {
            List<Object> items = new ArrayList<>();
            for (Object item : (List<?>) value) {
                items.add(scaled(item, array.element()));
            }
            return items;
        }
        return value;
    }

    /**
     * Lines packed as (4-byte big-endian length, bytes)... -> each one's verdict as JSON:
     * {"blank"} or {"reason", "detail", "values" (name -> value; a decimal as text),
     * "new_fields", "rescued"}: what tests compare with the reference decoder, line by line.
     */
    public String verdicts(byte[] packed) {
        java.nio.ByteBuffer buffer = java.nio.ByteBuffer.wrap(packed);
        StringBuilder out = new StringBuilder("[");
        while (buffer.hasRemaining()) {
            byte[] line = new byte[buffer.getInt()];
            buffer.get(line);
            Decoded decoded = decode(line);
            if (out.length() > 1) {
                out.append(',');
            }
            out.append(verdict(decoded));
        }
        return out.append(']').toString();
    }

    private String verdict(Decoded decoded) {
        if (decoded.blank) {
            return "{\"blank\":true}";
        }
        Map<String, Object> values = new LinkedHashMap<>();
        Object[] spark = decoded.reason == null ? sparkValues(decoded) : new Object[fields.size()];
        for (int i = 0; i < fields.size(); i++) {
            values.put(fields.get(i).name(), plain(spark[i], fields.get(i).kind()));
        }
        Map<String, Object> verdict = new LinkedHashMap<>();
        verdict.put("reason", decoded.reason);
        verdict.put("detail", decoded.detail);
        verdict.put("values", values);
        verdict.put("new_fields", decoded.newKeys);
        verdict.put("rescued", decoded.rescued);
        try {
            return new ObjectMapper().writeValueAsString(verdict);
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
    }

    private static Object plain(Object value, Kind kind) {
        if (value == null) {
            return null;
        }
        if (kind instanceof Kind.Struct struct) {
            Map<String, Object> members = new LinkedHashMap<>();
            Row row = (Row) value;
            for (int i = 0; i < struct.fields().size(); i++) {
                members.put(struct.fields().get(i).name(), plain(row.get(i), struct.fields().get(i).kind()));
            }
            return members;
        }
        if (kind instanceof Kind.ArrayOf array) {
            List<Object> items = new ArrayList<>();
            for (Object item : (List<?>) value) {
                items.add(plain(item, array.element()));
            }
            return items;
        }
        if (value instanceof BigDecimal decimal) {
            return decimal.toPlainString();
        }
        return value;
    }

    public Object[] sparkValues(Decoded decoded) {
        Object[] out = Arrays.copyOf(decoded.values, decoded.values.length);
        for (int i = 0; i < out.length; i++) {
            out[i] = scaled(out[i], fields.get(i).kind());
        }
        return out;
    }

    // One pass over a line: every value checked, the declared ones read, the first mismatch kept.

    private final class Walk {
        final JsonReader reader;
        final byte[] bytes;
        final List<Object> steps = new ArrayList<>();
        Object[] values;
        Mismatch mismatch;
        String malformed;
        String rootType;
        final Map<String, int[]> unknown = new LinkedHashMap<>();
        private final int origin;

        Walk(byte[] bytes, int start, int end) {
            this.bytes = bytes;
            this.reader = new JsonReader(bytes, start, end);
            this.origin = start;
        }

        void run() {
            try {
                int first = reader.peek();
                if (first != '{') {
                    if (first < 0) {
                        throw reader.truncated();
                    }
                    rootType = typeAt(first);
                    reader.skipValue();
                    reader.expectEnd();
                    return;
                }
                values = readObject(record, true);
                reader.expectEnd();
            } catch (JsonReader.Malformed error) {
                // As the reference decides: a type error found first stands when the line's
                // whole reading stops at a number no double holds before its syntax error.
                boolean typeErrorFirst = mismatch != null || rootType != null;
                if (typeErrorFirst && reader.firstOutOfRange >= 0) {
                    return;
                }
                mismatch = null;
                rootType = null;
                String message = error.getMessage();
                malformed = origin == 0 ? message : message.replace("(byte " + reader.pos + ")", "(byte " + (reader.pos - origin) + ")");
            }
        }

        /** What JSON type the value starting with this byte is (a number read to tell). */
        private String typeAt(int first) throws JsonReader.Malformed {
            return switch (first) {
                case '[' -> "array";
                case '"' -> "string";
                case 't', 'f' -> "boolean";
                case 'n' -> "null";
                default -> {
                    if (first == '-' || (first >= '0' && first <= '9')) {
                        int at = reader.pos;
                        reader.readNumber();
                        String text = reader.numberText();
                        reader.pos = at;
                        reader.firstOutOfRange = -1; // read again, by skipValue
                        if (reader.numberIsInteger && isMachineInteger(text)) {
                            yield "integer";
                        }
                        // A double msgspec cannot hold: its message names no type.
                        yield Double.isInfinite(Double.parseDouble(text)) ? "value" : "number";
                    }
                    throw reader.malformed("invalid character");
                }
            };
        }

        private void mismatch(String got) {
            if (mismatch == null) {
                mismatch = new Mismatch(List.copyOf(steps), got);
            }
        }

        /** An object's declared fields (null values for those absent), checked at every depth. */
        private Object[] readObject(Kind.Struct struct, boolean top) throws JsonReader.Malformed {
            reader.expect('{');
            Object[] found = new Object[struct.fields().size()];
            if (reader.peek() == '}') {
                reader.pos++;
                return found;
            }
            while (true) {
                String key = reader.readKey();
                reader.expect(':');
                int index = indexOf(struct, key);
                if (index < 0) {
                    if (top && newFields) {
                        reader.skipSpace();
                        int start = reader.pos;
                        reader.skipValue();
                        unknown.put(key, new int[] {start, reader.pos});
                    } else {
                        reader.skipValue();
                    }
                } else {
                    steps.add(key);
                    Kind kind = struct.fields().get(index).kind();
                    found[index] = top && takesAnyValue(kind) ? readAsText() : readValue(kind);
                    steps.remove(steps.size() - 1);
                }
                if (reader.commaOrClose('}')) {
                    return found;
                }
            }
        }

        private boolean takesAnyValue(Kind kind) {
            if (kind instanceof Kind.Scalar scalar) {
                String name = scalar.name();
                return name.equals("timestamp") || name.equals("date") || (coerce && name.equals("string"));
            }
            return false;
        }

        private String readAsText() throws JsonReader.Malformed {
            reader.skipSpace();
            int start = reader.pos;
            reader.skipValue();
            return JsonText.asText(bytes, start, reader.pos);
        }

        private int indexOf(Kind.Struct struct, String key) {
            List<Kind.Field> declared = struct.fields();
            for (int i = 0; i < declared.size(); i++) {
                if (declared.get(i).name().equals(key)) {
                    return i;
                }
            }
            return -1;
        }

        /** A value of `kind` (null taken at every level); on a mismatch, null, the first kept. */
        private Object readValue(Kind kind) throws JsonReader.Malformed {
            int next = reader.peek();
            if (next == 'n') {
                reader.literal("null");
                return null;
            }
            if (kind instanceof Kind.Struct struct) {
                if (next != '{') {
                    return other(next);
                }
                Object[] inner = readObject(struct, false);
                return RowFactory.create(inner);
            }
            if (kind instanceof Kind.ArrayOf array) {
                if (next != '[') {
                    return other(next);
                }
                reader.pos++;
                List<Object> items = new ArrayList<>();
                if (reader.peek() == ']') {
                    reader.pos++;
                    return items;
                }
                while (true) {
                    steps.add(items.size());
                    items.add(readValue(array.element()));
                    steps.remove(steps.size() - 1);
                    if (reader.commaOrClose(']')) {
                        return items;
                    }
                }
            }
            if (kind instanceof Kind.Decimal) {
                if (next == '"') {
                    String text = reader.readString();
                    try {
                        return new BigDecimal(text.strip());
                    } catch (NumberFormatException error) {
                        mismatch("got what it cannot read (Invalid decimal string)");
                        return null;
                    }
                }
                if (next == '-' || (next >= '0' && next <= '9')) {
                    reader.readNumber();
                    return new BigDecimal(reader.numberText());
                }
                return other(next);
            }
            String name = ((Kind.Scalar) kind).name();
            switch (name) {
                case "string", "timestamp", "date" -> {
                    if (next == '"') {
                        return reader.readString();
                    }
                    return other(next);
                }
                case "boolean" -> {
                    if (next == 't') {
                        reader.literal("true");
                        return Boolean.TRUE;
                    }
                    if (next == 'f') {
                        reader.literal("false");
                        return Boolean.FALSE;
                    }
                    return other(next);
                }
                case "long", "int" -> {
                    if (next != '-' && (next < '0' || next > '9')) {
                        return other(next);
                    }
                    reader.readNumber();
                    if (!reader.numberIsInteger) {
                        String text = reader.numberText();
                        mismatch(Double.isInfinite(Double.parseDouble(text)) ? "got a number out of its range" : "got number");
                        return null;
                    }
                    return whole(reader.numberText(), name.equals("int"));
                }
                case "double" -> {
                    if (next != '-' && (next < '0' || next > '9')) {
                        return other(next);
                    }
                    reader.readNumber();
                    String text = reader.numberText();
                    double number = reader.numberIsInteger ? new BigInteger(text).doubleValue() : Double.parseDouble(text);
                    if (Double.isInfinite(number)) {
                        mismatch("got a number out of its range");
                        return null;
                    }
                    return number == 0 && reader.numberIsInteger ? 0.0 : number;
                }
                default -> throw new IllegalStateException("no such type: " + name);
            }
        }

        private Object whole(String text, boolean int32) {
            if (text.length() < 19) {
                long value = Long.parseLong(text);
                if (!int32) {
                    return value;
                }
                if (value >= Integer.MIN_VALUE && value <= Integer.MAX_VALUE) {
                    return (int) value;
                }
                mismatch("got a number out of its range");
                return null;
            }
            BigInteger value = new BigInteger(text);
            if (int32 || value.compareTo(LONG_MIN) < 0 || value.compareTo(LONG_MAX) > 0) {
                mismatch("got a number out of its range");
                return null;
            }
            return value.longValue();
        }

        /** A value of another JSON type than declared: skipped (checked), its type the mismatch. */
        private Object other(int next) throws JsonReader.Malformed {
            String found = switch (next) {
                case '{' -> "object";
                case '[' -> "array";
                case '"' -> "string";
                case 't', 'f' -> "boolean";
                default -> null;
            };
            if (found == null && (next == '-' || (next >= '0' && next <= '9'))) {
                reader.readNumber();
                String text = reader.numberText();
                if (reader.numberIsInteger && isMachineInteger(text)) {
                    mismatch("got integer");
                } else {
                    // msgspec reads any other number as a double before it finds it of another
                    // type: past a double's range, it says so.
                    boolean past = Double.isInfinite(Double.parseDouble(text));
                    mismatch(past ? "got a number out of its range" : "got number");
                }
                return null;
            }
            // Kept before the value is skipped: a syntax error inside it comes after the type
            // error, as the reference sees them.
            mismatch("got " + found);
            reader.skipValue();
            return null;
        }
    }
}
