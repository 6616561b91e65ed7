// Literals, arrays, casts, operators, initializers, nested and local classes.
import java.util.Arrays;

public class Literals {
    static final int HEX = 0xFF_FF, OCT = 0777, BIN = 0b1010_1010, DEC = 1_000_000;
    static final long BIG = 0x7fff_ffff_ffffL + 123L;
    static final double D = 1.5e-3 + .5 + 1. + 2e10 + 0x1.8p3 + 3d + 1_000.0_1;
    static final float F = 1.5f + 2F + 1e3f;
    static final char[] CHARS = {'a', '\n', '\'', '\\', '\u0041', '\0', '"'};
    static final String S = "tab\there \"quoted\" \u00e9 \\ end";
    static final int[][] GRID = new int[][] { {1, 2}, {3, 4}, };
    static int[] counts = new int[10], more[] = {};
    static int ünïcode = 1;
    static int $dollar_ = 2;

    static {
        counts[0] = GRID[1][0];
    }

    {
        counts[1] = -counts[0];
    }

    int ops(int a, int b) {
        int c = a++ + ++b - --a - b--;
        c += ~a & b | a ^ b;
        c = c % 7 * 3 / 2;
        boolean t = !(a == b) || a != b && true;
        c = t ? c : -c;
        long l = (long) c * (int) 'x';
        double d = (double) (float) l;
        Object o = (Object) "s";
        String s = (String) o + (char) (c + '0');
        int len = ((String) o).length() + s.length();
        c = (a) + (b) - (int) +d;
        return c + len + new int[]{1, 2}[0] + GRID.length + int.class.hashCode() + void.class.hashCode();
    }

    static abstract class Node<T> {
        abstract T value();
        strictfp double half(double x) { return x / 2; }
        native void nop();
        transient volatile int flag;
    }

    Node<String> local() {
        class Local extends Node<String> {
            String value() { return "local"; }
            @Override void nop() {}
        }
        interface Helper { int help(); }
        record Point(int x, int y) {}
        enum Mode { ON, OFF }
        Helper h = () -> new Point(1, 2).x() + Mode.ON.ordinal();
        return h.help() > 0 ? new Local() : null;
    }

    public static void main(String[] args) throws Exception {
        System.out.println(Arrays.toString(new Literals().local().value().toCharArray()));
    }
}
