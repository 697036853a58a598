package io.triggeronce.jobs.source;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.deploy.SparkHadoopUtil;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.errors.QueryCompilationErrors;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.datasources.text.TextFileFormat;
import org.apache.spark.sql.execution.streaming.Source;
import org.apache.spark.sql.sources.StreamSourceProvider;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import java.io.IOException;
import java.io.UncheckedIOException;
import scala.Option;
import scala.Tuple2;
import scala.collection.immutable.Map;
import scala.collection.immutable.Nil$;
import scala.collection.immutable.Seq;

/**
 * The streaming format "text" whose batches are sized (SizedFileSource): Spark's text source
 * with two more options, "sizing.cap" (the most bytes of new files a batch takes) and
 * "sizing.stateBudget" (the most the state may hold). A file format still, so that a query
 * sees its files' `_metadata` as it does with "text".
 */
public class SizedText extends TextFileFormat implements StreamSourceProvider {
    static final StructType SCHEMA = new StructType().add("value", DataTypes.StringType);

    @Override
    public Tuple2<String, StructType> sourceSchema(SQLContext sqlContext, Option<StructType> schema,
                                                   String providerName, Map<String, String> parameters) {
        String path = option(parameters, "path", null);
        if (path == null) {
            throw new IllegalArgumentException("'path' is not specified");
        }
        SparkSession session = (SparkSession) sqlContext.sparkSession();
        Path hadoopPath = new Path(path);
        boolean missing;
        try { // as Spark checks it for "text": a path that is not a glob must exist
            FileSystem fs = hadoopPath.getFileSystem(session.sessionState().newHadoopConf());
            missing = !SparkHadoopUtil.get().isGlobPath(hadoopPath) && !fs.exists(hadoopPath);
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
        if (missing) {
            throw (RuntimeException) QueryCompilationErrors.dataPathNotExistError(path); // Spark's own error
        }
        return new Tuple2<>("FileSource[" + path + "]", SCHEMA);
    }

    @Override
    @SuppressWarnings("unchecked")
    public Source createSource(SQLContext sqlContext, String metadataPath, Option<StructType> schema,
                               String providerName, Map<String, String> parameters) {
        return new SizedFileSource(
            (SparkSession) sqlContext.sparkSession(),
            option(parameters, "path", null),
            SCHEMA,
            (Seq<String>) (Object) Nil$.MODULE$,
            metadataPath,
            parameters,
            Long.parseLong(option(parameters, "sizing.cap", "0")),
            Long.parseLong(option(parameters, "sizing.stateBudget", "0")));
    }

    /** An option by its name in any case, as Spark's own are. */
    private static String option(Map<String, String> parameters, String name, String otherwise) {
        scala.collection.Iterator<Tuple2<String, String>> entries = parameters.iterator();
        while (entries.hasNext()) {
            Tuple2<String, String> entry = entries.next();
            if (entry._1().equalsIgnoreCase(name)) {
                return entry._2();
            }
        }
        return otherwise;
    }
}
