package io.triggeronce.jobs.fs;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.function.Predicate;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;

/** What the product's file systems share: a listing with some entries left out. */
final class Listed {
    private Listed() {
    }

    static FileStatus[] kept(FileStatus[] listed, Predicate<FileStatus> keep) {
        List<FileStatus> kept = new ArrayList<>(listed.length);
        for (FileStatus status : listed) {
            if (keep.test(status)) {
                kept.add(status);
            }
        }
        return kept.size() == listed.length ? listed : kept.toArray(new FileStatus[0]);
    }

    static <T extends FileStatus> RemoteIterator<T> kept(RemoteIterator<T> listed, Predicate<FileStatus> keep) {
        return new Lookahead<>() {
            @Override
            T find() throws IOException {
                while (listed.hasNext()) {
                    T candidate = listed.next();
                    if (keep.test(candidate)) {
                        return candidate;
                    }
                }
                return null;
            }
        };
    }

    /** How a folder's entries are listed, one level at a time (a file system's own, filtered). */
    interface Level {
        RemoteIterator<LocatedFileStatus> list(Path folder) throws IOException;
    }

    /** Every file under `folder` (or `folder` itself, a file), folder by folder through `level`,
     * so that each level's rule applies at every depth. */
    static RemoteIterator<LocatedFileStatus> files(Level level, Path folder, boolean recursive) throws IOException {
        Deque<RemoteIterator<LocatedFileStatus>> open = new ArrayDeque<>();
        open.push(level.list(folder));
        return new Lookahead<>() {
            @Override
            LocatedFileStatus find() throws IOException {
                while (!open.isEmpty()) {
                    if (!open.peek().hasNext()) {
                        open.pop();
                        continue;
                    }
                    LocatedFileStatus entry = open.peek().next();
                    if (!entry.isDirectory()) {
                        return entry;
                    }
                    if (recursive) {
                        open.push(level.list(entry.getPath()));
                    }
                }
                return null;
            }
        };
    }

    /** An iterator that finds its next entry ahead (`find`, null at the end). */
    abstract static class Lookahead<T> implements RemoteIterator<T> {
        private T next;

        abstract T find() throws IOException;

        @Override
        public boolean hasNext() throws IOException {
            if (next == null) {
                next = find();
            }
            return next != null;
        }

        @Override
        public T next() throws IOException {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            T found = next;
            next = null;
            return found;
        }
    }
}
