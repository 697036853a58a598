package io.triggeronce.jobs.decode;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A declared field's type, as jobs/schema.py has it: a scalar (string, long, int, double,
 * boolean, timestamp, date, decimal(p,s)), an object of named fields, or an array of one type.
 */
public sealed interface Kind extends java.io.Serializable permits Kind.Scalar, Kind.Decimal, Kind.Struct, Kind.ArrayOf {

    /** The type as the product spells it (Spark's DDL, `long` and `int` as such). */
    String spelled();

    record Scalar(String name) implements Kind {
        @Override
        public String spelled() {
            return name;
        }
    }

    record Decimal(int precision, int scale) implements Kind {
        @Override
        public String spelled() {
            return "decimal(" + precision + "," + scale + ")";
        }
    }

    record Field(String name, Kind kind) implements java.io.Serializable {}

    record Struct(List<Field> fields) implements Kind {
        @Override
        public String spelled() {
            StringBuilder text = new StringBuilder("struct<");
            for (int i = 0; i < fields.size(); i++) {
                if (i > 0) {
                    text.append(',');
                }
                text.append(quoted(fields.get(i).name())).append(':').append(fields.get(i).kind().spelled());
            }
            return text.append('>').toString();
        }

        public Kind kindOf(String name) {
            for (Field field : fields) {
                if (field.name().equals(name)) {
                    return field.kind();
                }
            }
            return null;
        }
    }

    record ArrayOf(Kind element) implements Kind {
        @Override
        public String spelled() {
            return "array<" + element.spelled() + ">";
        }
    }

    Pattern DECIMAL = Pattern.compile("decimal\\((\\d+),\\s*(\\d+)\\)");
    Pattern PLAIN = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

    private static String quoted(String name) {
        return PLAIN.matcher(name).matches() ? name : "`" + name.replace("`", "``") + "`";
    }

    /**
     * A type from the JSON the Python side writes (jobs/flow/jvm_decode.py): a scalar's name,
     * {"struct": [[name, type], ...]} or {"array": type}.
     */
    static Kind of(JsonNode node) {
        if (node.isTextual()) {
            Matcher decimal = DECIMAL.matcher(node.asText());
            if (decimal.matches()) {
                return new Decimal(Integer.parseInt(decimal.group(1)), Integer.parseInt(decimal.group(2)));
            }
            return new Scalar(node.asText());
        }
        if (node.has("struct")) {
            List<Field> fields = new ArrayList<>();
            for (JsonNode field : node.get("struct")) {
                fields.add(new Field(field.get(0).asText(), of(field.get(1))));
            }
            return new Struct(List.copyOf(fields));
        }
        if (node.has("array")) {
            return new ArrayOf(of(node.get("array")));
        }
        throw new IllegalArgumentException("not a type: " + node);
    }
}
