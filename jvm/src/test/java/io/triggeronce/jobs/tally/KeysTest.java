package io.triggeronce.jobs.tally;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import org.junit.jupiter.api.Test;

class KeysTest {
    @Test
    void keysTravelAsTheirSketchAndMergeWithoutCountingTwice() throws Exception {
        Keys sent = new Keys();
        for (long key = 0; key < 20_000; key++) {
            sent.add(key);
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(sent);
        }
        assertEquals(true, bytes.size() < 4_000, "sketch of " + bytes.size() + " bytes");
        Keys received;
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            received = (Keys) in.readObject();
        }
        received.merge(sent); // the same keys again
        long estimate = received.estimate();
        assertEquals(true, Math.abs(estimate - 20_000) < 20_000 * 0.05, "estimate " + estimate);
    }
}
