package io.triggeronce.jobs.sql;

import io.triggeronce.jobs.tally.FileCounts;
import io.triggeronce.jobs.tally.LastFile;
import io.triggeronce.jobs.tally.Tally;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.api.java.UDF8;

/**
 * Every parsed record counted on its way, as a SQL function: (source file, the time at or
 * before which its pattern drops it as late, in microseconds, whether a value was rescued,
 * the bits of the rules it breaks, why it cannot be used, where it is and what it says
 * when it cannot (a struct of block start, line number, line and detail; null when it can),
 * whether the declaration's `where` filters it, and a hash of its pattern's keys, or null)
 * -> whether it is usable. What each record is goes into the tally, per file
 * (jobs/flow/tally.py, in the JVM), and the keys of each usable record the `where` keeps
 * into the batch's distinct keys. A filtered record is usable: it goes on to the watermark,
 * and is never late.
 *
 * <p>In a pipeline with a transform (jobs/flow/transform.py), a usable record the `where`
 * keeps is handed to it: counted as filtered until it comes out of the transform, where
 * {@link Transformed} takes it back and records when it is late.
 */
public final class Count
        implements UDF8<String, Long, Boolean, Long, String, Row, Boolean, Long, Boolean> {
    private static final long serialVersionUID = 1L;

    private final Tally tally;
    private final List<String> rules; // bit i of `broken` is rules[i]
    private final boolean transforms; // the records it keeps go through a transform next

    private transient LastFile last; // made in each task's copy

    private FileCounts counts(String file) {
        if (last == null) {
            last = new LastFile();
        }
        return last.counts(tally, file);
    }

    Count(Tally tally, List<String> rules, boolean transforms) {
        this.tally = tally;
        this.rules = List.copyOf(rules);
        this.transforms = transforms;
    }

    @Override
    public Boolean call(
            String file,
            Long lateAtMicros,
            Boolean rescued,
            Long broken,
            String reason,
            Row where,
            Boolean filtered,
            Long keyHash) {
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
        if (usable && keyHash != null && !Boolean.TRUE.equals(filtered)) {
            last.keys(tally).add(keyHash);
        }
        if (usable && Boolean.TRUE.equals(filtered)) {
            counts.filtered++;
        } else if (usable && transforms) {
            counts.filtered++; // until the transform gives it back
            counts.handed++;
        } else if (usable && lateAtMicros != null) {
            counts.lateAt.merge(lateAtMicros, 1L, Long::sum);
        }
        if (!usable) {
            counts.quarantined.add(new FileCounts.Quarantined(
                    where == null || where.isNullAt(0) ? 0 : where.getLong(0),
                    where == null || where.isNullAt(1) ? 0 : where.getLong(1),
                    where == null ? null : where.getString(2),
                    reason,
                    where == null ? null : where.getString(3)));
        }
        return usable;
    }
}
