from itertools import chain

numbers = list(range(-5, 15))
squares = [n * n for n in numbers]
evens = [n for n in numbers if n % 2 == 0 if n > 0]
pairs = [(a, b) for a in range(3) for b in range(a) if a != b]
lookup = {n: str(n) for n in numbers if n >= 0}
inverse = {v: k for k, v in lookup.items()}
letters = {c.lower() for c in "Hello World" if c.isalpha()}
total = sum(x * 2 for x in numbers)
matrix = [[row * 3 + col for col in range(3)] for row in range(3)]
flat = [cell for row in matrix for cell in row]
transposed = list(zip(*matrix))
nested = [[y for y in range(x)] for x in range(4) if x]

double = lambda x: x * 2
add = lambda a, b=1: a + b
compose = lambda f, g: lambda x: f(g(x))
noargs = lambda: None
star = lambda *args, **kwargs: (args, kwargs)

words = ["pear", "Apple", "fig", "banana"]
by_len = sorted(words, key=lambda w: (len(w), w.lower()))
signs = ["neg" if n < 0 else "zero" if n == 0 else "pos" for n in numbers]
firsts = {w[0]: w for w in words}
slices = [numbers[1:], numbers[:3], numbers[::2], numbers[1:-1:3], numbers[:]]
merged = list(chain.from_iterable([[1, 2], [3], []]))
maxed = max(words, key=len)
filtered = list(filter(lambda n: n > 3, map(double, numbers)))
any_big = any(n > 100 for n in numbers) or all(n < 0 for n in numbers)
print(compose(double, add)(3), noargs(), star(1, k=2), by_len, signs, flat)
