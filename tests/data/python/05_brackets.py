CONFIG = {
    "name": "demo",
    "sizes": [
        1, 2, 3,
        # a comment inside a list
        4, 5,
    ],
    "nested": {"a": (1,
                     2),
              "b": [
          "badly", "indented", "but", "inside", "brackets",
      ],
    },
}


def call_with_many_args(first,
                        second=2,
                        *rest,
                        **options):
    return (first +
            second +
            sum(rest))


value = call_with_many_args(
    1,
    2,
    3, 4,
    verbose=True,
)

long_expression = (1 + 2 +
    3 + 4
        + 5)

total = 1 + \
    2 + \
    3

matrix = [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
]

if (value > 3 and
        total < 100):
    print(value, [
        x for x in range(
            3)
    ])
    if value:
        print({
  "odd": "indent"
        })
print(CONFIG["nested"]["a"], long_expression, matrix)
