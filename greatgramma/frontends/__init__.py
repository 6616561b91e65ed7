"""Front ends: the structured-output requests that serving engines take (JSON Schema, any JSON
object, a regex, a choice among strings), each turned into ordinary Lark grammar text.

Everything downstream (``gg.Grammar``, ``compile``, artifacts, ``Matcher``, ``gg check``) sees
only that text, which ``gg schema2lark`` prints. ``gg.Grammar.from_json_schema``,
``from_regex``, ``from_choices`` and ``any_json`` are the entry points.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import ecma_regex as rx
from .json_schema import json_schema_to_lark
from .terminals import SchemaError

__all__ = ["SchemaError", "any_json_lark", "choices_to_lark", "json_schema_to_lark", "regex_to_lark"]


def _start_on(node: rx.Node) -> str:
    """``start`` taking exactly the node's strings, as one terminal (the empty string as an empty start)."""
    if rx.is_empty_language(node):
        raise rx.RegexError("the pattern matches no string at all", kind="regex")
    body = rx.non_empty(node)
    if rx.is_empty_language(body):
        return "start:\n"
    optional = "?" if rx.nullable(node) else ""
    return f"start: VALUE{optional}\nVALUE: /{rx.raw_regex(body)}/\n"


def regex_to_lark(pattern: str) -> str:
    """A grammar whose sentences are the strings that Python's ``re.fullmatch(pattern, s)`` accepts."""
    return _start_on(rx.parse_python(pattern))


def choices_to_lark(choices: Iterable[str]) -> str:
    """A grammar whose sentences are exactly the given strings."""
    if isinstance(choices, (str, bytes)):  # (iterating it would give its characters as the choices)
        raise TypeError(f"choices must be an iterable of str, such as a list; got a single {type(choices).__name__}: {choices[:40]!r}")
    values = list(dict.fromkeys(choices))
    if not values or not all(isinstance(v, str) for v in values):
        raise TypeError("choices must be a non-empty iterable of str")
    return _start_on(("alt", [rx.literal(v) for v in values]))


def any_json_lark(*, whitespace: str | int = "json", object_only: bool = True) -> str:
    """Any JSON object (vLLM's ``json_object``), or any JSON value with ``object_only=False``."""
    return json_schema_to_lark({"type": "object"} if object_only else {}, whitespace=whitespace)
