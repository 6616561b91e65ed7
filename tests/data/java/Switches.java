// Switch statements and expressions, yield, text blocks, try-with-resources, labels.
import java.io.*;
import java.util.*;

public class Switches {
    enum Day { MON, TUE, WED, SAT, SUN }

    static final String BLOCK = """
        Hello, "text" blocks \""" and \
        continuations with ""quotes"" inside
        """;

    static int kind(Day d) {
        return switch (d) {
            case SAT, SUN -> 0;
            case MON -> {
                int x = d.ordinal();
                yield x * 2;
            }
            default -> throw new IllegalStateException("day " + d);
        };
    }

    static String old(int code, Object o) {
        String s;
        switch (code) {
            case 1:
            case 2:
                s = "low";
                break;
            case 'x':
                s = "char";
                break;
            case -1: {
                s = "neg";
                break;
            }
            default:
                s = switch (o.hashCode() % 3) {
                    case 0:
                        yield "zero";
                    default: {
                        String t = String.valueOf(o);
                        yield t;
                    }
                };
        }
        return s;
    }

    static void statements(String path) throws IOException {
        outer:
        for (int i = 0, j = 10; i < j; i++, j--) {
            for (;;) {
                if (i % 2 == 0) continue outer;
                else break outer;
            }
        }
        try (Reader r = new StringReader(path); BufferedReader b = new BufferedReader(r)) {
            b.readLine();
        } catch (IllegalStateException | UncheckedIOException e) {
            throw e;
        } finally {
            assert path != null : "no path";
        }
        final Reader shared = new StringReader(path);
        try (shared) {
            shared.read();
        }
        int n = 3;
        do { n--; } while (n > 0);
        synchronized (Switches.class) { n++; }
        while (n < 5) n += 2;
    }
}
