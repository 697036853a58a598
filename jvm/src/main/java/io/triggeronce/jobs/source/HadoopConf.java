package io.triggeronce.jobs.source;

import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import org.apache.hadoop.conf.Configuration;

/** A Hadoop configuration that travels to the executors (it is Writable, not Serializable). */
final class HadoopConf implements Serializable {
    private static final long serialVersionUID = 1L;

    private transient Configuration conf;

    HadoopConf(Configuration conf) {
        this.conf = conf;
    }

    Configuration get() {
        return conf;
    }

    private void writeObject(ObjectOutputStream out) throws IOException {
        conf.write(out);
    }

    private void readObject(ObjectInputStream in) throws IOException {
        conf = new Configuration(false);
        conf.readFields(in);
    }
}
