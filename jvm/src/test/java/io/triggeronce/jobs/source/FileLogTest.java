package io.triggeronce.jobs.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FileLogTest {
    @TempDir
    java.nio.file.Path dir;

    private FileLog log() {
        return new FileLog(new Configuration(), new Path(dir.resolve("sources/0").toUri()), new Path(dir.resolve("landing").toString()));
    }

    private String file(String relative) {
        return FileLog.canonical(new Path(dir.resolve("landing").resolve(relative).toUri()));
    }

    private static FileLog.Entry entry(String uri, long batch) {
        return new FileLog.Entry(uri, 1_000 + batch, batch, 10);
    }

    @Test
    void aFolderIsAskedOfItsOwnFilesOnlyAndItsPartsCompact() {
        FileLog log = log();
        log.open();
        for (long id = 0; id < 25; id++) {
            log.write(id, List.of(entry(file("dt=2023-07-30/f" + id + ".json"), id), entry(file("other/g" + id + ".json"), id)));
        }
        FileLog again = log(); // a new start reads what the first wrote
        again.open();
        String day = again.folderKey(file("dt=2023-07-30/x.json"));
        assertEquals(25, again.taken(Set.of(day)).size());
        assertTrue(again.taken(Set.of(day)).containsKey(file("dt=2023-07-30/f24.json")));
        assertEquals(0, again.taken(Set.of(again.folderKey(file("dt=2023-07-31/x.json")))).size());
        assertEquals(24, again.head());
        assertEquals(2, again.entries(7).size());
        // Compacted every 10 parts: one compact file and the parts after it.
        List<String> parts = new ArrayList<>();
        for (java.io.File f : dir.resolve("sources/0/folders/" + day).toFile().listFiles()) {
            if (!f.getName().startsWith(".")) {
                parts.add(f.getName());
            }
        }
        parts.sort(null);
        assertEquals(List.of("19.compact", "20", "21", "22", "23", "24"), parts);
    }

    @Test
    void aLogOfSparksOwnSourceIsIndexedOnceAndAStoppedWriteIsRepaired() throws Exception {
        Files.createDirectories(dir.resolve("sources/0"));
        // Spark's form: entries 0-9 in 9.compact (spelled file:///), 10 on its own.
        StringBuilder compact = new StringBuilder("v1");
        for (int id = 0; id < 10; id++) {
            compact.append("\n{\"path\":\"").append(file("a" + id + ".json").replace("file:/", "file:///"))
                    .append("\",\"timestamp\":5,\"batchId\":").append(id).append("}");
        }
        Files.writeString(dir.resolve("sources/0/9.compact"), compact);
        Files.writeString(dir.resolve("sources/0/10"), "v1\n{\"path\":\"" + file("b.json") + "\",\"timestamp\":6,\"batchId\":10}");
        FileLog log = log();
        log.open();
        String root = log.folderKey(file("x.json"));
        assertEquals(11, log.taken(Set.of(root)).size());
        assertEquals(1, log.entries(3).size()); // from Spark's compact file
        assertEquals(10, log.head());
        // Entry 11 written, its parts not (a run that stopped): the next start repairs them.
        Files.writeString(dir.resolve("sources/0/11"), "v1\n{\"path\":\"" + file("c.json") + "\",\"timestamp\":7,\"batchId\":11,\"size\":3}");
        FileLog next = log();
        next.open();
        assertTrue(next.taken(Set.of(root)).containsKey(file("c.json")));
        assertThrows(IllegalStateException.class, () -> next.write(13, List.of(entry(file("d.json"), 13))));
    }
}
