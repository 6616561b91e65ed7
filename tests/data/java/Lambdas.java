// Lambdas, method references, anonymous and inner classes.
import java.util.*;
import java.util.function.*;
import java.util.stream.*;

class Lambdas {
    interface TriFunction<A, B, C, R> { R apply(A a, B b, C c); }

    Runnable r = () -> {};
    Runnable r2 = () -> System.out.println("x");
    Function<Integer, Integer> inc = x -> x + 1;
    Function<Integer, Integer> inc2 = (x) -> x + 1;
    BiFunction<Integer, Integer, Integer> add = (a, b) -> a + b;
    BiFunction<Integer, Integer, Integer> add2 = (Integer a, Integer b) -> { return a + b; };
    BiFunction<Integer, Integer, Integer> add3 = (var a, final var b) -> a * b;
    TriFunction<List<String>, int[], String[], Integer> tri = (List<String> l, int[] is, String... ss) -> l.size();
    Supplier<List<String>> mk = ArrayList::new;
    IntFunction<String[]> arr = String[]::new;
    IntFunction<int[]> ints = int[]::new;
    Function<Object, String> str = Object::toString;
    Function<Integer, Function<Integer, Integer>> curried = a -> b -> a - b;
    Comparator<String> cmp = Comparator.comparing(String::length).thenComparing(Function.identity());

    List<String> run(List<String> in, boolean flip) {
        Predicate<String> p = flip ? s -> s.isEmpty() : s -> !s.isEmpty();
        Object o = (Runnable) () -> {};
        Object o2 = (Function<String, String>) (s) -> s;
        int[] counter = {0};
        in.forEach(s -> counter[0]++);
        new Thread(new Runnable() {
            @Override public void run() { counter[0] += 1; }
        }).start();
        Lambdas outer = this;
        Inner inner = outer.new Inner(3);
        return in.stream().filter(p).map(s -> s.toUpperCase()).sorted(cmp.reversed()).collect(Collectors.toList());
    }

    class Inner {
        final int n;
        Inner(int n) { this.n = n; }
        int outerHash() { return Lambdas.this.hashCode() + Lambdas.super.hashCode(); }
    }
}
