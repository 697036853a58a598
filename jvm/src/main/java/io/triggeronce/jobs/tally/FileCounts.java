package io.triggeronce.jobs.tally;

import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** One landed file's rows, as far as some tasks read it (jobs/flow/tally.py FileCount). */
public final class FileCounts implements Serializable {
    private static final long serialVersionUID = 1L;

    public Long sizeBytes;
    public long lines; // read by the decoder, blank ones too
    public long lineBytes; // ... their bytes, line ends not included (a line Hadoop skipped is missing)
    public long blank; // ... of which blank (not records)
    public long records; // counted after parsing: every line but the blank ones
    public long rescued; // ... of which usable with a value rescued
    public long filtered; // ... of which usable, and filtered by the declaration's `where` or its transform
    // ... of which handed to the transform in this task and not yet given back (never merged:
    // a task's own, for Transformed to tell a transform that adds rows)
    public transient long handed;
    public final Map<String, Long> violations = new HashMap<>(); // rule -> records that break it
    public final Map<Long, Long> lateAt = new HashMap<>(); // late_at (microseconds) -> usable records
    public final List<Quarantined> quarantined = new ArrayList<>();

    /** A record that cannot be used, where the decoder read it. */
    public record Quarantined(long blockStart, long lineInBlock, String line, String reason, String detail)
            implements Serializable {}

    public void merge(FileCounts other) {
        if (sizeBytes == null) {
            sizeBytes = other.sizeBytes;
        }
        lines += other.lines;
        lineBytes += other.lineBytes;
        blank += other.blank;
        records += other.records;
        rescued += other.rescued;
        filtered += other.filtered;
        other.violations.forEach((rule, n) -> violations.merge(rule, n, Long::sum));
        other.lateAt.forEach((at, n) -> lateAt.merge(at, n, Long::sum));
        quarantined.addAll(other.quarantined);
    }

    void write(JsonGenerator out) throws IOException {
        out.writeStartObject();
        if (sizeBytes == null) {
            out.writeNullField("size_bytes");
        } else {
            out.writeNumberField("size_bytes", sizeBytes);
        }
        out.writeNumberField("lines", lines);
        out.writeNumberField("line_bytes", lineBytes);
        out.writeNumberField("blank", blank);
        out.writeNumberField("records", records);
        out.writeNumberField("rescued", rescued);
        out.writeNumberField("filtered", filtered);
        out.writeObjectFieldStart("violations");
        for (Map.Entry<String, Long> rule : violations.entrySet()) {
            out.writeNumberField(rule.getKey(), rule.getValue());
        }
        out.writeEndObject();
        out.writeArrayFieldStart("late_at");
        for (Map.Entry<Long, Long> at : lateAt.entrySet()) {
            out.writeStartArray();
            out.writeNumber(at.getKey());
            out.writeNumber(at.getValue());
            out.writeEndArray();
        }
        out.writeEndArray();
        out.writeArrayFieldStart("quarantined");
        for (Quarantined q : quarantined) {
            out.writeStartArray();
            out.writeNumber(q.blockStart());
            out.writeNumber(q.lineInBlock());
            out.writeString(q.line());
            out.writeString(q.reason());
            out.writeString(q.detail());
            out.writeEndArray();
        }
        out.writeEndArray();
        out.writeEndObject();
    }
}
