"""JSON Schema -> Lark: each keyword's grammar accepts exactly the instances Python's ``jsonschema``
(4.x, formats checked) calls valid, in the canonical form (members in ``properties`` order).

Instances are walked byte by byte through the masks (a 256-token byte vocabulary: every byte's
token must be allowed, then EOS) in two serializations, compact and pretty-printed; a
representative subset is walked with the real Llama-3 tokenizer. Refusals are checked to name
the keyword and its JSON pointer.
"""

from __future__ import annotations

import json
from functools import lru_cache

import jsonschema
import lark
import pytest
from helpers import bit
from hypothesis import given, settings
from hypothesis import strategies as st

import greatgramma as gg
from greatgramma.frontends import SchemaError

EOS = 256


@lru_cache(maxsize=1)
def byte_vocab() -> gg.Vocabulary:
    return gg.Vocabulary([bytes([b]) for b in range(256)] + [None], eos_token_ids=[EOS])


@lru_cache(maxsize=None)
def masker_for(schema_text: str, whitespace="json", additional_properties=True) -> gg.Masker:
    grammar = gg.Grammar.from_json_schema(schema_text, whitespace=whitespace, additional_properties=additional_properties)
    return gg.Masker(gg.compile(grammar, byte_vocab()))


@lru_cache(maxsize=None)
def lark_for(schema_text: str, whitespace="json", additional_properties=True) -> lark.Lark:
    grammar = gg.Grammar.from_json_schema(schema_text, whitespace=whitespace, additional_properties=additional_properties)
    return lark.Lark(grammar.text, parser="lalr", lexer="basic")


def lark_parses(parser: lark.Lark, text: str) -> bool:
    try:
        parser.parse(text)
    except lark.exceptions.LarkError:
        return False
    return True


def accepts(m: gg.Masker, text: str) -> bool:
    state = m.initial_state()
    for b in text.encode("utf-8"):
        if not bit(m.mask(state), b):
            return False
        state = m.advance(state, b)
    return bit(m.mask(state), EOS)


def oracle(schema, instance) -> bool:
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(instance)


def check(schema, instances, **options) -> None:
    """The masks accept exactly the valid instances, and Lark (LALR, basic lexer) parses each."""
    m = masker_for(json.dumps(schema), **options)
    for inst in instances:
        expected = oracle(schema, inst)
        for text in (json.dumps(inst, ensure_ascii=False), json.dumps(inst, indent=2, ensure_ascii=False)):
            assert accepts(m, text) == expected, (schema, text, expected)
            assert not expected or lark_parses(lark_for(json.dumps(schema), **options), text), (schema, text)


OBJ = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["name"],
}

CASES = {
    "type-list": ({"type": ["string", "null", "boolean"]}, ["a", None, True, 1, [], {}]),
    "type-number": ({"type": "number"}, [1, -2.5, 1e10, 0, "1", None]),
    "properties": (OBJ, [{"name": "x"}, {"name": "x", "age": 3}, {"name": "x", "tags": ["a", "b"]}, {"age": 3},
                         {"name": 1}, {"name": "x", "age": "3"}, {"name": "x", "other": [1, {"k": None}]}, {}]),
    "additionalProperties-false": ({**OBJ, "additionalProperties": False}, [{"name": "x"}, {"name": "x", "z": 1}]),
    "additionalProperties-schema": ({**OBJ, "additionalProperties": {"type": "integer"}},
                                    [{"name": "x", "z": 1}, {"name": "x", "z": "1"}, {"name": "x", "tags": []}]),
    "items": ({"type": "array", "items": {"type": "integer"}}, [[], [1, 2, 3], [1, "2"], {}]),
    "prefixItems": ({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
                    [[], ["a"], ["a", 1], ["a", 1, 2], [1]]),
    "min-maxItems": ({"type": "array", "items": {"type": "boolean"}, "minItems": 2, "maxItems": 3},
                     [[], [True], [True, False], [True, False, True], [True] * 4]),
    "enum": ({"enum": ["red", "green", 3, None, [1, 2], {"a": 1}]},
             ["red", "green", "blue", 3, 4, None, [1, 2], [2, 1], {"a": 1}, {"a": 2}]),
    "const": ({"const": "x\"y\\z\n"}, ["x\"y\\z\n", "xyz"]),
    "enum-integral-float": ({"type": "array", "items": {"enum": [2.0, 1.5, -3, 1e3]}}, [[2], [2.0], [1.5], [-3], [1000], [1000.0], [3], [15]]),
    "numbers-beside-literals": ({"type": "object", "properties": {"a": {"enum": [2, 1.5]}, "b": {"type": "integer"}, "c": {"type": "number"},
                                                                  "d": {"type": "integer", "minimum": 0, "maximum": 5}}},
                                [{"a": 2, "b": 23, "c": 100}, {"a": 1.5, "c": 2.5}, {"c": 1.5e-7, "b": -200}, {"d": 5}, {"d": 50}, {"a": 22}]),
    "anyOf": ({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 5}]},
              ["ab", "abc", 5, 4, None]),
    "anyOf-shared-terminals": ({"anyOf": [{"enum": ["web", "app", 3]}, {"type": "string"}, {"type": "integer", "minimum": 0},
                                          {"type": "integer", "maximum": 10}, {"$ref": "#/$defs/s"}], "$defs": {"s": {"type": "string", "pattern": "^a"}}},
                               ["web", "x", "", "app", 3, 0, -5, 50, 1.5, None, []]),
    "anyOf-numbers": ({"type": "array", "items": {"anyOf": [{"type": "number", "maximum": 1.5}, {"type": "integer"}]}},
                      [[1, 2, 1.5, 2.5, -3.5], [2.5], [1.25, -2.75]]),
    "oneOf-objects": ({"type": "object", "oneOf": [
        {"properties": {"e": {"type": "object"}}, "required": ["e"], "additionalProperties": False},
        {"properties": {"h": {"type": "string"}}, "required": ["h"], "additionalProperties": False}]},
        [{"e": {}}, {"h": "x"}, {"e": {}, "h": "x"}, {}, {"h": 1}, "e"]),
    "allOf-additionalProperties-true": ({"allOf": [{"properties": {"a": {"type": "integer"}}, "additionalProperties": True},
                                                   {"properties": {"b": {"type": "string"}}}]},
                                        [{"a": 1, "b": "x"}, {"a": "1"}, {"b": 2}, {"a": 1, "c": None}]),
    "allOf-additionalProperties": ({"allOf": [{"properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "integer", "maximum": 5}},
                                              {"properties": {"b": {"type": "integer"}}, "additionalProperties": {"minimum": 2}}]},
                                   [{"a": 1, "b": 3}, {"a": 1, "b": 7}, {"a": 9, "b": 3}, {"a": 1}, {"b": 1}, {"c": 3}, {"c": 1}, {"c": 6}, {"c": "x"}]),
    "property-never-valid": ({"properties": {"a": {"type": "string"}, "n": {"enum": ["x"], "type": "object"}},
                              "patternProperties": {"^a": {"type": "integer"}}},
                             [{"a": "x"}, {"a": 1}, {"ab": 1}, {"ab": "1"}, {"b": "a"}, {"b": "n"}, {"n": "x"}, {"n": {}}, {"z": ["n", "a"]}]),
    "enum-with-not": ({"allOf": [{"enum": [1, 2.5, "a", "b", [1], {"k": 1}, None]}, {"not": {"anyOf": [{"type": "string", "pattern": "b"}, {"minimum": 2}]}}]},
                      [1, 2.5, "a", "b", [1], {"k": 1}, None, 3, "c"]),
    "enum-with-if": ({"enum": [{"a": 1}, {"a": -1}, {}], "if": {"required": ["a"]}, "then": {"properties": {"a": {"maximum": 0}}}},
                     [{"a": 1}, {"a": -1}, {}, {"a": -2}]),
    "enum-with-oneOf": ({"enum": ["x", "y", 3], "oneOf": [{"type": "string"}, {"enum": ["y", 3]}]}, ["x", "y", 3, "z"]),
    "oneOf-of-enums-with-if": ({"type": "array", "oneOf": [{"enum": [[2], [2, 4], [6]]}, {"$ref": "#/$defs/z"}],
                                "if": {"minItems": 1}, "then": {"minItems": 2}, "$defs": {"z": {"enum": [[], [1], [2, 4], [6, 8]]}}},
                               [[2], [2, 4], [6], [], [1], [6, 8], [3]]),
    "anyOf-with-an-empty-branch": ({"type": "object", "anyOf": [{"properties": {"t": {"enum": ["a"]}}, "required": ["t"]}, {"required": ["n"]}],
                                    "allOf": [{"properties": {"t": {"enum": ["b", "c"]}}}]},
                                   [{"t": "a"}, {"t": "b"}, {"n": 1}, {"t": "c", "n": 1}, {}]),
    "not-type": ({"type": "object", "additionalProperties": {"not": {"type": ["array", "number"]}}},
                 [{"a": []}, {"a": 1}, {"a": 1.5}, {"a": "x"}, {"a": None}, {"a": {"b": []}}, {}]),
    "not-true-false": ({"type": "object", "properties": {"a": {"not": True}, "b": {"not": False}}},
                       [{"a": 1}, {"b": 1}, {"b": [None]}, {"c": 2}]),
    "not-strings": ({"type": "object", "properties": {
        "n": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 6, "not": {"enum": ["test", "src", "Upper", "toolong1"]}},
        "m": {"not": {"const": "x"}}}},
        [{"n": "test"}, {"n": "tests"}, {"n": "src"}, {"n": "ok"}, {"n": "Upper"}, {"m": "x"}, {"m": "y"}, {"m": 1}, {"m": ["x"]}, {"z": "test"}]),
    "oneOf-types": ({"oneOf": [{"type": "string"}, {"type": "null"}]}, ["a", None, 1]),
    "allOf": ({"allOf": [OBJ, {"required": ["age"]}]}, [{"name": "x", "age": 1}, {"name": "x"}]),
    "pattern": ({"type": "string", "pattern": "^[a-z]+-[0-9]{2,3}$"}, ["ab-12", "ab-1234", "AB-12", "a-123"]),
    "pattern-search": ({"type": "string", "pattern": "[0-9]"}, ["a1b", "abc", "9", ""]),
    "allOf-patterns": ({"allOf": [{"type": "string", "pattern": "^[a-z]+$"}, {"pattern": "x"}, {"pattern": "y|^x"}]},
                       ["ax", "xa", "axy", "abc", "xyz", "y", "aX", "", "yx"]),
    "pattern-anchors-inside": ({"type": "string", "pattern": "^$|^[a-c]+-[0-9]$|(^x.)"}, ["", "ab-1", "ab-12", "xy", "xyz", "ax", "-1"]),
    "lengths": ({"type": "string", "minLength": 2, "maxLength": 4}, ["a", "ab", "abcd", "abcde", "é€😀", "😀"]),
    "integer-range": ({"type": "integer", "minimum": -5, "exclusiveMaximum": 100}, [-6, -5, 0, 99, 100, 1000]),
    "formats": ({"type": "object", "properties": {
        "d": {"type": "string", "format": "date"}, "t": {"type": "string", "format": "date-time"},
        "u": {"type": "string", "format": "uuid"}}},
        [{"d": "2024-02-29"}, {"d": "2023-02-29"}, {"d": "2023-13-01"}, {"t": "2020-01-01T10:00:00Z"},
         {"t": "2020-01-01T10:00:00+02:00"}, {"t": "2020-01-01 10:00"}, {"u": "123e4567-e89b-12d3-a456-426614174000"}, {"u": "x"}]),
}

PATTERN_SCHEMAS = [
    # nested patterns (a key matching both takes both schemas), declared names matching them, a
    # required name only a pattern gives a schema, additionalProperties for the rest
    {"type": "object", "properties": {"a1": {"type": "integer"}, "name": {"maximum": 2}, "b": {}},
     "patternProperties": {"^[a-z][0-9]$": {"type": "integer", "minimum": 0}, "^[a-z]": {"type": "number"}},
     "additionalProperties": {"type": "string"}},
    {"type": "object", "properties": {"a": {"type": "integer"}}, "patternProperties": {"^[a-z][0-9]$": {"minimum": 0}},
     "additionalProperties": False, "required": ["b2"]},
    {"type": "object", "patternProperties": {"": {"type": "integer"}}},  # every key
    {"type": "object", "patternProperties": {".+": {"type": ["string", "array"], "items": {"type": "string"}}},
     "additionalProperties": False},
    {"type": "object", "patternProperties": {"^x-": {"type": "string"}, "^[0-9]+$": {"type": "boolean"}},
     "additionalProperties": False},  # disjoint patterns
    {"type": "object", "patternProperties": {"^a": {"type": "integer"}, "^ab": False, "^(?:a|b)": {"maximum": 3}}},
    {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-z]+$"}},
     "patternProperties": {"^[a-z]+$": {"type": "string", "pattern": "^[a-z]+$"}}},  # one terminal for key and value
    # regions whose every key is declared: no key is lexed as theirs (their rule of keys is empty)
    {"type": "object", "properties": {"a": {"type": "string"}, "x-": {}},
     "patternProperties": {"^a$": {"minLength": 1}, "^x-$": {"type": "integer"}}},
    {"type": "object", "properties": {"b": {"type": "integer"}}, "patternProperties": {"^b$": {"minimum": 2}},
     "additionalProperties": False},
]
PATTERN_KEYS = ["", "a", "a1", "b2", "name", "b", "x-", "x-1", "1", "12", "ab", "abc", "é9", "\n", "Z", "id"]
PATTERN_VALUES = [1, -1, 5, 1.5, "s", "S", True, None, [], ["a", "b"], [1, 2], {}]


@pytest.mark.parametrize("k", range(len(PATTERN_SCHEMAS)))
def test_pattern_properties(k) -> None:
    """Random members (keys that match no pattern, one, or several nested ones; declared ones in
    ``properties`` order, as the canonical form writes them) against jsonschema."""
    import random

    schema, rng = PATTERN_SCHEMAS[k], random.Random(k)
    order = list(schema.get("properties", {})) + [r for r in schema.get("required", []) if r not in schema.get("properties", {})]
    instances = []
    for _ in range(80):
        inst = {rng.choice(PATTERN_KEYS): rng.choice(PATTERN_VALUES) for _ in range(rng.randint(0, 3))}
        instances.append(dict(sorted(inst.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))))
    instances += [{"b2": 1}, {"a": 1, "b2": 1}, {"b2": -1}, {"a": -1, "b2": 0, "c3": 2}, {"a": 1}, {"b2": "x"}, {"a": 2, "b2": [], "c3": 0}]
    assert sum(oracle(schema, i) for i in instances) >= 6  # valid ones too, not only refusals
    check(schema, instances)

# RFC 3986 by hand (the environment's jsonschema has no URI checker: rfc3986-validator is optional)
URIS = {
    "http://example.com": True, "https://a.b/c?d=e#f": True, "urn:isbn:0451450523": True, "mailto:a@b.c": True,
    "http://[::1]:80/": True, "http://[2001:db8::7]/c=GB?objectClass?one": True, "http://[v1.fe]/": True,
    "http://[1:2:3:4:5:6:7:8]/": True, "http://[::ffff:1.2.3.4]/": True, "tel:+1-816-555-1212": True, "a:": True,
    "a+.-:b": True, "http://user:pw@host:8080/p?q#f": True, "http:": True, "http:///": True, "a:b/c//d": True,
    "a:?#": True, "s://%41%42/": True, "http://[::]/": True, "http://a:/": True,
    "http://[1:2:3:4:5:6:7:8:9]/": False, "http://[::ffff:1.2.3.256]/": False, "http://a b": False, "http://a%2": False,
    "http://h/%zz": False, "1a:b": False, "": False, "//foo": False, "/a/b": False, "foo": False, "#frag": False,
    "http://example.com/\u00e9": False, "http://[:]/": False, "http://[1::2::3]/": False, "http://a:b:c/": False,
    "http://a@b@c/": False, "x://a[b]/": False, "a://b:12ab/": False, "http://f#g#h": False, "http://[::1]x/": False,
}
RELATIVE = {"//foo": True, "/a/b": True, "foo": True, "#frag": True, "?q": True, "": True, "./a:b": True, "a/b:c": True,
            "a:b": True, ":a": False, "//a b": False, "%": False, "[": False}


@pytest.mark.parametrize("fmt", ["uri", "uri-reference"])
def test_format_uri(fmt) -> None:
    m = masker_for(json.dumps({"type": "string", "format": fmt}))
    cases = dict(URIS)
    if fmt == "uri-reference":
        cases.update(RELATIVE)
    for text, valid in cases.items():
        assert accepts(m, json.dumps(text)) == valid, (fmt, text)
    assert not accepts(m, "1")


def test_format_uri_against_rfc3986_validator() -> None:
    """Where rfc3986-validator (jsonschema's URI checker) is installed: random strings over URI characters."""
    import random
    import re

    validator = pytest.importorskip("rfc3986_validator")
    from greatgramma.frontends.formats import FORMATS

    rng, alphabet = random.Random(0), "a:/?#[]@!$&'()*+,;=%-._~1AFz v\u00e9"
    for _ in range(3000):
        text = rng.choice(["", "http://", "a:", "//", "x://[", "s://u@", "http://[::"]) + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
        for fmt, rule in (("uri", "URI"), ("uri-reference", "URI_reference")):
            assert (re.fullmatch(FORMATS[fmt], text) is not None) == bool(validator.validate_rfc3986(text, rule=rule)), (fmt, text)

IPV6 = ["::", "::1", "1::", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "fe80::1:2", "FFFF::abcd",
        "::ffff:1.2.3.4", "1:2:3:4:5:6:1.2.3.4", "::1.2.3.4", "64:ff9b::192.0.2.33", "0000:0000::0000",
        "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", "1::2::3", ":1::2", "1::2:", "12345::", "g::", "::ffff:1.2.3.256",
        "::ffff:01.2.3.4", "1:2:3:4:5:6:7:1.2.3.4", "fe80::1%eth0", "fe80::1%", "", ":", ":::", "1.2.3.4", " ::1"]


def test_format_ipv6() -> None:
    """ipv6 as jsonschema checks it (``ipaddress.IPv6Address``, no zone): hand cases, then the
    text forms of random addresses and near misses of them."""
    import ipaddress
    import random

    rng, cases = random.Random(0), list(IPV6)
    for _ in range(25):
        a = ipaddress.IPv6Address(rng.getrandbits(128) & rng.choice([(1 << 128) - 1, 0xFFFF << rng.randrange(0, 112, 16), (1 << 48) - 1]))
        for form in (a.compressed, a.exploded.upper(), "::ffff:" + str(ipaddress.IPv4Address(int(a) & 0xFFFFFFFF))):
            cases += [form, form[1:], form + ":", form.replace(":", "::", 1)]
    assert 0 < sum(oracle({"format": "ipv6"}, c) for c in cases) < len(cases)
    check({"type": "string", "format": "ipv6"}, cases)


OVERLAPPING = [  # string constraints whose languages overlap without either containing the other
    {"a": {"type": "string", "maxLength": 3}, "b": {"type": "string", "pattern": "^[a-z]+$"},
     "c": {"type": "string", "pattern": "ap"}, "d": {"type": "string", "pattern": "wi"}, "i": {"enum": ["ap", "wiap"]}},
    {"e": {"type": "string", "format": "date"}, "f": {"type": "string", "pattern": "^2", "maxLength": 12},
     "g": {"type": "string", "minLength": 10}, "h": {"type": "string", "pattern": "[0-9]$", "format": "uuid"}},
]
OVERLAP_STRINGS = ["", "a", "ab", "abc", "abcd", "ap", "wi", "wiap", "apwi", "Ap", "ap1", "2024-01-01", "2024-02-30",
                   "12024-01-01", "2", "wiwiwiwiwiap", "123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-42661417400a"]


@pytest.mark.parametrize("props", [
    {"a": {"type": "string", "maxLength": 3}, "b": {"type": "string"}, "c": {"type": "string", "minLength": 2}},
    {"a": {"type": "string", "pattern": "^[0-9]"}, "b": {"type": "string"}, "c": {"type": "string", "pattern": "^([^0-9].*)?$"}},
])
def test_constrained_strings_that_hold_every_string(props) -> None:
    """Where the constrained strings hold every string between them, the generic STRING would
    win no lexeme: it is left out (it was refused as a terminal the lexer never produces), and
    an unconstrained member takes the constrained terminals."""
    schema = {"type": "object", "properties": props, "required": ["a"]}
    check(schema, [{"a": v, "b": w} for v in OVERLAP_STRINGS[:8] for w in ("", "z", "wiap", "7x")]
          + [{"a": "ab", "c": "x"}, {"b": "x"}, {"a": "1", "c": "abc", "b": 3}])


@pytest.mark.parametrize("k", range(len(OVERLAPPING)))
def test_overlapping_string_constraints(k) -> None:
    """One schema holds a group, so the lexer holds its terminals and their intersections; each
    member is walked with every string (a pattern beside a format, a length beside a pattern)."""
    props = OVERLAPPING[k]
    schema = {"type": "object", "properties": props, "additionalProperties": {"type": "string", "maxLength": 2}}
    first = next(iter(props))
    check(schema, [{name: v} for name in props for v in OVERLAP_STRINGS] + [{"zz": v} for v in OVERLAP_STRINGS[:6]]
          + [{first: "ab", "zz": "wi"}])


@pytest.mark.parametrize("name", sorted(CASES))
def test_keyword_agrees_with_jsonschema(name: str) -> None:
    schema, instances = CASES[name]
    check(schema, instances)


def test_ref_and_recursion() -> None:
    schema = {"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
              "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]}},
              "$ref": "#/$defs/node"}
    check(schema, [{"v": 1}, {"v": 1, "kids": [{"v": 2, "kids": []}]}, {"v": 1, "kids": [{}]}])


def test_strings_are_spelled_canonically() -> None:
    """One spelling per string, as json.dumps(ensure_ascii=False) writes it: so a fixed string
    (a property name, an enum value) has one lexeme, and no other spelling can pass for another string."""
    m = masker_for(json.dumps({"enum": ["é", "a/b", "\n\u0001"]}))
    for text in ['"é"', '"a/b"', '"\\n\\u0001"']:
        assert accepts(m, text), text
    for text in ['"\\u00e9"', '"a\\/b"', '"\\u000a\\u0001"', '"e"']:
        assert not accepts(m, text), text
    m = masker_for(json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}}))
    assert not accepts(m, '{"\\u0061": "x"}')  # "a" spelled otherwise is not an additional member


def test_order_is_canonical_and_extra_members_come_last() -> None:
    more = {n: {"type": "integer"} for n in ("id", "x", "y")}
    wide = {**OBJ, "properties": {**OBJ["properties"], **more}}  # six named members
    m = masker_for(json.dumps(wide))
    assert accepts(m, '{"name": "x", "age": 1}')
    assert not accepts(m, '{"age": 1, "name": "x"}')  # outside the canonical form: refused
    assert accepts(m, '{"name": "x", "zz": 1}')
    assert not accepts(m, '{"zz": 1, "name": "x"}')
    m = masker_for(json.dumps(OBJ))  # three named members: any order
    assert accepts(m, '{"age": 1, "name": "x"}') and accepts(m, '{"tags": [], "age": 1, "name": "x", "zz": 1}')
    assert not accepts(m, '{"zz": 1, "name": "x"}') and not accepts(m, '{"age": 1}')


def test_objects_of_a_union_told_apart_by_a_value_take_any_order() -> None:
    """Objects of a oneOf (or anyOf) told apart by the value of ``type``: as separate object rules
    the parser would have to read ``type`` before it could reduce ``email``'s value (not
    LALR(1) in any order), so they are one object rule that tracks the branches ``type`` leaves;
    every order of every subset of the members, against jsonschema."""
    import itertools

    import jsonschema

    def action(kind: str) -> dict:  # (the descriptions make each branch's email a rule of its own)
        return {"type": "object", "required": ["type"],
                "properties": {"type": {"enum": [kind]}, "email": {"type": "string", "description": kind}, "id": {"type": "integer"}}}  # fmt: skip

    values = {"type": ['"add"', '"remove"', '"move"'], "email": ['"x"'], "id": ["1"]}
    for kw in ("oneOf", "anyOf"):
        schema = {kw: [action("add"), action("remove")]}
        m = masker_for(json.dumps(schema))
        for k in range(4):
            for names in itertools.permutations(values, k):
                for picked in itertools.product(*(values[n] for n in names)):
                    text = "{" + ", ".join(f'"{n}": {v}' for n, v in zip(names, picked)) + "}"
                    assert accepts(m, text) == jsonschema.validators.validator_for(schema)(schema).is_valid(json.loads(text)), (kw, text)


def test_members_of_a_union_merged_in_by_all_of_come_in_turn() -> None:
    """allOf of a part, a union, and another part: the union's members where it stands among the
    parts (the order of the parts in turn; as separate objects the branches conflict, so they
    are one object rule, each branch's member in its place), seven members: beyond any order;
    against jsonschema."""
    schema = {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a"]},
                        {"anyOf": [{"properties": {"x": {"type": "object"}}}, {"properties": {"y": {"type": "string"}}}]},
                        {"properties": {"c": {"type": "integer"}, "d": {"type": "integer"}, "e": {"type": "integer"}}}]}
    m = masker_for(json.dumps(schema))
    for inst in ({"a": 1, "b": 2, "x": {}, "c": 3, "d": 4, "e": 5}, {"a": 1, "b": 2, "y": "s", "c": 3, "e": 5},
                 {"a": 1, "x": {}, "y": "s", "d": 4}, {"a": 1, "b": 2, "x": 1, "y": 2, "c": 3}, {"b": 2, "x": {}, "c": 3}):
        assert accepts(m, json.dumps(inst)) == oracle(schema, inst), inst
    inner = {"allOf": [{"properties": {"p": {"type": "integer"}}}, schema["allOf"][1], {"properties": {"q": {"type": "integer"}}}]}
    props = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "z": {"type": "boolean"}}}
    for nested in ({"allOf": [schema["allOf"][0], {"anyOf": [inner, {"properties": {"z": {"type": "boolean"}}}]}, schema["allOf"][2]]},
                   {**props, "anyOf": [{"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}, {"required": ["z"]}]}):
        with pytest.raises(gg.GrammarError, match="LALR"):  # a union in a union's branch: not LALR(1) (refused as
            gg.Grammar.from_json_schema(nested)  # such, not a crash of the orders' bookkeeping)


def test_any_order_falls_back_to_the_canonical_form_where_lalr_cannot_take_it() -> None:
    """Objects of a oneOf told apart by the value of ``type`` whose ``data`` values overlap (``[]``
    is in both, and neither holds the other): not one object rule (``data``'s values cannot be
    split by the branches they leave), and in any order the parser would have to read ``type``
    before it could reduce ``data``'s value, so every object keeps its ``properties`` order
    instead (and the same schema without the union takes any order)."""
    def shape(kind: str, items: dict) -> dict:
        return {"type": "object", "required": ["type"],
                "properties": {"type": {"enum": [kind]}, "data": {"type": "array", "items": items}, "id": {"type": "integer"}}}  # fmt: skip

    point, line = shape("point", {"type": "integer"}), shape("line", {"type": "array", "items": {"type": "integer"}})
    m = masker_for(json.dumps({"oneOf": [point, line]}))
    assert accepts(m, '{"type": "point", "data": [1], "id": 1}') and accepts(m, '{"type": "line", "data": [[1]]}')
    assert not accepts(m, '{"data": [1], "type": "point"}') and not accepts(m, '{"type": "point", "data": [[1]]}')
    assert not accepts(m, '{"type": "move"}')
    assert accepts(masker_for(json.dumps(point)), '{"data": [1], "type": "point"}')


@pytest.mark.parametrize("required", [[], ["b"], ["a", "c"], ["a", "b", "c"]])
@pytest.mark.parametrize("extra", [None, False, {"type": "integer"}])
def test_small_objects_take_any_order(required, extra) -> None:
    """At most ``ANY_ORDER`` (5) named members: every order of every subset of three, with and
    without members the schema does not name (after the named ones), against jsonschema; an
    unnamed member before a named one is outside the form; five members in reverse order."""
    import itertools

    schema = {"type": "object", "properties": {n: {"type": "integer"} for n in "abc"}, "required": required}
    if extra is not None:
        schema["additionalProperties"] = extra
    m = masker_for(json.dumps(schema))
    for k in range(4):
        for names in itertools.permutations("abc", k):
            for tail in ([], [("z", 1)], [("z", 1), ("y", "s")]):
                inst = dict([(n, i) for i, n in enumerate(names)] + tail)
                text = json.dumps(inst)
                assert accepts(m, text) == oracle(schema, inst), text
    assert not accepts(m, '{"y": 1, "a": 1, "b": 1, "c": 1, "z": 1}')
    schema["properties"].update({n: {"type": "integer"} for n in "de"})
    m = masker_for(json.dumps(schema))
    assert accepts(m, '{"e": 1, "d": 1, "c": 1, "b": 1, "a": 1}') and not accepts(m, '{"e": 1, "d": 1, "e": 1}')


@pytest.mark.parametrize("required", [[], ["p0"], ["p3"], ["p5"], ["p1", "p4"], [f"p{i}" for i in range(6)]])
@pytest.mark.parametrize("extra", [None, False, {"type": "integer"}])
def test_optional_members_every_subset(required, extra) -> None:
    """The object rules (blocks of optional members, the comma before the choice): every subset of
    the named members in order, with and without members the schema does not name, out of order."""
    import itertools

    names = [f"p{i}" for i in range(6)]
    schema = {"type": "object", "properties": {n: {"type": "integer"} for n in names}, "required": required}
    if extra is not None:
        schema["additionalProperties"] = extra
    m = masker_for(json.dumps(schema))
    for k in range(len(names) + 1):
        for subset in itertools.combinations(names, k):
            for tail in ([], [("zz", 1)], [("zz", 1), ("zy", "s")]):
                inst = dict([(n, i) for i, n in enumerate(subset)] + tail)
                text = json.dumps(inst)
                assert accepts(m, text) == oracle(schema, inst), text
    for a, b in itertools.combinations(names, 2):  # two named members out of order: outside both canonical orders
        inst = {**{n: 0 for n in required if n not in (a, b)}, b: 1, a: 2}
        assert accepts(m, json.dumps(inst)) == in_order(list(inst), [*required, *(n for n in names if n not in required)])


def in_order(written: list[str], order: list[str]) -> bool:
    """The members written keep ``order``."""
    places = [order.index(n) for n in written]
    return places == sorted(places)


@pytest.mark.parametrize("required", [["p4", "p1"], ["p2", "p0", "p4"], ["p3"], ["p1", "p2"]])
@pytest.mark.parametrize("extra", [None, False])
def test_required_members_first_is_the_other_canonical_order(required, extra) -> None:
    """Six to ``FEW_ORDERS`` named members: in the order of ``properties``, or the required ones
    first (in the order of ``required``) and then the others (in ``properties`` order); every
    order of every subset of up to four, with and without an unnamed member, against that rule
    and jsonschema."""
    import itertools

    names = [f"p{i}" for i in range(6)]
    schema = {"type": "object", "properties": {n: {"type": "integer"} for n in names}, "required": required}
    if extra is not None:
        schema["additionalProperties"] = extra
    second = [*required, *(n for n in names if n not in required)]
    m = masker_for(json.dumps(schema))
    for k in range(5):
        for written in itertools.permutations(names, k):
            for tail in ([], [("zz", 1)]):
                inst = dict([(n, i) for i, n in enumerate(written)] + tail)
                canonical = in_order(list(written), names) or in_order(list(written), second)
                assert accepts(m, json.dumps(inst)) == (canonical and oracle(schema, inst)), inst


@pytest.mark.parametrize("combinator", ["allOf", "oneOf", "$ref"])
def test_merged_members_may_come_first(combinator) -> None:
    """Where a merge joins two lists of properties (an allOf part, a oneOf branch and the schema
    around it, a $ref beside properties), the merged-in part's members may also come first. Seven
    members (past ANY_ORDER): every order of every subset of up to three and each order written
    in full, against the three orders and jsonschema."""
    import itertools

    own = {f"p{i}": {"type": "integer"} for i in range(4)}
    part = {"properties": {f"q{i}": {"type": "integer"} for i in range(3)}, "required": ["q1"]}
    schema = {"type": "object", "properties": own}
    if combinator == "$ref":
        schema.update({"$ref": "#/$defs/part", "$defs": {"part": part}})
        first, second = list(part["properties"]), list(own)  # the target, then the keywords beside it
    else:
        schema[combinator] = [part]
        first, second = list(own), list(part["properties"])
    names = first + second
    orders = [names, ["q1", *(n for n in names if n != "q1")], second + first]
    m = masker_for(json.dumps(schema))
    written_lists = [w for k in range(4) for w in itertools.permutations(names, k)] + [tuple(o) for o in orders]
    for written in written_lists + [tuple(reversed(o)) for o in orders]:
        inst = {n: i for i, n in enumerate(written)}
        expected = any(in_order(list(written), o) for o in orders) and oracle(schema, inst)
        assert accepts(m, json.dumps(inst)) == expected, inst


@pytest.mark.parametrize("branches", [[["b"], ["d"], ["a", "e"]], [["a"], []], [["e"], ["a", "e"]]])
@pytest.mark.parametrize("extra", [False, {"type": "string"}])
def test_any_of_required_sets(branches, extra) -> None:
    """anyOf over objects that differ only in ``required``: one object rule that tracks which
    required sets are still possible; every subset of the members, with and without an extra one."""
    import itertools

    schema = {"type": "object", "additionalProperties": extra, "required": ["c"], "anyOf": [{"required": r, "title": "t"} for r in branches],
              "properties": {n: {"type": "integer"} for n in "abcde"}}
    m = masker_for(json.dumps(schema))
    for k in range(6):
        for subset in itertools.combinations("abcde", k):
            for tail in ([], [("z", "s")]):
                inst = dict([(n, 1) for n in subset] + tail)
                assert accepts(m, json.dumps(inst)) == oracle(schema, inst), inst


ONE_OF_REQUIRED = [  # (branches' required sets, named members): any order (<= 5 members), few orders, one order
    ([["b"], ["d"], ["a", "e"]], "abcde"),
    ([["a"], []], "abc"),
    ([["a", "b"], ["b", "c"], ["d"]], "abcdefg"),
    ([["p"], ["q", "r"], []], "pqrstuvwxyz"),
    ([["a"], ["a", "b"]], "abcdef"),
]


@pytest.mark.parametrize("k", range(len(ONE_OF_REQUIRED)))
@pytest.mark.parametrize("extra", [False, {"type": "string"}])
def test_one_of_required_sets(k, extra) -> None:
    """oneOf over objects that differ only in ``required``: exactly one set all present. Every
    subset of the members (up to 4 of them, beyond 7), in ``properties`` order and with the
    common required member first, with and without an extra one; and non-objects, which match
    every branch or none."""
    import itertools

    branches, names = ONE_OF_REQUIRED[k]
    schema = {"additionalProperties": extra, "required": ["c"] if "c" in names else [],
              "oneOf": [{"required": r} for r in branches], "properties": {n: {"type": "integer"} for n in names}}
    m = masker_for(json.dumps(schema))
    seen = [0, 0]
    for size in range(min(len(names), 4 if len(names) > 7 else len(names)) + 1):
        for subset in itertools.combinations(names, size):
            for tail in ([], [("z", "s")]):
                inst = dict([(n, 1) for n in subset] + tail)
                first = dict(sorted(inst.items(), key=lambda kv: kv[0] != "c"))
                for doc in (inst, first):
                    expected = oracle(schema, doc)
                    seen[expected] += 1
                    assert accepts(m, json.dumps(doc)) == expected, doc
    assert all(seen), seen  # valid and invalid instances both
    for other in (1, "s", None, [], [1]):
        assert not accepts(m, json.dumps(other)) and not oracle(schema, other)


def test_one_of_takes_each_branchs_required_members_first() -> None:
    """Instances that write the common required members, then one branch's, then the rest (as
    MaskBench's do) are in one of the orders an object with branches takes."""
    schema = {"type": "object", "additionalProperties": False,
              "properties": {n: {"type": "integer"} for n in ["tags", "ids", "start", "end", "duration", "path", "agg"]},
              "allOf": [{"required": ["path", "agg"]}, {"oneOf": [{"required": ["start", "end"]}, {"required": ["duration"]}]}]}
    check(schema, [{"path": 1, "agg": 1, "start": 1, "end": 2, "tags": 1, "ids": 1},
                   {"path": 1, "agg": 1, "duration": 1, "tags": 1},
                   {"path": 1, "agg": 1, "start": 1, "end": 2, "duration": 1},
                   {"path": 1, "agg": 1, "start": 1, "tags": 1}])


MEMBER_CONDITIONS = [  # (the keyword and its value, the object's required members)
    ({"dependencies": {"a": ["b"]}}, []),
    ({"dependentRequired": {"a": ["b", "c"], "d": ["a"]}}, []),
    ({"dependencies": {"b": ["a"], "c": {"required": ["a", "d"]}}}, ["c"]),
    ({"dependentSchemas": {"a": {"properties": {"b": False}}, "c": {"properties": {"d": {"not": {}}}, "required": ["e"]}}}, []),
    ({"dependentSchemas": {"a": {"properties": {"b": False}}}, "dependentRequired": {"b": ["d"]}}, ["e"]),
    ({"dependentRequired": {"a": ["e"], "b": ["e"], "c": ["e"], "d": ["a", "e"], "e": []}}, []),  # 2 ways of 16
    ({"dependencies": {"a": False, "b": ["c"], "x1": ["a"]}}, []),  # x1 is not named: an extra member, tracked by name
    ({"not": {"required": ["a", "b"]}}, []),
    ({"not": {"anyOf": [{"required": ["a"]}, {"required": ["c", "d"]}]}, "dependencies": {"b": ["e"]}}, ["e"]),
]


@pytest.mark.parametrize("k", range(len(MEMBER_CONDITIONS)))
@pytest.mark.parametrize("names", ["abcde", "abcdefg", "abcdefghijklmnopqrstuvwxyz"])  # any order, few orders, one order
@pytest.mark.parametrize("extra", [True, False])
def test_member_conditions_agree_with_jsonschema(k, names, extra) -> None:
    """``dependencies`` / ``dependentRequired`` / ``dependentSchemas`` (names required or forbidden
    when a member is present; each read in every draft) and ``not`` of ``required``: every subset of the members (of 26,
    those the dependencies name and two others), in ``properties`` order (members a schema does not name follow the named ones), with and without an extra
    member, against jsonschema; on the three object paths."""
    import itertools

    keyword, required = MEMBER_CONDITIONS[k]
    schema = {"type": "object", "properties": {n: {"type": "integer"} for n in names}, "required": required,
              "additionalProperties": extra, **keyword}
    if "dependencies" in keyword:  # (a keyword up to draft 7, read in every draft: jsonschema's 2020-12 ignores it)
        schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    m = masker_for(json.dumps(schema))
    seen = [0, 0]
    some = names if len(names) <= 7 else "abcdekz"  # (of 26: those the dependencies name, and two others)
    for size in range(len(some) + 1):
        for subset in itertools.combinations(some, size):
            for tail in ([], [("x1", 1)], [("x2", 1)]):
                inst = dict([(n, 1) for n in subset] + tail)
                expected = oracle(schema, inst)
                seen[expected] += 1
                assert accepts(m, json.dumps(inst)) == expected, inst
    assert all(seen), seen  # valid and invalid instances both
    del schema["type"]  # (non-objects: `required` holds for them, so `not` of it does not)
    for other in (1, "s", None, [1]):
        assert accepts(masker_for(json.dumps(schema)), json.dumps(other)) == oracle(schema, other), other


OBJECT_UNIONS = [  # oneOf over objects that only their members' values tell apart: (schema, values to try per member)
    ({"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "boolean"}}, "additionalProperties": False},
                {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "boolean"}}, "additionalProperties": False}]},
     {"kind": ["a", "b", "c"], "x": [True], "y": [False]}),
    ({"type": "object", "oneOf": [{"properties": {"type": {"enum": ["callback"]}, "value": {"type": "string"}}},
                                  {"properties": {"type": {"enum": ["field", "value"]}, "value": {"type": ["string", "null", "number"]}},
                                   "required": ["type"]}]},
     {"type": ["callback", "field", "other"], "value": ["s", None, 1.5, True], "zz": [1]}),
    ({"oneOf": [{"type": "null"}, {"type": "object", "properties": {"n": {"type": "integer"}, "s": {"enum": ["a", "b"]}}},
                {"type": "object", "properties": {"n": {"type": "string"}, "s": {"enum": ["c"]}}, "required": ["s"]}]},
     {"n": [1, "t"], "s": ["a", "c"]}),
    ({"oneOf": [{"properties": {"v": {"enum": [1, 2]}}}, {"type": "object", "properties": {"v": {"enum": [3]}}, "required": ["v"]}]},
     {"v": [1, 3, 4]}),
    ({"type": "object", "properties": {n: {"type": "integer"} for n in "pqrst"},  # seven members: beyond any order
      "oneOf": [{"properties": {"shape": {"const": "circle"}}, "required": ["r"]}, {"properties": {"shape": {"const": "square"}}, "required": ["p"]}]},
     {"p": [2], "q": [3], "r": [1], "shape": ["circle", "square"]}),
    ({"oneOf": [{"type": "object", "properties": {"k": {"const": c}, **{f"m{i}": {"type": "integer"} for i in range(5)}}} for c in "ab"]},
     {"k": ["a", "b", "c"], "m0": [1], "m3": [2.5]}),  # one order only
    ({"oneOf": [{"type": "object", "properties": {"k": {"const": "a"}, "x": {"type": "string"}}, "additionalProperties": False},
                {"type": "object", "properties": {"k": {"type": "string", "pattern": "^b"}, "y": {"type": "integer"}}}]},
     {"k": ["a", "b", "c"], "x": ["s"], "y": [1], "zz": [1]}),  # additional members rule out the first
    ({"oneOf": [{"type": "object", "properties": {"s": {"type": "string", "pattern": "^a"}}, "required": ["s"]},
                {"type": "object", "properties": {"s": {"type": "string", "minLength": 2}, "n": {"type": "string", "maxLength": 1}},
                 "required": ["n"]}]},
     {"s": ["a", "ab", "b", "bb", 1], "n": ["", "nn", 1]}),  # overlapping string languages: split into disjoint ones
]


@pytest.mark.parametrize("kw", ["oneOf", "anyOf"])
@pytest.mark.parametrize("k", range(len(OBJECT_UNIONS)))
def test_object_unions_agree_with_jsonschema(k, kw) -> None:
    """A oneOf (or the same anyOf) of objects told apart member by member (a discriminator that
    is not required, a member whose values split by type, a branch without ``type``, a non-object
    branch, an object past ``ANY_ORDER`` members, a branch without additional members, strings of
    overlapping languages), as one object rule (``object_unions``: an
    anyOf takes that form where its separate object rules are not LALR(1)): every choice of values
    for up to three members, in ``properties`` order (and reversed: never accepted where
    invalid), and some non-objects, against jsonschema."""
    import itertools

    from greatgramma.frontends.json_schema import json_schema_to_lark

    schema, values = OBJECT_UNIONS[k]
    schema = {(kw if key == "oneOf" else key): v for key, v in schema.items()}
    m = gg.Masker(gg.compile(gg.Grammar(json_schema_to_lark(schema, object_unions=True), strict=True), byte_vocab()))
    seen = [0, 0]
    names = list(values)
    for size in range(min(len(names), 3) + 1):
        for subset in itertools.combinations(names, size):
            for choice in itertools.product(*(values[n] for n in subset)):
                inst = dict(zip(subset, choice))
                expected = oracle(schema, inst)
                seen[expected] += 1
                assert accepts(m, json.dumps(inst)) == expected, inst
                reverse = dict(reversed(list(inst.items())))  # (valid, yet outside the form past ANY_ORDER members)
                assert not accepts(m, json.dumps(reverse)) or oracle(schema, reverse), reverse
    assert all(seen), seen
    for other in (None, 1, "s", [1]):
        assert accepts(m, json.dumps(other)) == oracle(schema, other), other


@pytest.mark.parametrize("schema", [
    {"type": "object", "not": {"required": ["body", "bodyValue"]}},
    {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"a": {"type": "integer"}},
     "dependencies": {"x1": ["a"], "a": {"properties": {"x2": False}}}},
])
def test_undeclared_names_of_conditions_go_among_the_additional_members(schema) -> None:
    """Names that only ``dependencies`` or ``not`` name are tracked as members, yet stay where
    additional members may be: every order of up to four members, against jsonschema."""
    import itertools

    m = masker_for(json.dumps(schema))
    seen = [0, 0]
    for size in range(5):
        for names in itertools.permutations(["a", "body", "bodyValue", "x1", "x2", "z"], size):
            inst = {n: 1 for n in names}
            expected = oracle(schema, inst)
            seen[expected] += 1
            assert accepts(m, json.dumps(inst)) == expected, inst
    assert all(seen), seen


def test_dependencies_with_a_real_tokenizer(llama3) -> None:
    """Billing details that need each other, walked in Llama-3's tokens (pretty-printed, as
    MaskBench writes instances): members in ``properties`` order with the dependent ones present,
    missing, and forbidden."""
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"name": {"type": "string"}, "credit_card": {"type": "string"}, "billing_address": {"type": "string"},
                             "cash": {"type": "boolean"}},
              "required": ["name"],
              "dependencies": {"credit_card": ["billing_address"], "cash": {"properties": {"credit_card": False}}}}
    docs = [{"name": "Ada"}, {"name": "Ada", "credit_card": "4111", "billing_address": "1 Main St"},
            {"name": "Ada", "credit_card": "4111"}, {"name": "Ada", "billing_address": "1 Main St", "cash": True},
            {"name": "Ada", "credit_card": "4111", "billing_address": "1 Main St", "cash": False}, {"billing_address": "x"}]
    check_texts(schema, [json.dumps(d, indent=2) for d in docs], real=llama3)


@pytest.mark.parametrize("schema, kw", [
    ({"type": "object", "dependencies": {"a": {"properties": {"b": {"type": "string"}}}}}, "dependencies"),
    ({"type": "object", "dependentRequired": {"a": "b"}}, "dependentRequired"),
    ({"type": "object", "dependentRequired": {n: [m] for n, m in zip("abcde", "fghij")}}, "dependentRequired"),  # 32 ways
])
def test_dependencies_past_what_is_supported_are_refused(schema, kw) -> None:
    """Dependent schemas that constrain values, a malformed value, and five independent
    dependencies (2**5 ways to meet them, past ``MAX_BRANCHES``)."""
    with pytest.raises(SchemaError) as err:
        gg.Grammar.from_json_schema(schema)
    assert err.value.keyword == kw, err.value


@pytest.mark.parametrize("schema", [
    {"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "^b"}, {"type": "integer"}]},
    {"oneOf": [{"pattern": "^a"}, {"type": "string", "pattern": "^b"}]},  # only strings could be both
    {"oneOf": [{"enum": ["a", "bc", 3]}, {"type": "string", "pattern": "^b[0-9]"}]},
    {"type": "string", "oneOf": [{"maxLength": 0}, {"pattern": "^a", "minLength": 2}, {"minLength": 1, "maxLength": 1}]},
    {"oneOf": [{"type": "object", "properties": {"k": {"enum": ["a", "c"]}, "v": {"type": "integer"}}, "required": ["k"]},
               {"type": "object", "properties": {"k": {"type": "string", "pattern": "^b"}}, "required": ["k"]}]},
])
def test_one_of_told_apart_by_string_languages(schema) -> None:
    """oneOf alternatives whose common instances could only be strings, and whose patterns (or a
    pattern and the other's constants, or their length bounds) no string satisfies both of."""
    check(schema, ["a", "a1", "ab", "b", "b1", "bc", "bb", "c", "", 3, 4, None, [], {}, {"k": "a"}, {"k": "a", "v": 1},
                   {"k": "b2"}, {"k": "b2", "v": "x"}, {"k": "c"}, {"k": 1}, {"v": 1}])


@pytest.mark.parametrize("schema", [
    {"oneOf": [{"type": "string", "pattern": "a"}, {"type": "string", "pattern": "b"}]},
    {"type": "string", "oneOf": [{"pattern": "customer"}, {"pattern": "maker"}, {"pattern": "admin"}]},
    {"oneOf": [{"pattern": "^a"}, {"pattern": "b$"}, {"type": "integer"}]},  # non-strings: the integers alone
    {"oneOf": [{"type": "string", "format": "date"}, {"type": "string", "pattern": "^2"}, {"type": ["number", "null"]}]},
    {"oneOf": [{"type": "string"}, {"type": ["string", "null"], "pattern": "^2"}, {"type": "number"}]},
    {"oneOf": [{"pattern": "^a"}, {"pattern": "^b"}]},  # every non-string is both: none is valid
    {"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "b"}]},  # "ab" is both
    {"oneOf": [{"type": "string"}, {"type": "string"}, {"type": "number"}]},  # equal: every string is both
])
def test_one_of_over_overlapping_string_languages(schema) -> None:
    """oneOf alternatives that constrain strings alone and may both match: the strings exactly one
    takes (its language less the others', a language of its own) and the values of each other
    type exactly one takes, against jsonschema."""
    check(schema, ["a", "b", "ab", "ba", "x", "", "customer", "makercustomer", "admin", "2020-01-01", "2x", "1999-12-31",
                   1, 2, 1.5, None, True, [], {}])


@pytest.mark.parametrize("schema", [
    {"oneOf": [{"type": "array", "minItems": 1, "items": {"type": "integer"}}, {"type": "array", "items": {"type": "string"}}]},
    {"oneOf": [{"type": "array", "maxItems": 1}, {"type": "array", "minItems": 2, "items": {"type": "string"}}]},
    {"oneOf": [{"type": "array", "minItems": 2, "items": {"type": "number"}},  # GeoJSON's Point and LineString
               {"type": "array", "minItems": 2, "items": {"type": "array", "minItems": 2, "items": {"type": "number"}}}]},
    {"oneOf": [{"type": "object", "properties": {"v": {"type": "array", "minItems": 1, "items": {"type": "integer"}}}, "required": ["v"]},
               {"type": "object", "properties": {"v": {"type": "array", "items": {"type": "boolean"}}}, "required": ["v"]}]},
])
def test_one_of_told_apart_by_array_items(schema) -> None:
    """oneOf alternatives whose common instances could only be arrays, and no array is both: one
    needs an item and their items' schemas are disjoint, or their length bounds do not meet (as
    a required member's values too)."""
    check(schema, [[], [1], [1, 2], ["a"], ["a", "b"], [True], [[1, 2]], [[1, 2], [3, 4]], [[1]], [1, "a"], {"v": []},
                   {"v": [1]}, {"v": [True]}, {"v": [1, True]}, {"v": "x"}, {}, 3])


@pytest.mark.parametrize("schema", [
    {"oneOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "array", "items": {"type": "string"}}]},  # [] is both
    {"type": "object", "properties": {"a": {}}, "oneOf": [{"required": ["a"]}, {"required": ["a"]}]},
    {"type": "object", "required": ["a", "b"], "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
    {"oneOf": [{"type": "object", "title": "x"}, {"type": "object", "title": "y"}]},  # equal but for annotations
    {"oneOf": [{"type": "string"}, {"type": ["string", "integer"], "pattern": "^2"}, {"type": "number"}]},  # non-integers alone
])
def test_one_of_with_branches_that_always_hold_together_is_refused(schema) -> None:
    """Equal branches of a oneOf both hold wherever one does, so they never count as one: the
    schema is refused (or found empty), never read as if they were one branch."""
    with pytest.raises(gg.GrammarError, match="no instance is valid|may both match"):
        gg.Grammar.from_json_schema(schema)


@pytest.mark.parametrize("whitespace", ["compact", 2])
def test_whitespace_options(whitespace) -> None:
    m = masker_for(json.dumps(OBJ), whitespace=whitespace)
    assert accepts(m, '{"name":"x","age":1}')
    assert accepts(m, '{}') is False  # name is required
    pretty = '{\n "name": "x"\n}'
    assert accepts(m, pretty) == (whitespace == 2)
    assert not accepts(m, '{"name":   "x"}')  # a run of 3


def test_additional_properties_option() -> None:
    m = masker_for(json.dumps(OBJ), additional_properties=False)
    assert accepts(m, '{"name": "x"}') and not accepts(m, '{"name": "x", "z": 1}')


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=6))
def test_string_lengths_count_code_points(s: str) -> None:
    schema = {"type": "string", "minLength": 2, "maxLength": 4}
    m = masker_for(json.dumps(schema))
    text = json.dumps(s, ensure_ascii=False)
    assert accepts(m, text) == oracle(schema, s), text


@pytest.mark.parametrize(
    "schema, pointer",
    [
        ({"not": {"required": ["a"], "minProperties": 2}}, "#/not"),
        ({"properties": {"a": {"type": "array", "uniqueItems": True}}}, "#/properties/a/uniqueItems"),
        ({"properties": {"a": {"type": "string", "format": "iri"}}}, "#/properties/a/format"),
        ({"type": "string", "pattern": "(?=a)"}, "#/pattern"),
        ({"type": "string", "maxLength": 100000}, "#/maxLength"),
        ({"patternProperties": {"^x": {}, "y$": {"type": "integer"}}}, "#/patternProperties"),
        ({"patternProperties": {"(?=x)": {}}}, "#/patternProperties/(?=x)"),
        ({"properties": {"a": False, "b": {"type": "string", "enum": [1]}}, "required": ["b"]}, "#/properties/b"),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "patternProperties": {"^a": {"type": "integer"}}, "additionalProperties": False},
         "#/properties/a"),  # no valid value, and no rule would keep its literal in the lexer
        ({"$ref": "http://example.com/s.json"}, "#/$ref"),
        ({"oneOf": [{"type": "array"}, {"type": "array", "maxItems": 3}]}, "#/oneOf"),
        ({"type": "number", "not": {"type": "integer"}}, "#/not"),
        ({"allOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}], "$defs": {"a": {"additionalProperties": {"$ref": "#/$defs/a2"}},
          "a2": {"additionalProperties": {"$ref": "#/$defs/a"}, "minProperties": 1}, "b": {"additionalProperties": {"$ref": "#/$defs/b"}}}},
         "allOf"),
        ({"type": "object", "additionalProperties": False, "properties": {"a": {"type": "string", "not": {"enum": ["q"]}}}}, "#/properties/a/not"),
        ({"oneOf": [{"required": ["a"], "properties": {"a": {"type": "integer"}}}, {"required": ["b"]}]}, "#/oneOf"),
        ({"oneOf": [{"required": ["a"], "additionalProperties": False}, {"required": ["b"], "additionalProperties": False}]}, "#: no instance"),
    ],
)
def test_refusals_name_keyword_and_pointer(schema, pointer) -> None:
    with pytest.raises(gg.GrammarError) as err:
        gg.Grammar.from_json_schema(schema)
    assert pointer in str(err.value)


@pytest.mark.parametrize("draft", ["draft-04", "2020-12"])
def test_plain_name_references(draft) -> None:
    """``$ref: "#name"`` names the subschema that declares it (``id: "#name"`` in draft-04 to 07,
    ``$anchor`` since 2019-09), not the root: an invalid member value is refused (MaskBench
    Github_easy---o35904 accepted ``-1`` against ``minimum: 0`` when the name fell back to the root)."""
    if draft == "draft-04":
        root = {"$schema": "http://json-schema.org/draft-04/schema#", "definitions": {
            "drive": {"id": "#drive", "type": "object", "properties": {"limit": {"type": "number", "minimum": 0}},
                      "required": ["limit"]}}}
    else:
        root = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": {
            "drive": {"$anchor": "drive", "type": "object", "properties": {"limit": {"type": "number", "minimum": 0}},
                      "required": ["limit"]}}}
    schema = {**root, "type": "object", "properties": {"d": {"$ref": "#drive"}}}
    check(schema, [{"d": {"limit": 1}}, {"d": {"limit": -1}}, {"d": {}}, {"d": 3}, {}])
    for ref, why in (("#nowhere", "points nowhere"), ("#drive/limit", "points nowhere")):
        with pytest.raises(SchemaError, match=why):
            gg.Grammar.from_json_schema({**schema, "properties": {"d": {"$ref": ref}}})
    twice = {**schema, "definitions": {"a": {"$anchor": "drive"}, "b": {"id": "#drive"}}}
    with pytest.raises(SchemaError, match="more than one subschema"):
        gg.Grammar.from_json_schema(twice)


def test_bad_input() -> None:
    with pytest.raises(SchemaError, match="not JSON"):
        gg.Grammar.from_json_schema("{")
    with pytest.raises(SchemaError, match="object or a boolean"):
        gg.Grammar.from_json_schema([1])
    gg.Grammar.from_json_schema({"type": "string", "title": "t", "x-custom": 1})  # annotations are ignored


MALFORMED = [  # (schema, pointer and keyword named, what is wrong)
    ({"type": "string", "maxLength": -1}, "#/maxLength", "non-negative integer, not -1"),
    ({"type": "string", "minLength": True}, "#/minLength", "non-negative integer, not true"),
    ({"type": "array", "minItems": "2"}, "#/minItems", "non-negative integer"),
    ({"type": "object", "minProperties": 1.5}, "#/minProperties", "non-negative integer, not 1.5"),
    ({"allOf": [{"maxLength": "x"}, {"maxLength": 3}]}, "#/allOf/0/maxLength", "non-negative integer"),
    ({"type": "string", "pattern": 3}, "#/pattern", "must be a string"),
    ({"type": "string", "format": ["date"]}, "#/format", "must be a string"),
    ({"type": "object", "required": [1]}, "#/required", "array of strings"),
    ({"type": "object", "required": True}, "#/required", "draft 3"),
    ({"type": 3}, "#/type", "type name"),
    ({"type": "array", "prefixItems": 3}, "#/prefixItems", "must be an array"),
    ({"type": "array", "uniqueItems": "yes"}, "#/uniqueItems", "must be a boolean"),
    ({"type": "integer", "multipleOf": 0}, "#/multipleOf", "greater than 0"),
    ({"type": "object", "properties": {"a": {"type": "string", "maxLength": 300}}}, "#/properties/a/maxLength",
     "300 is past the bound on unrolled lengths, max_repeat=128"),
    ({"type": "number", "maximum": None}, "#/maximum", "must be a finite number, not null"),
    ({"type": "integer", "minimum": float("inf")}, "#/minimum", "must be a finite number, not Infinity"),
    ({"allOf": "#/$defs/a"}, "#/allOf", "non-empty array"),
    ({"allOf": ["a"]}, "#/allOf/0", "object or a boolean"),
    ({"$defs": 2}, "#/$defs", "must be an object"),
    ({"not": {"type": False}}, "#/not/type", "type name"),
    ({"oneOf": [{}, {"type": 0}]}, "#/oneOf/1/type", "type name"),
    ({"properties": {}, "$ref": "#"}, "#", "refers to itself without end"),
    ({"allOf": [{"enum": [1, 2]}, {"$ref": "#"}]}, "#", "refers to itself without end"),  # (not handed to jsonschema:
    # it recursed without end, at times as a panic from its Rust resolver that `except Exception` missed)
    ({"type": "object", "patternProperties": {"a": {"type": "string"}, "ab": [1]}}, "#/patternProperties/ab",
     "object or a boolean, not list"),  # (merged with the other pattern's schema before it was read)
    ({"oneOf": [{"properties": {"a/b": None}, "required": ["a/b"]}, {"required": ["c"]}]}, "#/oneOf/0/properties/a~1b",
     "object or a boolean, not NoneType"),  # (read by the oneOf's disjointness check first)
    ({"type": "object", "additionalProperties": "false"}, "#/additionalProperties", "must be a schema"),
    ({"not": 3}, "#/not", "must be a schema"),
    ({"type": "array", "items": "string"}, "#/items", "must be a schema"),
    ("[" * 100000, "#", "nests too deeply"),
]


@pytest.mark.parametrize("k", range(len(MALFORMED)))
def test_malformed_keyword_values_are_refused_by_name(k) -> None:
    """A keyword's malformed value is a SchemaError naming it, never a TypeError from inside
    (or, for a negative length, a grammar with a nonsense bound)."""
    schema, where, why = MALFORMED[k]
    with pytest.raises(SchemaError) as err:
        gg.Grammar.from_json_schema(schema)
    assert str(err.value).startswith(f"{where}: ") and why in str(err.value), str(err.value)


KEYWORDS = ["type", "enum", "const", "properties", "required", "additionalProperties", "items", "prefixItems",
            "minItems", "maxItems", "uniqueItems", "pattern", "minLength", "maxLength", "format", "minimum",
            "maximum", "exclusiveMinimum", "multipleOf", "minProperties", "anyOf", "oneOf", "allOf", "$ref", "not",
            "$defs", "patternProperties"]
ODD_VALUES = st.sampled_from([None, True, False, -1, 0, 2, 2.5, 2.0, "x", "string", "#", "#/$defs/a", "[a-z]+", "date",
                              [], ["a"], [1], ["string", "null"], {}, {"a": {}}])
ODD_SCHEMAS = st.recursive(
    st.dictionaries(st.sampled_from(KEYWORDS), ODD_VALUES, max_size=4),
    lambda inner: st.dictionaries(st.sampled_from(KEYWORDS), inner | st.lists(inner, max_size=3) | ODD_VALUES
                                  | st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2), max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(ODD_SCHEMAS)
def test_any_schema_gives_a_grammar_or_a_schema_error(schema) -> None:
    """Whatever a request sends, the front end answers with a grammar or a GrammarError, never
    another exception (random keywords with well- and ill-formed values, nested)."""
    try:
        gg.Grammar.from_json_schema(schema)
    except gg.GrammarError:
        pass


def _random_union(rng) -> dict:
    """A small oneOf/anyOf (or one an allOf merges in) over objects, strings or arrays."""
    def value():
        return rng.choice([{"type": "string", "pattern": rng.choice(["^a", "b", "a|b"])}, {"type": "string"}, {"type": "integer"},
                           {"enum": rng.sample(["a", "b", 1, None], 2)}, {"const": rng.choice(["a", 1, True])}, {"type": ["string", "null"]},
                           {"type": "string", "minLength": 2}, {"type": "array", "items": {"type": "integer"}}, True])

    def obj(typed=True):
        names = rng.sample(["a", "b", "c", "k"], rng.randint(1, 3))
        out = {"properties": {n: value() for n in names}, **({"type": "object"} if typed else {})}
        if rng.random() < 0.5:
            out["required"] = rng.sample(names, rng.randint(1, len(names)))
        if rng.random() < 0.3:
            out["additionalProperties"] = False
        return out

    kw, r = rng.choice(["oneOf", "anyOf"]), rng.random()
    if r < 0.55:
        return {kw: [obj(rng.random() < 0.8) for _ in range(rng.randint(2, 3))]}
    if r < 0.75:
        return {"allOf": [{"type": "object", "properties": {"p": {"type": "integer"}}}, {kw: [obj(False), obj(False)]},
                          {"properties": {"q": {"type": "string"}}}]}
    if r < 0.9:
        return {"oneOf": [rng.choice([{"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "b"}, {"type": "string"},
                                      {"type": "string", "maxLength": 1}, {"pattern": "^a"}, {"type": ["string", "null"]},
                                      {"type": "integer"}]) for _ in range(rng.randint(2, 3))]}
    return {"oneOf": [{"type": "array", "items": {"type": rng.choice(["integer", "string"])}, "minItems": rng.randint(0, 2)}
                      for _ in range(2)]}


@pytest.mark.parametrize("seed", range(8))
def test_random_unions_accept_only_valid_instances(seed) -> None:
    """Random unions (the object, string and array unions above, with and without
    ``additionalProperties``, ``required``, overlapping languages): each compiles or is refused
    with a GrammarError, and an accepted instance is one jsonschema finds valid (random members
    in random orders); where the objects take any order (at most five names, no fallback to
    ``properties`` order), an instance of members every alternative declares is accepted
    exactly when valid."""
    import random

    import jsonschema

    from greatgramma.frontends.json_schema import json_schema_to_lark

    def takes_any_order(schema) -> bool:
        for unions in (False, True):
            try:
                gg.Grammar(json_schema_to_lark(schema, object_unions=unions), strict=True)
                return True
            except gg.GrammarError:
                pass
        return False

    rng = random.Random(seed)
    pool = ["a", "b", "ab", "ba", "x", "", "aa", 1, 2, 1.5, True, None, [], [1], ["a"]]
    for _ in range(15):
        schema = _random_union(rng)
        try:
            m = masker_for(json.dumps(schema))
        except gg.GrammarError:
            continue
        valid = jsonschema.validators.validator_for(schema)(schema).is_valid
        union = schema["allOf"][1] if "allOf" in schema else schema
        names = [set(b.get("properties", {})) | ({"p", "q"} if "allOf" in schema else set()) for b in next(iter(union.values()))]
        declared = set.intersection(*names)
        exact = len(set.union(*names)) <= 5 and takes_any_order(schema)
        for inst in pool + [{n: rng.choice(pool) for n in rng.sample(["a", "b", "c", "k", "p", "q", "z"], rng.randint(0, 4))}
                            for _ in range(25)]:
            got = accepts(m, json.dumps(inst))
            assert not got or valid(inst), (schema, inst)
            if exact and (not isinstance(inst, dict) or set(inst) <= declared):
                assert got == valid(inst), (schema, inst)


def test_items_false_takes_only_the_empty_array() -> None:
    check({"type": "array", "items": False}, [[], [1], [[]]])
    check({"items": False}, [[], [1], 3])
    check({"type": "array", "prefixItems": [{"type": "integer"}], "items": False}, [[], [1], [1, 2], ["a"]])


def test_a_schema_no_instance_satisfies_referred_to_from_several_members() -> None:
    """Members whose value can never be valid are left out wherever the schema is referred to
    (the first reference used to leave its rule's name behind, undefined, for the later ones)."""
    never = {"not": {"type": ["array", "boolean", "integer", "number", "null", "object", "string"]}}
    schema = {"type": "object", "definitions": {"no": never},
              "properties": {"a": {"$ref": "#/definitions/no"},
                             "b": {"type": "array", "items": {"type": "object", "properties": {"c": {"$ref": "#/definitions/no"}}}}},
              "patternProperties": {"_x$": {"$ref": "#/definitions/no"}}}
    check(schema, [{}, {"a": 1}, {"b": []}, {"b": [{}]}, {"b": [{"c": 1}]}, {"b": [{"d": "e"}]}, {"d_x": 1}, {"d": None}])


def test_integral_float_counts_are_integers() -> None:
    """``3.0`` is an integer from draft 6 on: the bound it sets is 3."""
    check({"type": "string", "minLength": 1.0, "maxLength": 3.0}, ["", "a", "abc", "abcd"])
    check({"allOf": [{"type": "array", "maxItems": 2.0}, {"minItems": 1}]}, [[], [1], [1, 2], [1, 2, 3]])
    # draft 3's boolean `required` on a member's schema that is not an object is not read, as before
    check({"type": "object", "properties": {"a": {"type": "string", "required": True}}}, [{}, {"a": "x"}, {"a": 1}])


def test_real_tokenizer_walk(vocabularies, hf_tokenizers) -> None:
    from greatgramma.tokenize import encode_exact

    vocab, tok = vocabularies("llama3"), hf_tokenizers("llama3")
    schema = {**OBJ, "properties": {**OBJ["properties"], "when": {"type": "string", "format": "date"},
                                    "n": {"type": "integer", "minimum": 0, "maximum": 100}}}
    m = gg.Masker(gg.compile(gg.Grammar.from_json_schema(schema), vocab))
    eos = vocab.eos_token_ids[0]
    instances = [{"name": "Zoë", "age": 30, "tags": ["a", "b c"], "when": "2024-02-29", "n": 100},
                 {"name": "x", "when": "2023-02-29"}, {"name": "x", "n": 101}, {"name": "x", "zz": {"q": [1.5]}}]
    for inst in instances:
        text = json.dumps(inst, indent=2, ensure_ascii=False)
        state, ok = m.initial_state(), True
        for t in encode_exact(tok, text, vocab.token_bytes):
            if not bit(m.mask(state), t):
                ok = False
                break
            state = m.advance(state, t)
        ok = ok and bit(m.mask(state), eos)
        assert ok == oracle(schema, inst), text


def test_cli_schema2lark(tmp_path, capsys) -> None:
    from greatgramma.cli import main

    path = tmp_path / "s.json"
    path.write_text(json.dumps(OBJ), encoding="utf-8")
    assert main(["schema2lark", str(path), "--whitespace", "compact"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("start:") and "%ignore" not in text
    path.write_text('{"not": {"minimum": 1}}', encoding="utf-8")
    assert main(["schema2lark", str(path)]) == 2
    assert "#/not" in capsys.readouterr().err


def test_string_languages_relate_as_their_values() -> None:
    """Terminals compares string constraints on their decoded values (raw regexes, much smaller):
    one spelling per character makes that the relation of their JSON spellings too."""
    from greatgramma.frontends import ecma_regex as rx
    from greatgramma.frontends.relations import relation

    nodes = [rx.parse_ecma(p) for p in ("^[a-z]{2}$", "^[0-9]{2}:[0-9]{2}$", '^["\\\\]+$', "^\\n\\t?$", "é", "^[^a]*$")]
    nodes += [("rep", rx.ANY_CHAR, 0, 3), ("rep", rx.ANY_CHAR, 1, None)]
    for a in nodes:
        for b in nodes:
            assert relation(rx.raw_regex(a), rx.raw_regex(b)) == relation(rx.json_string_regex(a), rx.json_string_regex(b)), (a, b)


RELATED = [r"[a-z]+", r"[a-z]*", r"[a-c]{2,5}", "abc", "a.*", ".*", r"\d+", "(ab|cd)*", r'[^"\\]{0,5}', r'[^"\\]*',
           "é+", "[\u00e0-\u00ff]{1,3}", "x?", "", "[a-z]{0,40}", "[a-z]{0,39}", "(a|b)c", "[ac]c|bc", r"\w+",
           "[A-Za-z0-9_]+", r"[\x00-\x7f]*", r"x(?![0-9])", r"x(?!y)z?"]


def test_relation_of_the_dfas_is_that_of_the_nfas() -> None:
    """``relation`` runs the terminals' DFAs side by side; determinizing the NFAs pair by pair (the
    independent way, kept for patterns ending in a lookahead) finds the same relation."""
    from greatgramma.frontends.relations import _relation_nfa, relation

    found = {(a, b): relation(a, b) for a in RELATED for b in RELATED}
    assert {(a, b): _relation_nfa(a, b, 20_000) for a in RELATED for b in RELATED} == found
    assert set(found.values()) == {"equal", "subset", "superset", "disjoint", "overlap"}


# -------------------------------------------------------------- walked as text, with a real tokenizer too


def check_texts(schema, texts, *, canonical=lambda text: True, real=None) -> None:
    """Each JSON text walked through the masks (bytes, and ``real``'s tokens when given) against
    ``jsonschema`` on the parsed value; a text outside the canonical form (``canonical`` False)
    must be refused whatever the validator says."""
    m = masker_for(json.dumps(schema))
    walkers = [lambda text: accepts(m, text)]
    if real is not None:
        walkers.append(lambda text, w=real_walker(schema, *real): w(text))
    for text in texts:
        expected = oracle(schema, json.loads(text)) and canonical(text)
        for walk in walkers:
            assert walk(text) == expected, (schema, text, expected)


def real_walker(schema, vocab, tok):
    from greatgramma.tokenize import encode_exact

    m = gg.Masker(gg.compile(gg.Grammar.from_json_schema(schema), vocab))
    eos = vocab.eos_token_ids[0]

    def walk(text: str) -> bool:
        state = m.initial_state()
        for t in encode_exact(tok, text, vocab.token_bytes):
            if not bit(m.mask(state), t):
                return False
            state = m.advance(state, t)
        return bit(m.mask(state), eos)

    return walk


@pytest.fixture(scope="module")
def llama3(vocabularies, hf_tokenizers):
    return vocabularies("llama3"), hf_tokenizers("llama3")


NUMERALS = ["0", "-0", "1", "-1", "0.5", "-0.5", "0.0", "-0.0", "0e5", "1.0", "1.5", "2", "89.9", "90", "90.0", "90.000001",
            "-90", "-90.5", "1e2", "1E+1", "1.5e1", "9e-1", "1e-1", "1e-01", "2.5e-1", "1.0e2", "-1e2", "-9.0e1", "1e0",
            "0.1", "0.10", "0.09999", "0.100001", "128.0", "128", "127.999", "12.8e1", "1.28e+002", "3e3", "5e-324", "7.5"]


def _normalized(text: str) -> bool:
    """The canonical form of bounded non-integer numbers: an exponent's mantissa has one digit
    before the point (or is zero) unless the interval holds every positive or negative number."""
    import re

    m = re.fullmatch(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?[eE][+-]?[0-9]+", text)
    return m is None or len(m.group(1)) == 1 and (m.group(1) != "0" or set(m.group(2) or "0") <= {".", "0"})


@pytest.mark.parametrize("bounds, wide", [
    ({"minimum": 0}, True), ({"exclusiveMinimum": 0}, True), ({"maximum": 0}, True), ({"minimum": -90, "maximum": 90}, False),
    ({"minimum": 0.1}, False), ({"exclusiveMinimum": 0.1, "exclusiveMaximum": 128}, False), ({"minimum": 0.0, "maximum": 1.0}, False),
    ({"maximum": 90, "exclusiveMaximum": True, "minimum": -1, "$schema": "http://json-schema.org/draft-04/schema#"}, False),
    ({"minimum": 1.5, "maximum": 1.5}, False), ({"exclusiveMinimum": -0.5, "maximum": 0.25}, False),
])
def test_number_bounds(bounds, wide) -> None:
    """``wide``: the interval holds every positive or every negative number, so exponent forms
    whose mantissa is not normalized (``10e1``) are decided by their sign and taken."""
    schema = {"type": "number", **bounds}
    check_texts(schema, NUMERALS + ["10e1", "0.5e1", "-10e1", "0.05e2"], canonical=lambda t: wide or _normalized(t))


def test_number_bounds_beside_integers_and_literals() -> None:
    """Pieces of numbers split at several bounds in one schema, integers and enum literals beside them."""
    schema = {"type": "object", "properties": {
        "lat": {"type": "number", "minimum": -90, "maximum": 90}, "p": {"type": "number", "exclusiveMinimum": 0},
        "n": {"type": "integer", "minimum": 1, "maximum": 100}, "e": {"enum": [1.5, 100, 2.5e-07]}, "any": {"type": "number"}}}
    texts = [json.dumps(d) for d in ({"lat": 45.5}, {"lat": 91.0}, {"lat": -90}, {"p": 0}, {"p": 1e-07}, {"p": 1.5},
                                      {"n": 1}, {"n": 1.5}, {"e": 1.5}, {"e": 2.5e-07}, {"e": 100}, {"e": 2}, {"any": -1e300},
                                      {"lat": 1.5, "p": 2.5e-07, "n": 100, "e": 1.5, "any": 10})]
    check_texts(schema, texts + ['{"any": 10e5}', '{"p": 10e5}', '{"lat": 0.5e1}', '{"lat": 90.0001}'],
                canonical=lambda t: "lat" not in t or "0.5e1" not in t)


def test_number_bounds_real_tokenizer(llama3) -> None:
    schema = {"type": "object", "properties": {"price": {"type": "number", "minimum": 0.1, "maximum": 1000}},
              "required": ["price"]}
    texts = ['{"price": %s}' % v for v in ("0.1", "0.09", "999.99", "1000", "1000.5", "1e3", "1.5e-1", "5e-2", "-1", "12")]
    check_texts(schema, texts, real=llama3)
