package io.triggeronce.jobs.source;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.spark.sql.connector.read.streaming.Offset;

/**
 * How far into its file log the landing source has read: the log's entry number, in the JSON
 * Spark's own file source writes (`{"logOffset":7}`), so that a checkpoint Spark's source
 * started goes on under this one in place.
 */
final class LogOffset extends Offset {
    static final LogOffset NONE = new LogOffset(-1);

    final long logOffset;

    LogOffset(long logOffset) {
        this.logOffset = logOffset;
    }

    static LogOffset of(Offset offset) {
        return offset == null ? NONE : offset instanceof LogOffset own ? own : parse(offset.json());
    }

    static LogOffset parse(String json) {
        try {
            JsonNode node = new ObjectMapper().readTree(json);
            if (node.isIntegralNumber()) {
                return new LogOffset(node.asLong()); // Spark's oldest form: the number alone
            }
            if (!node.path("logOffset").isIntegralNumber()) {
                throw new IllegalArgumentException("not a file source offset: " + json);
            }
            return new LogOffset(node.get("logOffset").asLong());
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
    }

    @Override
    public String json() {
        return "{\"logOffset\":" + logOffset + "}";
    }
}
