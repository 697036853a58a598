package io.triggeronce.jobs.tally;

import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import org.apache.datasketches.hll.TgtHllType;
import org.apache.datasketches.hll.Union;

/**
 * The distinct keys of the records a batch's pattern reads, as a HyperLogLog sketch
 * (DataSketches, which Spark ships): about 1.6% off at its size, a few KiB however many keys.
 * A union is idempotent, so a task Spark ran again, or a batch read again, adds nothing: every
 * attempt is merged, none chosen.
 */
public final class Keys implements Serializable {
    private static final long serialVersionUID = 1L;
    static final int LG_K = 12;

    private transient Union sketch = new Union(LG_K);

    public void add(long keyHash) {
        sketch.update(keyHash);
    }

    public void merge(Keys other) {
        sketch.update(other.sketch.getResult());
    }

    public long estimate() {
        return Math.round(sketch.getEstimate());
    }

    private void writeObject(ObjectOutputStream out) throws IOException {
        byte[] bytes = sketch.getResult(TgtHllType.HLL_4).toCompactByteArray(); // half a union's own image
        out.writeInt(bytes.length);
        out.write(bytes);
    }

    private void readObject(ObjectInputStream in) throws IOException {
        byte[] bytes = new byte[in.readInt()];
        in.readFully(bytes);
        sketch = Union.heapify(bytes);
    }
}
