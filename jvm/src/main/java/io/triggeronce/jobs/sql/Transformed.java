package io.triggeronce.jobs.sql;

import io.triggeronce.jobs.tally.FileCounts;
import io.triggeronce.jobs.tally.LastFile;
import io.triggeronce.jobs.tally.Tally;
import org.apache.spark.sql.api.java.UDF2;

/**
 * Every record a declaration's transform gives back, counted on its way out, as a SQL
 * function: (source file, the time at or before which its pattern drops it as late, in
 * microseconds) -> true. {@link Count} counted each record handed to the transform as
 * filtered; one that comes out is taken back from there, so the ones the transform dropped
 * stay filtered, per file.
 *
 * <p>A transform works row by row: what comes out of it in a task came into it in the same
 * task, so a task giving back more records of a file than it handed in is a transform that
 * adds rows (an explode) or moves them between tasks (an aggregate, a distinct, a sort, a
 * repartition, a join that shuffles). Either fails the batch, naming the transform, before
 * anything of it is committed: its rows could not be accounted.
 */
public final class Transformed implements UDF2<String, Long, Boolean> {
    private static final long serialVersionUID = 1L;

    private final Tally tally;
    private final String transform; // module:function, as declared

    private transient LastFile last; // made in each task's copy

    Transformed(Tally tally, String transform) {
        this.tally = tally;
        this.transform = transform;
    }

    private FileCounts counts(String file) {
        if (last == null) {
            last = new LastFile();
        }
        return last.counts(tally, file);
    }

    @Override
    public Boolean call(String file, Long lateAtMicros) {
        if (file == null) {
            throw new IllegalStateException("transform " + transform + " gave back a record with no "
                    + "_jobs_source_file: a transform keeps the product's columns as they were");
        }
        FileCounts counts = counts(file);
        if (counts.handed <= 0) {
            throw new IllegalStateException("transform " + transform + " gave back more records of " + file
                    + " than it was handed: a transform may drop records, not add them (no explode), and works "
                    + "record by record (no aggregate, distinct, sort, repartition or join that shuffles)");
        }
        counts.handed--;
        counts.filtered--;
        if (lateAtMicros != null) {
            counts.lateAt.merge(lateAtMicros, 1L, Long::sum);
        }
        return true;
    }
}
