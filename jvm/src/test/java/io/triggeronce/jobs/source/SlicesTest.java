package io.triggeronce.jobs.source;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

class SlicesTest {
    @Test
    void largeFilesAreCutSmallOnesPackedAndCompressedOnesKeptWhole() {
        List<Slices.File> files = List.of(
                new Slices.File("file:/big.json", 250, true),
                new Slices.File("file:/big.json.gz", 250, false),
                new Slices.File("file:/a.json", 10, true),
                new Slices.File("file:/b.json", 10, true),
                new Slices.File("file:/empty.json", 0, true));
        List<Slices.Task> tasks = Slices.tasks(files, 100, 5, 1);
        long bytes = tasks.stream().flatMap(t -> t.slices().stream()).mapToLong(Slices.Slice::length).sum();
        assertEquals(520, bytes); // every byte once, the empty file in no task
        assertEquals(List.of(250L), tasks.get(0).slices().stream().map(Slices.Slice::length).toList()); // the gzip, whole
        long cut = tasks.stream().flatMap(t -> t.slices().stream()).filter(s -> s.uri().equals("file:/big.json")).count();
        assertEquals(3, cut); // 100 + 100 + 50
        Slices.Task last = tasks.get(tasks.size() - 1);
        // The big file's last 50 bytes, then both small files (each counted 5 more, as opened).
        assertEquals(List.of("file:/big.json", "file:/a.json", "file:/b.json"),
                last.slices().stream().map(Slices.Slice::uri).toList());
    }

    @Test
    void aSmallBatchIsSpreadOverTheCores() {
        List<Slices.File> files = List.of(new Slices.File("file:/a.json", 1_000, true));
        assertEquals(4, Slices.tasks(files, 128 << 20, 100, 4).size()); // 1,100 / 4 per core: 275 a slice
    }
}
