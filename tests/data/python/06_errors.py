import json
import os.path as osp


class ParseError(Exception):
    """Raised when a record cannot be parsed."""

    def __init__(self, line, message="bad record"):
        super().__init__(message)
        self.line = line


def load(path):
    assert path, "a path is required"
    try:
        with open(path) as handle, open(path + ".bak", "w") as backup:
            text = handle.read()
            backup.write(text)
    except FileNotFoundError:
        return []
    except (ValueError, OSError) as err:
        raise ParseError(0) from err
    else:
        return parse(text)
    finally:
        print("loaded", osp.basename(path))


def parse(text):
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            raise ParseError(number)
        except Exception:
            raise
    return records


def safe_div(a, b):
    try:
        return a / b
    except ZeroDivisionError:
        return float("inf")
    finally:
        pass


def cleanup(items):
    try:
        while items:
            item = items.pop()
            del item
    finally:
        items = None
    return items


try:
    load("")
except AssertionError as exc:
    print("caught", exc)
print(safe_div(1, 0), cleanup([1, 2]))
