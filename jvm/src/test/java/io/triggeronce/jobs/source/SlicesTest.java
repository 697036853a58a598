package io.triggeronce.jobs.source;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class SlicesTest {
    @Test
    void largeFilesAreCutAndCompressedOnesKeptWhole() {
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
    }

    @Test
    void smallFilesArePackedIntoEqualTasks() {
        List<Slices.File> files = IntStream.range(0, 10).mapToObj(i -> new Slices.File("file:/" + i, 10, true)).toList();
        // 10 files of 10 bytes, each counted 5 more as opened: 150 bytes, two tasks of a 100-byte split.
        assertEquals(List.of(5, 5), sizes(Slices.tasks(files, 100, 5, 1)));
    }

    @Test
    void everyCoreEndsItsLastTaskTogether() {
        // A batch of 43 equal files on two cores: Spark's packing makes tasks of 21, 21 and 1
        // files, the last read by one core while the other waits.
        List<Slices.File> files = IntStream.range(0, 43).mapToObj(i -> new Slices.File("file:/" + i, 1_500, true)).toList();
        assertEquals(List.of(22, 21), sizes(Slices.tasks(files, 128 << 20, 64, 2)));
        // Past the split's most bytes: as many tasks as splits, rounded up to a multiple of the cores.
        List<Slices.File> more = IntStream.range(0, 20).mapToObj(i -> new Slices.File("file:/" + i, 100, true)).toList();
        List<Integer> eight = sizes(Slices.tasks(more, 300, 0, 2)); // 2,000 bytes: 7 splits of 300, so 8 tasks
        assertEquals(List.of(3, 3, 3, 3, 2, 2, 2, 2), eight);
    }

    private static List<Integer> sizes(List<Slices.Task> tasks) {
        return tasks.stream().map(t -> t.slices().size()).toList();
    }

    @Test
    void aSmallBatchIsSpreadOverTheCores() {
        List<Slices.File> files = List.of(new Slices.File("file:/a.json", 1_000, true));
        assertEquals(4, Slices.tasks(files, 128 << 20, 100, 4).size()); // 1,100 / 4 per core: 275 a slice
    }
}
