# Two-space indentation throughout.
def walk(tree, depth=0):
  """Print a nested list as an outline."""
  for node in tree:
    if isinstance(node, list):
      walk(node, depth + 1)
    else:
      print("  " * depth + str(node))


def deep(n):
  if n > 0:
    if n > 1:
      if n > 2:
        if n > 3:
          if n > 4:
            if n > 5:
              return "many"
            return "five"
  return "few"


class Node:
  def __init__(self, value, children=None):
    self.value = value
    self.children = children or []

  def depth(self):
    if not self.children:
      return 1
    return 1 + max(c.depth() for c in self.children)


i = 0
while i < 3:
  j = 0
  while j < 3:
    if (i + j) % 2:
      j += 1
      continue
    j += 1
  i += 1
else:
  print("finished", i)

walk([1, [2, [3, 4]], 5])
print(deep(7), Node(1, [Node(2, [Node(3)])]).depth())
