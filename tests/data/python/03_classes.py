import functools
from dataclasses import dataclass, field


def logged(prefix):
    def decorator(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            print(prefix, func.__name__, args, kwargs)
            return func(*args, **kwargs)
        return wrapper
    return decorator


class Shape:
    """Base class for shapes."""

    sides = 0

    def __init__(self, name):
        self.name = name

    def area(self):
        raise NotImplementedError

    def __repr__(self):
        return "%s(%r)" % (type(self).__name__, self.name)


class Rect(Shape):
    sides = 4

    def __init__(self, w, h):
        super().__init__("rect")
        self.w, self.h = w, h

    @property
    def area(self):
        return self.w * self.h

    @staticmethod
    def square(side):
        return Rect(side, side)

    @classmethod
    def unit(cls):
        return cls(1, 1)

    @logged("rect:")
    def scale(self, factor=2):
        return Rect(self.w * factor, self.h * factor)


@dataclass
class Point:
    x: float = 0.0
    y: float = 0.0
    tags: list = field(default_factory=list)

    def dist2(self, other: "Point") -> float:
        dx = self.x - other.x
        dy = self.y - other.y
        return dx ** 2 + dy ** 2


class Empty: pass


class Counter(object):
    count = 0

    def __call__(self):
        Counter.count += 1
        return self.count


@functools.lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


r = Rect.square(3).scale(factor=3)
print(r, r.area, Point(1.5, 2).dist2(Point()), fib(20), Counter()())
