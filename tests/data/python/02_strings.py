'''Module docstring in single quotes.

It spans several lines and has a tab\tand a newline\n escape.
'''
import re


def describe(name, count):
    """Return a sentence with "quotes" and a backslash \\ in it."""
    quoted = 'say \"hi\" to ' + name
    path = "C:\\Users\\guest\\file.txt"
    tabbed = "col1\tcol2\tcol3\n"
    bell = '\x07\u00e9\N{BULLET}'
    return f"{quoted}: {count} item(s) at {path!r}" + tabbed + bell


def patterns():
    '''Raw strings and bytes literals.'''
    words = re.compile(r"\b\w+\b")
    digits = r'\d+(\.\d*)?'
    data = b"\x00\xff\r\n"
    raw_bytes = br"\n stays two characters"
    unicode_prefix = u"caf\u00e9"
    return words, digits, data, raw_bytes, unicode_prefix


def concatenated():
    """
    A docstring that starts on its own line.

        It has an indented example block:
            >>> concatenated()
    """
    greeting = ("Hello, "
                'world'
                "!")
    empty = ""
    empty_single = ''
    apostrophe = "it's"
    inner = 'a "b" c'
    return greeting + empty + empty_single + apostrophe + inner


class Template:
    """A tiny template class.

    Placeholders look like {name} and are replaced by format().
    """

    def render(self, **values):
        """Fill in the placeholders."""
        text = "Dear {name},\n\tyour total is {total:.2f}.\n"
        return text.format(**values)


print(describe("Ada", 3))
print(Template().render(name="Bob", total=12.5))
