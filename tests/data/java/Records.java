// Records, sealed hierarchies, enums with bodies, annotations and annotation types.
import java.lang.annotation.*;
import java.util.List;

@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD,})
@interface Tag {
    String value() default "";
    int[] numbers() default {1, 2};
    Class<?> kind() default Object.class;
}

sealed interface Shape permits Circle, Square, Polygon {
    double area();
    default String describe() { return getClass().getSimpleName() + " " + area(); }
}

record Circle(double r) implements Shape {
    Circle {
        if (r < 0) throw new IllegalArgumentException("r < 0");
    }
    public double area() { return Math.PI * r * r; }
}

record Square(@Tag("side") double side) implements Shape {
    static Square unit() { return new Square(1); }
    public double area() { return side * side; }
}

non-sealed abstract class Polygon implements Shape {
    abstract List<double[]> points();
}

record Pair<A, B>(A first, B second) {}

enum Planet implements Comparable<Planet> {
    MERCURY(3.303e+23, 2.4397e6),
    EARTH(5.976e+24, 6.37814e6) {
        @Override String label() { return "home"; }
    },
    ;

    private final double mass, radius;
    Planet(double mass, double radius) { this.mass = mass; this.radius = radius; }
    String label() { return name().toLowerCase(); }
}

@Tag(value = "records", numbers = {}, kind = Records.class)
public final class Records {
    @Deprecated(since = "1", forRemoval = false)
    static int sealed = 1, permits = 2, record = 3, yield = 4, var = 5, non = 6;

    static int contextual() {
        var list = List.of(sealed, permits, record);
        int x = non-sealed;
        return list.size() + yield + var + x;
    }

    static double total(Shape... shapes) {
        double sum = 0;
        for (Shape s : shapes) {
            if (s instanceof Circle c && c.r() > 0) sum += c.area();
            else if (!(s instanceof Square sq)) sum += s.area();
            else sum += sq.side();
        }
        return sum;
    }
}
