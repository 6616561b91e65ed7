// Type arguments closed by >, >> and >>>, shift operators, generic methods and casts.
import java.util.*;
import java.util.function.Function;
import static java.util.Collections.emptyList;

public class Generics<K extends Comparable<? super K>, V> implements Comparable<Generics<K, V>> {
    private final Map<K, List<Map<String, Set<V>>>> deep = new HashMap<>();
    private Map<String, List<String>> plain = new TreeMap<String, List<String>>();
    List<? extends Number>[] arrays;
    Map.Entry<K, V> entry;

    public static <T extends Comparable<T>> T max(List<? extends T> xs) {
        T best = null;
        for (T x : xs) {
            if (best == null || x.compareTo(best) > 0) best = x;
        }
        return best;
    }

    @SuppressWarnings("unchecked")
    <R> R cast(Object o) {
        List<String> list = (List<String>) o;
        Map<K, List<V>> map = (Map<K, List<V>>) o;
        Class<T[]>[] none = null;
        Object arr = (List<String>[]) new List<?>[2];
        Comparator<K> cmp = (Comparator<K> & java.io.Serializable) (a, b) -> a.compareTo(b);
        return (R) Collections.<String>emptyList();
    }

    static class T {}

    int shifts(int a, int b, long c) {
        a >>= 2;
        a >>>= 1;
        a <<= b;
        boolean lt = a < b, gt = a > b, le = a <= b >> 1, ge = a >= b >>> 2;
        boolean mixed = (a < b) == (b > a) && (a < b >> 1);
        int x = a >> b >>> 3 << 1;
        return (int) (c >>> 32) + (a > b ? a : b) + x;
    }

    @Override
    public int compareTo(Generics<K, V> other) {
        List<List<List<String>>> nested = new ArrayList<List<List<String>>>();
        Function<String, Integer> f = Integer::parseInt;
        return this.<Integer>pick(f.apply("1"), emptyList().size());
    }

    private <Q> Q pick(Q a, int b) {
        return a;
    }
}
