package io.triggeronce.jobs.sql;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/** A location as Spark writes it (a %-encoded URI) as the product writes it (jobs/lake/layout.py from_spark). */
final class Paths {
    private Paths() {}

    static String fromSpark(String uri) {
        if (uri.startsWith("file:")) {
            String rest = unquote(uri.substring("file:".length()));
            int slashes = 0;
            while (slashes < rest.length() && rest.charAt(slashes) == '/') {
                slashes++;
            }
            return "/" + rest.substring(slashes);
        }
        return unquote(uri);
    }

    /** %XX sequences as the UTF-8 bytes they are (Python's urllib.parse.unquote; '+' stays). */
    static String unquote(String text) {
        if (text.indexOf('%') < 0) {
            return text;
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        StringBuilder out = new StringBuilder();
        int i = 0;
        while (i < text.length()) {
            char c = text.charAt(i);
            if (c == '%' && hex(text, i + 1)) {
                bytes.write(Integer.parseInt(text.substring(i + 1, i + 3), 16));
                i += 3;
                continue;
            }
            if (bytes.size() > 0) {
                out.append(bytes.toString(StandardCharsets.UTF_8));
                bytes.reset();
            }
            out.append(c);
            i++;
        }
        if (bytes.size() > 0) {
            out.append(bytes.toString(StandardCharsets.UTF_8));
        }
        return out.toString();
    }

    private static boolean hex(String text, int at) {
        return at + 1 < text.length()
                && Character.digit(text.charAt(at), 16) >= 0
                && Character.digit(text.charAt(at + 1), 16) >= 0;
    }
}
