package io.triggeronce.jobs.sql;

import io.triggeronce.jobs.tally.FileCounts;
import io.triggeronce.jobs.tally.Tally;
import java.util.List;
import org.apache.spark.sql.api.java.UDF10;

/**
 * Every parsed record counted on its way, as a SQL function: (source file, the time at or
 * before which its pattern drops it as late, in microseconds, whether a value was rescued,
 * the bits of the rules it breaks, why it cannot be used, where it is and what it says
 * when it cannot, and whether the declaration's `where` filters it) -> whether it is usable.
 * What each record is goes into the tally, per file (jobs/flow/tally.py, in the JVM). A
 * filtered record is usable: it goes on to the watermark, and is never late.
 */
public final class Count
        implements UDF10<String, Long, Boolean, Long, String, Long, Long, String, String, Boolean, Boolean> {
    private static final long serialVersionUID = 1L;

    private final Tally tally;
    private final List<String> rules; // bit i of `broken` is rules[i]

    // Rows come a part of a file at a time: the last file's counts serve the next row, mostly.
    private transient String lastFile;
    private transient long lastAttempt = -1;
    private transient FileCounts lastCounts;

    private FileCounts counts(String file) {
        org.apache.spark.TaskContext context = org.apache.spark.TaskContext.get();
        long attempt = context == null ? 0 : context.taskAttemptId();
        if (lastCounts == null || attempt != lastAttempt || !file.equals(lastFile)) {
            lastCounts = tally.file(file);
            lastFile = file;
            lastAttempt = attempt;
        }
        return lastCounts;
    }

    Count(Tally tally, List<String> rules) {
        this.tally = tally;
        this.rules = List.copyOf(rules);
    }

    @Override
    public Boolean call(
            String file,
            Long lateAtMicros,
            Boolean rescued,
            Long broken,
            String reason,
            Long blockStart,
            Long lineNumber,
            String line,
            String detail,
            Boolean filtered) {
        FileCounts counts = counts(file);
        counts.records++;
        boolean usable = reason == null;
        if (usable && Boolean.TRUE.equals(rescued)) {
            counts.rescued++;
        }
        if (broken != null && broken != 0) {
            for (int bit = 0; bit < rules.size(); bit++) {
                if ((broken & (1L << bit)) != 0) {
                    counts.violations.merge(rules.get(bit), 1L, Long::sum);
                }
            }
        }
        if (usable && Boolean.TRUE.equals(filtered)) {
            counts.filtered++;
        } else if (usable && lateAtMicros != null) {
            counts.lateAt.merge(lateAtMicros, 1L, Long::sum);
        }
        if (!usable) {
            counts.quarantined.add(new FileCounts.Quarantined(
                    blockStart == null ? 0 : blockStart, lineNumber == null ? 0 : lineNumber, line, reason, detail));
        }
        return usable;
    }
}
