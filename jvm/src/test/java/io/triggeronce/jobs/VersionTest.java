package io.triggeronce.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class VersionTest {
    @Test
    void theVersionIsThePoms() {
        assertEquals(System.getProperty("jobs.expected.version"), Version.version());
    }
}
