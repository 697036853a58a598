package io.triggeronce.jobs.fs;

import java.io.IOException;
import java.nio.file.Files;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.RemoteIterator;

/**
 * The local file system as Hadoop's, but a listing never shows a symbolic link: a landing is
 * its regular files (and folders), and a link may point anywhere, at its own folder too (a loop
 * that never ends). What a listing is given to start from is resolved as the operating system
 * resolves it; only what it finds is checked. Every Spark application of the product lists
 * `file:` through it (fs.file.impl, jobs/session.py); the product's own listing skips the same
 * (jobs/lake/fs.py).
 */
public class NoLinkLocalFileSystem extends LocalFileSystem {
    public NoLinkLocalFileSystem() {
        super(new Raw());
    }

    @Override
    public RemoteIterator<LocatedFileStatus> listFiles(Path folder, boolean recursive) throws IOException {
        return Listed.files(this::listLocatedStatus, folder, recursive);
    }

    static final class Raw extends RawLocalFileSystem {
        @Override
        public FileStatus[] listStatus(Path folder) throws IOException {
            return Listed.kept(super.listStatus(folder), status -> !isLink(status.getPath()));
        }

        private boolean isLink(Path path) {
            return Files.isSymbolicLink(pathToFile(path).toPath());
        }
    }
}
