package io.triggeronce.jobs.fs;

import java.io.IOException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathFilter;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.s3a.S3AFileSystem;

/**
 * s3a as Hadoop's, but a listing shows only what lies directly under the folder listed. A key
 * with an empty, "." or ".." segment ("landing/p/../../secret/x.json") names another place once
 * Hadoop's Path folds it ("secret/x.json": another prefix's object, or one that is not there):
 * listed folder by folder, such a key shows as an entry outside its folder, and is left out with
 * everything under it. Every Spark application of the product lists `s3a:` through it
 * (fs.s3a.impl, jobs/lake/s3.py), folder by folder; the product's own listing skips the same keys
 * and names them (jobs/lake/s3.py).
 */
public class PlainKeyS3AFileSystem extends S3AFileSystem {
    @Override
    public FileStatus[] listStatus(Path folder) throws IOException {
        Path listed = makeQualified(folder);
        return Listed.kept(super.listStatus(folder), status -> inside(listed, status));
    }

    @Override
    public RemoteIterator<FileStatus> listStatusIterator(Path folder) throws IOException {
        Path listed = makeQualified(folder);
        return Listed.kept(super.listStatusIterator(folder), status -> inside(listed, status));
    }

    @Override
    public RemoteIterator<LocatedFileStatus> listLocatedStatus(Path folder) throws IOException {
        Path listed = makeQualified(folder);
        return Listed.kept(super.listLocatedStatus(folder), status -> inside(listed, status));
    }

    @Override
    public RemoteIterator<LocatedFileStatus> listLocatedStatus(Path folder, PathFilter filter) throws IOException {
        Path listed = makeQualified(folder);
        return Listed.kept(super.listLocatedStatus(folder, filter), status -> inside(listed, status));
    }

    /** Folder by folder (one request per folder, not one flat listing of every key under it),
     * so that a folded key is seen as what it is. */
    @Override
    public RemoteIterator<LocatedFileStatus> listFiles(Path folder, boolean recursive) throws IOException {
        return Listed.files(this::listLocatedStatus, folder, recursive);
    }

    /** Directly under the folder listed, or the file listed itself. */
    static boolean inside(Path listed, FileStatus status) {
        Path path = status.getPath();
        return listed.equals(path.getParent()) || (!status.isDirectory() && listed.equals(path));
    }
}
