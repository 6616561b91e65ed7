"""``format`` values as exact regular languages, matching what Python's ``jsonschema`` checks with
its ``FormatChecker`` (``rfc3339-validator`` for date-time and time): calendar days per month,
leap years, years 0001-9999, ``T``/``Z`` in either case, no leap seconds.

``format_node`` returns the language, False for a format that has no exact grammar here (the
schema is refused), and None for a format this module does not know (an annotation, ignored as
validators ignore unknown formats).
"""

from __future__ import annotations

from functools import lru_cache

from . import ecma_regex as rx

_YEAR = r"(?:000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})"
_MONTH_DAY = r"(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))"
_LEAP_YEAR = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
DATE = rf"(?:{_YEAR}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)"
TIME = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"

FORMATS = {
    "date": DATE,
    "time": TIME,
    "date-time": rf"{DATE}[Tt]{TIME}",
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "ipv4": rf"{_OCTET}(?:\.{_OCTET}){{3}}",
    "email": r"(?s:.*@.*)",  # what jsonschema's FormatChecker checks: an @ somewhere
}
# Known formats whose languages are not (or not practically) regular here: refused, not ignored.
REFUSED = {"idn-email", "uri", "uri-reference", "iri", "iri-reference", "hostname", "idn-hostname",
           "ipv6", "uri-template", "json-pointer", "relative-json-pointer", "regex", "duration"}


@lru_cache(maxsize=None)
def format_node(name: str):
    if name in FORMATS:
        return rx.parse_python(FORMATS[name])
    return False if name in REFUSED else None
