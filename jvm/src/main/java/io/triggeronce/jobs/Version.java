package io.triggeronce.jobs;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/** The version of the product's JVM classes: the pom's, which is the Python package's. */
public final class Version {
    private Version() {}

    public static String version() {
        Properties properties = new Properties();
        try (InputStream in = Version.class.getResourceAsStream("version.properties")) {
            if (in == null) {
                throw new IllegalStateException("version.properties is missing beside " + Version.class.getName());
            }
            properties.load(in);
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
        return properties.getProperty("version");
    }
}
