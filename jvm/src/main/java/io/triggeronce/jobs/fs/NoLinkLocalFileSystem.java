package io.triggeronce.jobs.fs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.attribute.BasicFileAttributes;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.RemoteIterator;

/**
 * The local file system as Hadoop's, but a listing shows only regular files and folders, never
 * a symbolic link (it may point anywhere, at its own folder too: a loop that never ends), a fifo
 * or a device: a landing is its regular files. What a listing is given to start from is resolved as the operating system
 * resolves it; only what it finds is checked. The landing source lists `file:` through it
 * (fs.file.impl in its options, jobs/flow/source.py); the product's own listing skips the same
 * (jobs/lake/listings.py).
 */
public class NoLinkLocalFileSystem extends LocalFileSystem {
    public NoLinkLocalFileSystem() {
        super(new Raw());
    }

    @Override
    public RemoteIterator<LocatedFileStatus> listFiles(Path folder, boolean recursive) throws IOException {
        return Listed.files(this::listLocatedStatus, folder, recursive);
    }

    /** Hadoop's own joins ".<name>.crc" as a path string, where a name with a ':' ("a:b.json")
     * reads as a URI with a scheme and every read of the file failed; as its listing does, the
     * name is taken as a path. */
    @Override
    public Path getChecksumFile(Path file) {
        return new Path(file.getParent(), new Path(null, null, "." + file.getName() + ".crc"));
    }

    static final class Raw extends RawLocalFileSystem {
        @Override
        public FileStatus[] listStatus(Path folder) throws IOException {
            return Listed.kept(super.listStatus(folder), status -> isFileOrFolder(status.getPath()));
        }

        /** A regular file or a folder, as it is (not through a link); not a link, a fifo (whose
         * read waits for a writer), a device, or a name the JVM cannot open (not UTF-8). */
        private boolean isFileOrFolder(Path path) {
            try {
                BasicFileAttributes found = Files.readAttributes(
                    pathToFile(path).toPath(), BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                return found.isRegularFile() || found.isDirectory();
            } catch (IOException | InvalidPathException gone) {
                return false;
            }
        }
    }
}
