package io.triggeronce.jobs.source;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The files the landing source has taken, in its checkpoint folder (`sources/N`):
 *
 * <pre>
 *   N/K                      entry K: the files one batch took, one JSON line each (path, a
 *                            %-encoded URI; timestamp, its modification time in ms; batchId, K;
 *                            size), after a "v1" line: the form Spark's own file source writes,
 *                            whose K.compact files (every entry so far) are read too
 *   N/folders/version        the index below is whole (written once, after carrying a
 *                            checkpoint of Spark's source over)
 *   N/folders/F/K            the files of landing folder F (a hash of its path under the
 *                            landing) that entry K took; F/K.compact: all of them through K
 * </pre>
 *
 * A start asks only the folders it lists which of their files were taken: what it reads grows
 * with those folders, not with every file ever landed. Entry K is written first, then its
 * folders' parts (a start repairs those of the newest entry, the only one a crash can leave
 * without them). Entries older than the newest {@link #RETAINED} are deleted once the index is
 * whole: Spark plans no batch from them (it keeps the last 100 batches' offsets).
 */
final class FileLog {
    static final int RETAINED = 1000;
    static final int COMPACT_EVERY = 10; // parts of a folder before they are compacted into one
    private static final String VERSION = "v1";
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A file taken: where (a %-encoded URI, as Spark names files), when it was modified, by
     * which entry, and its size (-1 in entries Spark's source wrote). */
    record Entry(String path, long timestamp, long batchId, long size) {}

    private final FileSystem fs;
    private final Path folder;
    private final Path landing; // what folder keys are relative to
    private long head = Long.MIN_VALUE; // the newest entry, once known

    FileLog(Configuration conf, Path folder, Path landing) {
        try {
            this.fs = folder.getFileSystem(conf);
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
        this.folder = folder;
        this.landing = landing;
    }

    /** The newest entry (-1: none), from one listing of the log's folder. */
    synchronized long head() {
        if (head == Long.MIN_VALUE) {
            head = entryIds().keySet().stream().mapToLong(Long::longValue).max().orElse(-1);
        }
        return head;
    }

    /** Entry id -> its file's name ("7", "9.compact"). */
    private Map<Long, String> entryIds() {
        Map<Long, String> ids = new TreeMap<>();
        try {
            if (!fs.exists(folder)) {
                return ids;
            }
            for (FileStatus status : fs.listStatus(folder)) {
                String name = status.getPath().getName();
                String stem = name.endsWith(".compact") ? name.substring(0, name.length() - 8) : name;
                if (!stem.isEmpty() && stem.chars().allMatch(Character::isDigit)) {
                    ids.merge(Long.parseLong(stem), name, (a, b) -> a.endsWith(".compact") ? b : a);
                }
            }
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
        return ids;
    }

    /** The files entry `id` took, from its own file or a compact file of Spark's that holds it. */
    List<Entry> entries(long id) {
        Path own = new Path(folder, Long.toString(id));
        try {
            if (fs.exists(own)) {
                return read(own);
            }
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
        for (Map.Entry<Long, String> file : entryIds().entrySet()) {
            if (file.getKey() >= id && file.getValue().endsWith(".compact")) {
                return read(new Path(folder, file.getValue())).stream().filter(e -> e.batchId() == id).toList();
            }
        }
        throw new UncheckedIOException(new FileNotFoundException("entry " + id + " of the file log " + folder + " is missing"));
    }

    /** Carry a log of Spark's own source over (once: its index built from every entry), and
     * repair the folder parts of the newest entry (a run that stopped between the two). */
    synchronized void open() {
        Path version = new Path(new Path(folder, "folders"), "version");
        try {
            long newest = head();
            if (!fs.exists(version)) {
                Map<String, List<Entry>> byFolder = new HashMap<>();
                for (Entry entry : allEntries().values()) {
                    byFolder.computeIfAbsent(folderKey(entry.path()), k -> new ArrayList<>()).add(entry);
                }
                for (Map.Entry<String, List<Entry>> part : byFolder.entrySet()) {
                    writeLines(partPath(part.getKey(), newest + ".compact"), part.getValue());
                }
                writeText(version, VERSION + "\n");
            } else if (newest >= 0) {
                writeParts(newest, entries(newest));
            }
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
    }

    /** Every entry of the log as Spark's source restores it: the newest compact file and the
     * entries after it (a path taken twice: its first entry). */
    private Map<String, Entry> allEntries() {
        Map<Long, String> ids = entryIds();
        long compact = ids.entrySet().stream().filter(e -> e.getValue().endsWith(".compact"))
                .mapToLong(Map.Entry::getKey).max().orElse(-1);
        Map<String, Entry> all = new LinkedHashMap<>();
        for (Map.Entry<Long, String> file : ids.entrySet()) {
            if (file.getKey() >= compact) {
                for (Entry entry : read(new Path(folder, file.getValue()))) {
                    all.putIfAbsent(canonical(entry.path()), entry);
                }
            }
        }
        return all;
    }

    /** Of the files in these landing folders (keys, {@link #folderKey}), the ones taken:
     * location ({@link #canonical}) -> entry. */
    synchronized Map<String, Entry> taken(Collection<String> keys) {
        Map<String, Entry> found = new HashMap<>();
        for (String key : keys) {
            found.putAll(readFolder(key));
        }
        return found;
    }

    private Map<String, Entry> readFolder(String key) {
        Path part = new Path(new Path(folder, "folders"), key);
        Map<String, Entry> found = new HashMap<>();
        try {
            if (!fs.exists(part)) {
                return found;
            }
            Map<Long, Path> plain = new TreeMap<>();
            long compact = -1;
            Path compactPath = null;
            long newest = head();
            for (FileStatus status : fs.listStatus(part)) {
                String name = status.getPath().getName();
                boolean isCompact = name.endsWith(".compact");
                String stem = isCompact ? name.substring(0, name.length() - 8) : name;
                if (stem.isEmpty() || !stem.chars().allMatch(Character::isDigit) || Long.parseLong(stem) > newest) {
                    continue; // a temporary file, or a part of an entry that does not exist
                }
                long id = Long.parseLong(stem);
                if (isCompact && id > compact) {
                    compact = id;
                    compactPath = status.getPath();
                } else if (!isCompact) {
                    plain.put(id, status.getPath());
                }
            }
            if (compactPath != null) {
                read(compactPath).forEach(e -> found.putIfAbsent(canonical(e.path()), e));
            }
            for (Map.Entry<Long, Path> later : plain.entrySet()) {
                if (later.getKey() > compact) {
                    read(later.getValue()).forEach(e -> found.putIfAbsent(canonical(e.path()), e));
                }
            }
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
        return found;
    }

    /** Write entry `id` (the next after the head): its files, then their folders' parts. */
    synchronized void write(long id, List<Entry> entries) {
        if (id != head() + 1) {
            throw new IllegalStateException("entry " + id + " of " + folder + " after entry " + head()
                    + ": another query wrote to this checkpoint (one run per checkpoint, under its lock)");
        }
        try {
            writeLines(new Path(folder, Long.toString(id)), entries);
            head = id;
            writeParts(id, entries);
            Path old = new Path(folder, Long.toString(id - RETAINED));
            if (id >= RETAINED && fs.exists(old)) {
                fs.delete(old, false);
            }
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
    }

    /** Entry `id`'s files, in their folders' parts; a folder with enough parts compacted into one. */
    private void writeParts(long id, List<Entry> entries) throws IOException {
        Map<String, List<Entry>> byFolder = new LinkedHashMap<>();
        for (Entry entry : entries) {
            byFolder.computeIfAbsent(folderKey(entry.path()), k -> new ArrayList<>()).add(entry);
        }
        for (Map.Entry<String, List<Entry>> part : byFolder.entrySet()) {
            writeLines(partPath(part.getKey(), Long.toString(id)), part.getValue());
            compactIfDue(part.getKey(), id);
        }
    }

    /** A folder's parts, once there are enough of them, as one (read when due, not kept: a run
     * over a million files would hold every one of them). */
    private void compactIfDue(String key, long id) throws IOException {
        Path part = new Path(new Path(folder, "folders"), key);
        FileStatus[] files = fs.listStatus(part);
        List<Path> older = new ArrayList<>();
        int plain = 0;
        for (FileStatus status : files) {
            String name = status.getPath().getName();
            if (!name.startsWith(".") && !name.equals(Long.toString(id)) && !name.equals(id + ".compact")) {
                older.add(status.getPath());
            }
            if (!name.startsWith(".") && !name.endsWith(".compact")) {
                plain++;
            }
        }
        if (plain < COMPACT_EVERY) {
            return;
        }
        writeLines(partPath(key, id + ".compact"), readFolder(key).values());
        for (Path path : older) {
            fs.delete(path, false);
        }
        fs.delete(partPath(key, Long.toString(id)), false);
    }

    private Path partPath(String key, String name) {
        return new Path(new Path(new Path(folder, "folders"), key), name);
    }

    /** The key of the landing folder a file is in: a hash of its path under the landing, decoded
     * ('dt=2023-07-30/hour=10'; '' for a file in the landing itself), or of its whole location
     * outside it. jobs/accounting/source_log.py makes the same key from a listing. */
    String folderKey(String uri) {
        Path parent = new Path(java.net.URI.create(uri)).getParent();
        String under = landing.toUri().getPath().replaceAll("/+$", "");
        String path = parent.toUri().getPath();
        String relative;
        if (path.equals(under)) {
            relative = "";
        } else if (path.startsWith(under + "/")) {
            relative = path.substring(under.length() + 1);
        } else {
            String scheme = parent.toUri().getScheme();
            relative = scheme == null || scheme.equals("file") ? path : scheme + "://" + parent.toUri().getAuthority() + path;
        }
        return key(relative);
    }

    /** A file's location in one spelling ('file:/x/a%20b.json', 's3a://b/k'): a listing and
     * Spark's own log may spell one file 'file:/x' or 'file:///x'. */
    static String canonical(Path path) {
        java.net.URI uri = path.toUri();
        try {
            String scheme = uri.getScheme() == null ? "file" : uri.getScheme();
            String authority = uri.getAuthority() == null || uri.getAuthority().isEmpty() ? null : uri.getAuthority();
            return new java.net.URI(scheme, authority, uri.getPath(), null, null).toString();
        } catch (java.net.URISyntaxException error) {
            throw new IllegalArgumentException(error);
        }
    }

    static String canonical(String uri) {
        return canonical(new Path(java.net.URI.create(uri)));
    }

    static String key(String relative) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(relative.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest, 0, 16);
        } catch (NoSuchAlgorithmException error) {
            throw new IllegalStateException(error);
        }
    }

    private List<Entry> read(Path path) {
        List<Entry> found = new ArrayList<>();
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(fs.open(path), StandardCharsets.UTF_8))) {
            String line = lines.readLine(); // the version
            if (line == null || !line.startsWith("v")) {
                throw new IOException(path + " is not a file log of version v1: " + line);
            }
            while ((line = lines.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                JsonNode node = JSON.readTree(line);
                found.add(new Entry(node.get("path").asText(), node.get("timestamp").asLong(),
                        node.get("batchId").asLong(), node.path("size").asLong(-1)));
            }
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
        return found;
    }

    private void writeLines(Path path, Collection<Entry> entries) throws IOException {
        StringWriter text = new StringWriter();
        text.write(VERSION);
        try (JsonGenerator out = new JsonFactory().createGenerator(text)) {
            out.setRootValueSeparator(null);
            for (Entry entry : entries) {
                out.writeRaw('\n');
                out.writeStartObject();
                out.writeStringField("path", entry.path());
                out.writeNumberField("timestamp", entry.timestamp());
                out.writeNumberField("batchId", entry.batchId());
                out.writeNumberField("size", entry.size());
                out.writeEndObject();
            }
        }
        writeText(path, text.toString());
    }

    /** Written whole or not at all: a temporary file beside it, then renamed over it. */
    private void writeText(Path path, String text) throws IOException {
        Path temporary = new Path(path.getParent(), "." + path.getName() + ".tmp");
        try (OutputStream out = fs.create(temporary, true)) {
            out.write(text.getBytes(StandardCharsets.UTF_8));
        }
        if (fs.exists(path)) {
            fs.delete(path, false); // a part written again (a repair): its content is the same
        }
        if (!fs.rename(temporary, path)) {
            throw new IOException("could not rename " + temporary + " to " + path);
        }
    }
}
