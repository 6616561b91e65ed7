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
_IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"

# RFC 3986 (URI Generic Syntax), appendix A, rule by rule. `host` is IP-literal / IPv4address /
# reg-name; an IPv4address is also a reg-name (digits and dots are unreserved), so the language
# is IP-literal / reg-name. Every character is ASCII; a `%` must start a pct-encoded triple.
_UNRESERVED = r"A-Za-z0-9\-._~"
_SUB_DELIMS = r"!$&'()*+,;="
_PCT = r"%[0-9A-Fa-f]{2}"
_PCHAR = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:@]|{_PCT})"
_H16 = r"[0-9A-Fa-f]{1,4}"
_LS32 = rf"(?:{_H16}:{_H16}|{_IPV4})"
_IPV6 = "(?:" + "|".join([
    rf"(?:{_H16}:){{6}}{_LS32}",
    rf"::(?:{_H16}:){{5}}{_LS32}",
    rf"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
    rf"(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{_LS32}",
    rf"(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}",
    rf"(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
    rf"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}",
    rf"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}",
    rf"(?:(?:{_H16}:){{0,6}}{_H16})?::",
]) + ")"
_IP_LITERAL = rf"\[(?:{_IPV6}|v[0-9A-Fa-f]+\.[{_UNRESERVED}{_SUB_DELIMS}:]+)\]"
_REG_NAME = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}]|{_PCT})*"
_AUTHORITY = rf"(?:(?:[{_UNRESERVED}{_SUB_DELIMS}:]|{_PCT})*@)?(?:{_IP_LITERAL}|{_REG_NAME})(?::[0-9]*)?"
_SEGMENT = rf"{_PCHAR}*"
_SEGMENT_NZ = rf"{_PCHAR}+"
_PATH_ABEMPTY = rf"(?:/{_SEGMENT})*"
_PATH_ABSOLUTE = rf"/(?:{_SEGMENT_NZ}(?:/{_SEGMENT})*)?"
_PATH_ROOTLESS = rf"{_SEGMENT_NZ}(?:/{_SEGMENT})*"
_PATH_NOSCHEME = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}@]|{_PCT})+(?:/{_SEGMENT})*"
_QUERY_FRAGMENT = rf"(?:\?(?:{_PCHAR}|[/?])*)?(?:#(?:{_PCHAR}|[/?])*)?"
URI = rf"[A-Za-z][A-Za-z0-9+\-.]*:(?://{_AUTHORITY}{_PATH_ABEMPTY}|{_PATH_ABSOLUTE}|{_PATH_ROOTLESS}|){_QUERY_FRAGMENT}"
RELATIVE_REF = rf"(?://{_AUTHORITY}{_PATH_ABEMPTY}|{_PATH_ABSOLUTE}|{_PATH_NOSCHEME}|){_QUERY_FRAGMENT}"

FORMATS = {
    "date": DATE,
    "time": TIME,
    "date-time": rf"{DATE}[Tt]{TIME}",
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "ipv4": _IPV4,
    "ipv6": _IPV6,  # RFC 4291 text forms (RFC 3986's IPv6address), no zone: as ipaddress.IPv6Address reads them for jsonschema
    "uri": URI,  # RFC 3986 `URI` (absolute, a fragment allowed), as rfc3986-validator checks it for jsonschema
    "uri-reference": rf"(?:{URI}|{RELATIVE_REF})",
    "email": r"(?s:.*@.*)",  # what jsonschema's FormatChecker checks: an @ somewhere
}
# Known formats whose languages are not (or not practically) regular here: refused, not ignored.
REFUSED = {"idn-email", "iri", "iri-reference", "hostname", "idn-hostname",
           "uri-template", "json-pointer", "relative-json-pointer", "regex", "duration"}


@lru_cache(maxsize=None)
def format_node(name: str):
    if name in FORMATS:
        return rx.parse_python(FORMATS[name])
    return False if name in REFUSED else None
