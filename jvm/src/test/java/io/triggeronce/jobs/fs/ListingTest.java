package io.triggeronce.jobs.fs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ListingTest {
    @TempDir
    java.nio.file.Path scratch;

    @Test
    void aLocalListingShowsRegularFilesAndFoldersOnly() throws Exception {
        java.nio.file.Path landing = Files.createDirectories(scratch.resolve("landing"));
        java.nio.file.Path outside = Files.createDirectories(scratch.resolve("outside"));
        Files.writeString(outside.resolve("secret.json"), "{}\n");
        Files.writeString(Files.createDirectories(landing.resolve("sub")).resolve("a.json"), "{}\n");
        Files.writeString(landing.resolve("b.json"), "{}\n");
        Files.createSymbolicLink(landing.resolve("secret.json"), outside.resolve("secret.json"));
        Files.createSymbolicLink(landing.resolve("out"), outside);
        Files.createSymbolicLink(landing.resolve("loop"), landing.resolve("."));
        Files.createSymbolicLink(landing.resolve("loop2"), landing.resolve("."));
        assertEquals(0, new ProcessBuilder("mkfifo", landing.resolve("fifo").toString()).start().waitFor());

        NoLinkLocalFileSystem fs = new NoLinkLocalFileSystem();
        fs.initialize(java.net.URI.create("file:///"), new Configuration());
        List<String> listed = new ArrayList<>();
        for (FileStatus status : fs.listStatus(new Path(landing.toUri()))) {
            listed.add(status.getPath().getName());
        }
        listed.sort(null);
        assertEquals(List.of("b.json", "sub"), listed);

        List<String> files = new ArrayList<>();
        RemoteIterator<LocatedFileStatus> all = fs.listFiles(new Path(landing.toUri()), true);
        while (all.hasNext()) {
            files.add(all.next().getPath().getName());
        }
        files.sort(null);
        assertEquals(List.of("a.json", "b.json"), files); // two loops, and still an end
    }

    @Test
    void aFileWhoseNameHasAColonIsRead() throws Exception {
        java.nio.file.Path landing = Files.createDirectories(scratch.resolve("landing"));
        Files.writeString(landing.resolve("a:b.json"), "{}\n");

        NoLinkLocalFileSystem fs = new NoLinkLocalFileSystem();
        fs.initialize(java.net.URI.create("file:///"), new Configuration());
        FileStatus[] listed = fs.listStatus(new Path(landing.toUri()));
        assertEquals(1, listed.length);
        try (var in = fs.open(listed[0].getPath())) { // Hadoop's own checksum path failed here
            assertEquals("{}\n", new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
        }
    }

    @Test
    void anS3EntryCountsOnlyDirectlyUnderTheFolderListed() throws IOException {
        Path folder = new Path("s3a://lake/root/landing/p");
        assertTrue(PlainKeyS3AFileSystem.inside(folder, status("s3a://lake/root/landing/p/a.json", false)));
        assertTrue(PlainKeyS3AFileSystem.inside(folder, status("s3a://lake/root/landing/p/q", true)));
        // 'p/../../secret/x.json' and 'p/..' as Hadoop folds them: another prefix, or the folder above.
        assertFalse(PlainKeyS3AFileSystem.inside(folder, status("s3a://lake/root/secret/x.json", false)));
        assertFalse(PlainKeyS3AFileSystem.inside(folder, status("s3a://lake/root/landing", true)));
        // 'p/./' and 'p//': the folder itself.
        assertFalse(PlainKeyS3AFileSystem.inside(folder, status("s3a://lake/root/landing/p", true)));
        // A file listed by its own name is itself.
        Path file = new Path("s3a://lake/root/landing/p/a.json");
        assertTrue(PlainKeyS3AFileSystem.inside(file, status("s3a://lake/root/landing/p/a.json", false)));
    }

    private static FileStatus status(String path, boolean folder) {
        return new FileStatus(0, folder, 1, 1, 0, new Path(path));
    }
}
