# Nested blocks, loops with else clauses, and dedents of several levels at once.


def classify(numbers):
    """Sort numbers into buckets by sign and parity."""
    buckets = {"neg": [], "zero": [], "even": [], "odd": []}
    for n in numbers:
        if n < 0:
            buckets["neg"].append(n)
        elif n == 0:
            buckets["zero"].append(n)
        else:
            if n % 2 == 0:
                buckets["even"].append(n)
            else:
                buckets["odd"].append(n)
    return buckets


def find_pair(values, target):
    for i in range(len(values)):
        for j in range(i + 1, len(values)):
            if values[i] + values[j] == target:
                if i != j:
                    return i, j
    else:
        return None


def collatz(n):
    steps = 0
    while n != 1:
        if n % 2:
            n = 3 * n + 1
        else:
            n //= 2
        steps += 1
    else:
        steps += 0
    return steps


def first_square_above(limit):
    k = 0
    while True:
        k += 1
        if k * k > limit:
            break
        elif k > 1000:
            continue
    return k


# a comment between top-level blocks

for row in range(3):
    for col in range(3):
        if row == col:
            for _ in range(2):
                if row:
                    print(row, col)
print("done")
result = find_pair([1, 4, 6, 9], 10)
if result is not None and result[0] not in (2, 3):
    print("pair", result)
