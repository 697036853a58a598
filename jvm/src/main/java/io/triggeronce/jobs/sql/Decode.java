package io.triggeronce.jobs.sql;

import io.triggeronce.jobs.decode.Kind;
import io.triggeronce.jobs.decode.LineDecoder;
import io.triggeronce.jobs.tally.FileCounts;
import io.triggeronce.jobs.tally.Tally;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF4;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The decoder as a SQL function: (line as bytes, source file, the byte its part of the file
 * starts at, the file's size) -> a struct of the declared fields (by their place: FIELD0, ...), the line's number in its
 * part of the file (counted from 1, blank lines too), the reason and detail, the new fields
 * and what was rescued when asked, and whether the line is blank. The lines read of each
 * file are counted in the tally, if any. Rows of one part of a file come in order within a
 * task, which numbers them (jobs/accounting/lines.py makes it a line number in the file).
 */
public final class Decode implements UDF4<byte[], String, Long, Long, Row> {
    private static final long serialVersionUID = 1L;
    // The product's own names, in a namespace no source field may use (jobs/columns.py).
    public static final String LINE_NUMBER = "_jobs_line_number";
    public static final String REASON = "_jobs_reason";
    public static final String DETAIL = "_jobs_detail";
    public static final String NEW_FIELDS = "_jobs_new_fields";
    public static final String RESCUED = "_jobs_rescued";
    public static final String BLANK = "_jobs_blank";
    // The declared fields, by their place: named as the records name them, one could be one of these.
    public static final String FIELD = "_jobs_field_";

    private final LineDecoder decoder;
    private final Map<String, String> quarantinedFiles; // as the product names them -> why
    private final Tally tally;
    private transient long attempt = -1;
    private transient Map<String, long[]> counted; // (file, block start) -> lines read so far
    private transient Map<String, String> byHand; // file as Spark names it -> why, or ""

    Decode(LineDecoder decoder, Map<String, String> quarantinedFiles, Tally tally) {
        this.decoder = decoder;
        this.quarantinedFiles = new HashMap<>(quarantinedFiles);
        this.tally = tally;
    }

    // The part of a file the rows come from: they come a part at a time, so the last one's
    // counter and counts serve the next row, mostly.
    private transient String lastFile;
    private transient long lastBlock;
    private transient long[] lastCounter;
    private transient String lastWhy;
    private transient FileCounts lastCounts;

    @Override
    public Row call(byte[] line, String file, Long blockStart, Long fileSize) {
        startTask();
        long block = blockStart == null ? 0 : blockStart;
        if (lastCounter == null || block != lastBlock || !file.equals(lastFile)) {
            lastCounter = counted.computeIfAbsent(file + "\u0000" + block, key -> new long[1]);
            lastWhy = quarantinedFiles.isEmpty() ? "" : byHand.computeIfAbsent(file, f -> quarantinedFiles.getOrDefault(Paths.fromSpark(f), ""));
            lastCounts = tally == null ? null : tally.file(file);
            lastFile = file;
            lastBlock = block;
        }
        long number = ++lastCounter[0];
        LineDecoder.Decoded decoded = lastWhy.isEmpty() ? decoder.decode(line) : decoder.quarantinedByHand(line, lastWhy);
        if (lastCounts != null) {
            FileCounts counts = lastCounts;
            if (counts.sizeBytes == null) {
                counts.sizeBytes = fileSize;
            }
            counts.lines++;
            counts.lineBytes += line.length;
            if (decoded.blank) {
                counts.blank++;
            }
        }
        int declared = decoder.fields().size();
        Object[] out = new Object[declared + 4 + (decoder.handsBackNewFields() ? 1 : 0) + (decoder.rescues() ? 1 : 0)];
        if (!decoded.blank) {
            System.arraycopy(decoder.sparkValues(decoded), 0, out, 0, declared);
        }
        int at = declared;
        out[at++] = number;
        out[at++] = decoded.reason;
        out[at++] = decoded.detail;
        if (decoder.handsBackNewFields()) {
            out[at++] = decoded.newKeys;
        }
        if (decoder.rescues()) {
            out[at++] = decoded.rescued;
        }
        out[at] = decoded.blank;
        return RowFactory.create(out);
    }

    private void startTask() {
        TaskContext context = TaskContext.get();
        long now = context == null ? 0 : context.taskAttemptId();
        if (counted == null || now != attempt) {
            attempt = now;
            counted = new HashMap<>();
            byHand = new HashMap<>();
            lastCounter = null;
        }
    }

    /** The struct the function hands back. */
    public StructType returnType() {
        List<StructField> fields = new ArrayList<>();
        for (Kind.Field field : decoder.fields()) {
            fields.add(DataTypes.createStructField(FIELD + fields.size(), sparkType(field.kind()), true));
        }
        fields.add(DataTypes.createStructField(LINE_NUMBER, DataTypes.LongType, false));
        fields.add(DataTypes.createStructField(REASON, DataTypes.StringType, true));
        fields.add(DataTypes.createStructField(DETAIL, DataTypes.StringType, true));
        if (decoder.handsBackNewFields()) {
            fields.add(DataTypes.createStructField(NEW_FIELDS, DataTypes.createArrayType(DataTypes.StringType), true));
        }
        if (decoder.rescues()) {
            fields.add(DataTypes.createStructField(RESCUED, DataTypes.StringType, true));
        }
        fields.add(DataTypes.createStructField(BLANK, DataTypes.BooleanType, false));
        return DataTypes.createStructType(fields);
    }

    /** The Spark type a field is handed back as (a timestamp or a date as text). */
    static DataType sparkType(Kind kind) {
        if (kind instanceof Kind.Struct struct) {
            List<StructField> fields = new ArrayList<>();
            for (Kind.Field field : struct.fields()) {
                fields.add(DataTypes.createStructField(field.name(), sparkType(field.kind()), true));
            }
            return DataTypes.createStructType(fields);
        }
        if (kind instanceof Kind.ArrayOf array) {
            return DataTypes.createArrayType(sparkType(array.element()), true);
        }
        if (kind instanceof Kind.Decimal decimal) {
            return DataTypes.createDecimalType(decimal.precision(), decimal.scale());
        }
        return switch (((Kind.Scalar) kind).name()) {
            case "long" -> DataTypes.LongType;
            case "int" -> DataTypes.IntegerType;
            case "double" -> DataTypes.DoubleType;
            case "boolean" -> DataTypes.BooleanType;
            default -> DataTypes.StringType; // string, timestamp, date
        };
    }
}
