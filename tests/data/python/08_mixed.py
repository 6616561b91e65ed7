from . import helpers
from .. import parent
from .sibling import (alpha,
                      beta as b2,
                      gamma)

counter = 0


def bump(step: int = 1) -> int:
    global counter
    counter += step
    return counter


def make_accumulator(start=0):
  total = start

  def add(x):
      nonlocal total
      total += x
      return total
  return add


def chunks(seq, size):
    """Yield successive slices of seq."""
    for start in range(0, len(seq), size):
        yield seq[start:start + size]
    yield from ()


def flags(a, *, strict=False, **extra):
        if strict:
                return None
        return a, extra


async def fetch(session, url):
    async with session.get(url) as response:
        return await response.text()


def odd_levels(x):
    if x:
         if x > 1:
                 return 2
         # comment at an odd column
   # and one further left
         return 1
    return 0

x = 1; y = 2; z = x if y else None
a, *rest = [1, 2, 3]
mask = ~x & 0xff | 0o17 ^ y << 2 >> 1
ratio = 1.5e-3 * .5 + 3. - 2e10 % 7 // 2
print(bump(), make_accumulator(5)(2), list(chunks([1, 2, 3], 2)), flags(1, k=2))
print(odd_levels(3), rest, mask, ratio, x != y, x <= y, x >= y, not x, -x, +y)
