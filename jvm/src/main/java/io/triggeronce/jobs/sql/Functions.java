package io.triggeronce.jobs.sql;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.triggeronce.jobs.decode.LineDecoder;
import io.triggeronce.jobs.tally.Tally;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;

/** What the Python side calls (jobs/flow/jvm.py): a tally, and the decoder and the counter
 * registered as a session's SQL functions under the names it gives. */
public final class Functions {
    private Functions() {}

    /** A tally registered with the application (one per run). */
    public static Tally newTally(SparkSession spark) {
        Tally tally = new Tally();
        // Unnamed: Spark merges it all the same, but shows (and so prints) only named
        // accumulators, their whole value at every task's end, which grows with the files.
        spark.sparkContext().register(tally);
        return tally;
    }

    /** The decoder of `configJson` (fields, coerce, new_fields, rescue, max_depth,
     * quarantined_files) as the session's function `name`, counting into `tally` (or not: null). */
    public static void registerDecode(SparkSession spark, String name, String configJson, Tally tally) {
        JsonNode config = read(configJson);
        Map<String, String> quarantined = new HashMap<>();
        config.path("quarantined_files").fields().forEachRemaining(e -> quarantined.put(e.getKey(), e.getValue().asText()));
        Decode decode = new Decode(new LineDecoder(configJson), quarantined, tally);
        UserDefinedFunction udf = functions.udf(decode, decode.returnType()).asNondeterministic();
        spark.udf().register(name, udf);
    }

    /** The counter of parsed records, with the names of the rules in their bits' order, and
     * whether the records it keeps go through a transform next. */
    public static void registerCount(SparkSession spark, String name, String rulesJson, boolean transforms, Tally tally) {
        List<String> rules = new ArrayList<>();
        read(rulesJson).forEach(rule -> rules.add(rule.asText()));
        Count count = new Count(tally, rules, transforms);
        spark.udf().register(name, functions.udf(count, DataTypes.BooleanType).asNondeterministic());
    }

    /** The counter of the records the transform `transform` (module:function) gives back. */
    public static void registerTransformed(SparkSession spark, String name, String transform, Tally tally) {
        Transformed transformed = new Transformed(tally, transform);
        spark.udf().register(name, functions.udf(transformed, DataTypes.BooleanType).asNondeterministic());
    }

    private static JsonNode read(String json) {
        try {
            return new ObjectMapper().readTree(json);
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
    }
}
