package io.triggeronce.jobs.decode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;

/** The decoder's verdicts on lines the reference decoder (tests/reference/decode.py) was asked
 * about; tests/integration/test_jvm_decoder.py compares the two on generated lines. */
class LineDecoderTest {
    private static final String FIELDS = "[[\"s\",\"string\"],[\"n\",\"long\"],[\"i\",\"int\"],[\"d\",\"double\"],"
            + "[\"b\",\"boolean\"],[\"t\",\"timestamp\"],[\"m\",\"decimal(5,2)\"],"
            + "[\"o\",{\"struct\":[[\"x\",\"long\"],[\"ts\",\"timestamp\"]]}],[\"a\",{\"array\":\"long\"}]]";

    private static LineDecoder decoder(String options) {
        return new LineDecoder("{\"fields\":" + FIELDS + ",\"max_depth\":64" + options + "}");
    }

    private static LineDecoder.Decoded decode(String line) {
        return decoder("").decode(line.getBytes(StandardCharsets.UTF_8));
    }

    private static void refused(String line, String reason, String detail) {
        LineDecoder.Decoded decoded = decode(line);
        assertEquals(reason, decoded.reason, line);
        if (detail != null) {
            assertEquals(detail, decoded.detail, line);
        }
    }

    @Test
    void valuesOfEachTypeAreRead() {
        LineDecoder.Decoded decoded = decode("{\"s\":\"x\",\"n\":-0,\"i\":7,\"d\":1,\"b\":true,\"t\":1690000000,"
                + "\"m\":\"1.5\",\"o\":{\"x\":3,\"ts\":\"2023\"},\"a\":[1,null],\"zz\":1e999}");
        assertNull(decoded.reason, decoded.detail);
        Object[] values = decoder("").sparkValues(decoded);
        assertEquals("x", values[0]);
        assertEquals(0L, values[1]);
        assertEquals(7, values[2]);
        assertEquals(1.0, values[3]);
        assertEquals(true, values[4]);
        assertEquals("1690000000", values[5]);
        assertEquals(new BigDecimal("1.50"), values[6]);
        assertEquals(3L, ((Row) values[7]).get(0));
        assertEquals("2023", ((Row) values[7]).get(1));
        assertEquals(java.util.Arrays.asList(1L, null), values[8]);
    }

    @Test
    void aValueOfAnotherTypeIsNamedByItsPath() {
        refused("{\"n\": 1.5}", "wrong_field_type", "n: expected long, got number");
        refused("{\"n\": 1e999}", "wrong_field_type", "n: expected long, got a number out of its range");
        refused("{\"n\": 9223372036854775808}", "wrong_field_type", "n: expected long, got a number out of its range");
        refused("{\"i\": 2147483648}", "wrong_field_type", "i: expected int, got a number out of its range");
        refused("{\"d\": 1e999}", "wrong_field_type", "d: expected double, got a number out of its range");
        refused("{\"m\": 1.234}", "wrong_field_type", "m: expected decimal(5,2), got 1.234, more digits than it holds");
        refused("{\"m\": 1000}", "wrong_field_type", "m: expected decimal(5,2), got 1000, more digits than it holds");
        refused("{\"s\": []}", "wrong_field_type", "s: expected string, got array");
        refused("{\"o\": {\"ts\": 5}}", "wrong_field_type", "o.ts: expected timestamp, got integer");
        refused("{\"a\": [1, null, 2.0]}", "wrong_field_type", "a[2]: expected long, got number");
        refused("{\"o\": []}", "wrong_field_type", "o: expected struct<x:long,ts:timestamp>, got array");
        refused("{\"n\":\"x\",\"n\":1}", "wrong_field_type", "n: expected long, got string");
    }

    @Test
    void whatIsNotAJsonObjectIsRefusedAsSuch() {
        refused("[1]", "not_a_json_object", "a JSON array");
        refused("1", "not_a_json_object", "a JSON integer");
        refused("1.5", "not_a_json_object", "a JSON number");
        refused("null", "not_a_json_object", "a JSON null");
        refused("{\"n\":1} x", "malformed_json", null);
        refused("{\"n\":1}{\"n\":2}", "malformed_json", null);
        refused("{\"zz\": NaN}", "malformed_json", null);
        refused("{\"zz\": \"\\ud800\"}", "malformed_json", null);
        refused("{\"zz\": \"\\udc00\"}", "malformed_json", null);
        refused("{\"s\": 01}", "malformed_json", null);
    }

    @Test
    void blankLinesAreNoRecordsAndTheLimitsHold() {
        assertTrue(decode("\u00a0").blank);
        assertTrue(decode("\u001c").blank);
        assertTrue(decoder("").decode(new byte[] {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF}).blank);
        LineDecoder.Decoded bad = decoder("").decode(new byte[] {'{', (byte) 0xFF, '}'});
        assertEquals("invalid_encoding", bad.reason);
        assertEquals("not UTF-8 at byte 1; the line is kept in base64", bad.detail);
        refused("[".repeat(100_000), "too_deeply_nested", "100,000 levels of objects and arrays; the limit is 64");
        refused("{\"s\": \"" + "[".repeat(100_000) + "\"}", null, null);
    }

    @Test
    void withRescueAValueOfAnotherTypeIsKeptByPath() {
        LineDecoder rescuing = decoder(",\"rescue\":true");
        LineDecoder.Decoded decoded = rescuing.decode("{\"n\": 1, \"o\": {\"x\": \"y\"}, \"n\": \"z\"}".getBytes(StandardCharsets.UTF_8));
        assertNull(decoded.reason);
        assertEquals("{\"o.x\":\"y\",\"n\":\"z\"}", decoded.rescued);
        LineDecoder.Decoded twice = rescuing.decode("{\"n\": \"x\", \"n\": 2}".getBytes(StandardCharsets.UTF_8));
        assertEquals("{\"n\":\"2\"}", twice.rescued); // the key's last value, as the reference does
    }

    @Test
    void valuesKeptAsLandedAreWrittenAsMsgspecWritesThem() {
        LineDecoder coercing = new LineDecoder("{\"fields\":[[\"s\",\"string\"]],\"max_depth\":64,\"coerce\":true}");
        String[][] cases = {
            {"{\"s\": 1e2}", "100.0"},
            {"{\"s\": {\"a\": 1.50, \"b\": \"\\u00e9\"}}", "{\"a\":1.5,\"b\":\"\u00e9\"}"},
            {"{\"s\": [1e999]}", "[1e999]"},
            {"{\"s\": 12345678901234567890}", "12345678901234567890"},
            {"{\"s\": [\"\\u0001\", \"\\\"\", \"/\", \"\\u007f\"]}", "[\"\\u0001\",\"\\\"\",\"/\",\"\u007f\"]"},
        };
        for (String[] c : cases) {
            assertEquals(c[1], coercing.decode(c[0].getBytes(StandardCharsets.UTF_8)).values[0], c[0]);
        }
        assertEquals(List.of("1e16", "1000000000000000.0", "0.00001", "1e-6", "0.000025", "-0.0", "5e-324", "1.7976931348623157e308"),
                List.of(1e16, 1e15, 1e-5, 1e-6, 2.5e-5, -0.0, 5e-324, 1.7976931348623157e308).stream().map(JsonText::formatDouble).toList());
    }
}
