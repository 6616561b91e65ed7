"""JSON Schema -> a Lark grammar (LALR(1), basic lexer) whose sentences are the schema's valid
instances in the canonical form.

The canonical form (what every engine generates, and what MaskBench serializes):

* object members in the order of ``properties`` (each optional one may be left out; an object
  of at most ``ANY_ORDER`` named members takes them in any order, and one of at most
  ``FEW_ORDERS`` also takes the required ones first, in the order of ``required``, then the
  others (with ``anyOf``/``oneOf`` branches that differ in ``required``, also each branch's
  required ones first), and where ``allOf``, ``$ref`` beside keywords or a ``oneOf``/``anyOf`` branch merged
  two lists of properties, the merged part's members first; none of these with ``any_order=0``,
  which ``Grammar.from_json_schema`` asks for where those orders are not LALR(1) even with
  ``object_unions``), then the
  members the schema does not name (when additional properties are allowed), in any order (in
  an object of at most ``ANY_ORDER`` named members, names that only ``dependencies`` or ``not``
  name, which are tracked as members, go among them);
* strings that the schema fixes (property names, ``enum``/``const``) in any JSON spelling;
  numbers that it fixes (``enum``/``const``) as ``json.dumps`` writes them (an integral float
  also as an integer: ``2.0`` and ``2``); integers without a
  fraction or exponent (``1``, not ``1.0``); non-integer numbers between bounds other than 0 with
  an exponent only as ``json.dumps`` and serde_json write one (one non-zero digit before the
  point: ``1.5e3``, not ``15e2``; see :mod:`.numbers`), compared with the bounds exactly;
* whitespace as the ``whitespace`` option says: ``"json"`` (RFC 8259: any run anywhere between
  tokens), ``"compact"`` (none) or an int ``k`` (runs of at most ``k`` between two tokens, none
  before or after the document).

``dependencies`` (up to draft 7) and ``dependentRequired``/``dependentSchemas`` (from 2019-09) are
each read in every draft: a schema that uses one was written for a draft that has it.

What cannot be made exact is refused with :class:`SchemaError`, naming the keyword and its JSON
pointer; keywords this module does not know are annotations and are ignored, as validators do.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from . import ecma_regex as rx
from .formats import format_node
from .terminals import SchemaError, Terminals, empty_language

ANNOTATIONS = {"title", "description", "examples", "default", "$comment", "$schema", "$id", "id", "deprecated",
               "readOnly", "writeOnly", "contentMediaType", "contentEncoding", "$anchor", "definitions", "$defs"}
REFUSED = {"not", "if", "then", "else", "propertyNames", "contains", "minContains", "maxContains", "unevaluatedProperties",
           "unevaluatedItems", "$dynamicRef", "$recursiveRef"}
# Keywords that constrain instances and that this module reads (the others in REFUSED are refused).
ASSERTIONS = {"type", "enum", "const", "properties", "required", "additionalProperties", "items", "prefixItems",
              "additionalItems", "minItems", "maxItems", "uniqueItems", "pattern", "minLength", "maxLength", "format",
              "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minProperties",
              "maxProperties", "anyOf", "oneOf", "allOf", "$ref", "patternProperties", "dependencies", "dependentRequired",
              "dependentSchemas"}
DEPENDENCIES = ("dependencies", "dependentRequired", "dependentSchemas")
TYPES = ("null", "boolean", "object", "array", "string", "number", "integer")
OLD_DRAFTS = ("draft-03", "draft-04", "draft-06", "draft-07")
MAX_REPEAT = 128
SKIP_BLOCK = 2  # optional object members one rule may skip at once (see object_rules)
ANY_ORDER = 5  # objects of at most this many named members take them in any order (see any_order_rules)
EMPTY_PASSES = 4  # walks of a schema, each knowing the sets of lexemes the ones before found empty
FEW_ORDERS = 24  # objects of up to this many named members also take a few other orders (order_rules)
MAX_ORDERS = 4  # the orders one object takes at most
MAX_ATOM_PARTS = 3  # overlapping string languages of one member that string_atoms splits (2**n - 1 parts)
MAX_BRANCHES = 16  # ways an object's dependencies and `not`s may be met (members required and ruled out) its rules track
REQUIRED_ANY_OF = "$greatgramma:requiredAnyOf"  # internal: an anyOf of required sets (see union)
EXACTLY_ONE = "$greatgramma:exactlyOne"  # internal: beside REQUIRED_ANY_OF, from a oneOf: exactly one set is all present
ORDERS = "$greatgramma:orders"  # internal: other member orders a merge gives (lists of names; see _merge)
NOT_STRINGS = "$greatgramma:notStrings"  # internal: strings `not` excludes (see negation)
NOT_ALL = "$greatgramma:notAll"  # internal: tuples of member names, each never all present (`not` of `required`)
PATTERNS = "$greatgramma:patterns"  # internal: more patterns a string must hold (allOf of several `pattern`)
UNION_AT = "$greatgramma:unionAt"  # internal: beside an anyOf/oneOf that an allOf merged in, the members before it
LANGUAGE = "$greatgramma:language"  # internal: the strings of a regex node (a part of overlapping languages; see string_atoms)
MINUS = "$greatgramma:minus"  # internal: beside LANGUAGE, regex nodes whose strings it leaves out
INTERNAL = {REQUIRED_ANY_OF, EXACTLY_ONE, ORDERS, NOT_STRINGS, NOT_ALL, PATTERNS, UNION_AT, LANGUAGE, MINUS}
_ANY: dict = {}  # every schema that allows anything shares one rule


def json_schema_to_lark(
    schema: dict | bool | str, *, whitespace: str | int = "json", additional_properties: bool = True,
    max_repeat: int = MAX_REPEAT, any_order: int = ANY_ORDER, object_unions: bool = False,
) -> str:
    """The Lark grammar text of ``schema`` (a dict, a bool or JSON text); see the module docstring.
    Objects with at most ``any_order`` named members take them in any order (0: none does, and no
    object takes its required members first either). With ``object_unions``, every ``oneOf`` or
    ``anyOf`` over objects that can be is one object rule (``object_union``; otherwise only a
    ``oneOf`` whose objects may overlap is): LALR(1) where separate object rules are not."""
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as exc:
            raise SchemaError("#", "", f"not JSON text ({exc})") from None
        except RecursionError:
            raise SchemaError("#", "", "the JSON text nests too deeply to read") from None
    if not isinstance(schema, (dict, bool)):
        raise SchemaError("#", "", f"a schema is an object or a boolean, not {type(schema).__name__}")
    if whitespace not in ("json", "compact") and not (isinstance(whitespace, int) and whitespace >= 0):
        raise ValueError(f'whitespace must be "json", "compact" or a non-negative int, not {whitespace!r}')
    try:
        empty: frozenset = frozenset()
        for _ in range(EMPTY_PASSES):
            walker = _Walker(schema, whitespace, additional_properties, max_repeat, any_order, object_unions, empty)
            text = walker.grammar()
            if not walker.terms.found_empty:
                return text
            empty |= walker.terms.found_empty  # rules with no member: walked again, they are left out as empty
        raise SchemaError("#", "", f"sets of lexemes kept turning out empty after {EMPTY_PASSES} walks of the schema; not supported")
    except RecursionError:
        raise SchemaError("#", "", "the schema nests too deeply, or refers to itself without end (a `$ref` to an "
                                   "enclosing schema beside other keywords, or through `allOf`)") from None


class _Walker:
    def __init__(self, root, whitespace, additional_properties: bool, max_repeat: int, any_order: int,
                 object_unions: bool, known_empty: frozenset = frozenset()):
        self.root = root
        self.any_order, self.object_unions = any_order, object_unions
        self.terms = Terminals(whitespace=whitespace, known_empty=known_empty)
        self.allow_additional = additional_properties
        self.max_repeat = max_repeat
        self.rules: list[str] = []
        self.memo: dict[int, str] = {}
        self.by_text: dict[str, str] = {}  # a schema's JSON text (keys sorted) -> its rule
        # declared names with no valid value that other keys would take: each one's literal terminal
        # tells it apart, and must be in the lexer, which holds only the terminals some rule reaches
        self.lexed_apart: list[tuple[str, str]] = []
        self.rule_by_body: dict[str, str] = {}
        self.validator = None  # jsonschema's, for listed_constants
        self.anchors: dict[str, list[str]] | None = None  # plain-name fragments -> JSON pointers (see resolve)
        self.merge_depth = 0  # alternatives -> the rule of self.rule that has them
        self.keep: list = []  # schemas whose id() keys self.memo
        self.depth = 0
        draft = root.get("$schema", "") if isinstance(root, dict) else ""
        self.ref_siblings_ignored = any(d in str(draft) for d in OLD_DRAFTS)

    def grammar(self) -> str:
        start = self.value(self.root, "#")
        rules, terms = self.terms.finish()
        rules = [f"start: {start}", *filter(None, self.rules), *rules]
        if self.lexed_apart:
            used = _reachable(rules)
            for ptr, terminal in self.lexed_apart:  # (a language: the terminals that lex its strings)
                if ({terminal} | self.terms.inside.get(terminal, set())) - self.terms.shadowed - used:
                    raise SchemaError(ptr, "", "these strings are excluded (a property no value is valid for, `not`, or "
                                      "another alternative's strings), and only a terminal of their own would tell them "
                                      "apart, which no rule here reaches; not supported")
        return "\n".join([*rules, *terms]) + "\n"

    def rule(self, alts: list[str]) -> str:
        body = " | ".join(alts)
        name = self.rule_by_body.get(body)  # (equal rules are one: fewer for Lark's analysis)
        if name is None:
            name = self.rule_by_body[body] = f"r{len(self.rules)}"
            self.rules.append(f"{name}: " + body)
        return name

    # -------------------------------------------------------------- schemas

    def value(self, schema, ptr: str) -> str:
        """The rule for the instances of ``schema`` (memoized per schema object: recursion works)."""
        if schema is True or schema == {}:
            schema = _ANY
        key = id(schema)
        if key in self.memo:
            return self.memo[key]
        # Equal schemas have one rule: local $refs resolve from the root, so the language of a
        # schema depends on its content only (fewer rules for Lark's analysis to go through).
        try:
            text = json.dumps(schema, sort_keys=True)
        except (TypeError, ValueError):  # a dict passed in with keys JSON cannot sort or hold: no sharing
            text = f"id {key}"
        if text in self.by_text:
            self.memo[key] = self.by_text[text]
            self.keep.append(schema)
            return self.memo[key]
        name = f"r{len(self.rules)}"
        self.rules.append(None)  # reserved: a recursive reference finds the name
        self.memo[key] = self.by_text[text] = name
        self.keep.append(schema)
        self.depth += 1
        if self.depth > 200:
            raise SchemaError(ptr, "", "the schema nests too deeply (a cycle of $ref through allOf?)")
        try:
            alts = self.alternatives(schema, ptr)
            if not alts:
                raise empty_language(ptr)
        except SchemaError as exc:
            if exc.empty:  # (a caller may leave the value out: the name must not stay taken)
                self.rules[int(name[1:])] = ""
                del self.memo[key], self.by_text[text]
            raise
        finally:
            self.depth -= 1
        self.rules[int(name[1:])] = f"{name}: " + " | ".join(alts)
        return name

    def alternatives(self, schema, ptr: str) -> list[str]:
        if schema is False:
            return []
        if not isinstance(schema, dict):
            raise SchemaError(ptr, "", f"a schema is an object or a boolean, not {type(schema).__name__}")
        schema = _checked_keywords(schema, ptr)
        values = self.listed_constants(schema, ptr)
        if values is not None:  # a finite language: the listed values the whole schema takes
            return self.constants({"enum": values}, ptr) if values else []
        if "not" in schema:
            positive = self.negation(schema["not"], f"{ptr}/not")
            if positive is not None:
                rest = {k: v for k, v in schema.items() if k != "not"}
                merged = self.merge(rest, positive, ptr)
                return self.alternatives({} if merged is True else merged, ptr)
        for kw in schema:
            if kw in REFUSED:
                raise SchemaError(ptr, kw, f"`{kw}` cannot be compiled into an exact grammar; it is not supported")
        if "$ref" in schema:
            target, tptr = self.resolve(schema["$ref"], ptr)
            rest = {k: v for k, v in schema.items() if k != "$ref" and k not in ANNOTATIONS}
            if not rest or self.ref_siblings_ignored:
                return [self.value(target, tptr)]
            return self.alternatives({"allOf": [target, rest]}, ptr)
        if "allOf" in schema:
            return self.alternatives(self.merged_all_of(schema, ptr), ptr)
        for kw in ("anyOf", "oneOf"):
            if kw in schema:
                return self.union(schema, kw, ptr)
        if "const" in schema or "enum" in schema:
            return self.constants(schema, ptr)
        return self.by_type(schema, ptr)

    def negation(self, schema, ptr: str):
        """``not`` of a schema as a schema without ``not``, where that is exact: true/false,
        ``type`` alone (the other types; ``not integer`` is refused: it keeps the non-integral
        numbers), ``enum``/``const`` of strings alone (the strings but those; other types
        unconstrained), and ``required`` alone or an ``anyOf`` of them (objects without all of
        those members; no other type, for which ``required`` holds). None for the rest (refused)."""
        schema = self.deref(schema, ptr)
        if schema is True or schema == {}:
            return False
        if schema is False:
            return True
        if not isinstance(schema, dict):
            return None
        schema = _checked_keywords(schema, ptr)
        keys = set(schema) - ANNOTATIONS
        if keys == {"type"}:
            t = schema["type"]
            t = {t} if isinstance(t, str) else set(t)
            if not t <= set(TYPES) or ("integer" in t and "number" not in t):
                return None
            if "number" in t:
                t.add("integer")
            left = [x for x in TYPES if x not in t]
            return {"type": left} if left else False
        if keys in ({"enum"}, {"const"}):
            values = [schema["const"]] if "const" in schema else schema["enum"]
            if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
                return {NOT_STRINGS: sorted(set(values))}
        alts = [schema] if keys == {"required"} else schema["anyOf"] if keys == {"anyOf"} and isinstance(schema["anyOf"], list) else []
        alts = [self.deref(a, ptr) for a in alts]
        if alts and all(isinstance(a, dict) and set(a) - ANNOTATIONS == {"required"} and isinstance(a["required"], list)
                        and all(isinstance(n, str) for n in a["required"]) for a in alts):
            sets = [tuple(dict.fromkeys(a["required"])) for a in alts]
            return False if not all(sets) else {"type": "object", NOT_ALL: sets}
        return None

    def listed_constants(self, schema: dict, ptr: str):
        """Where ``enum``/``const`` (of the schema or of an ``allOf`` member) list every value the
        schema could take and other keywords constrain them (``not``, ``if``, ``oneOf``, ...): the
        listed values that Python's ``jsonschema`` (the standard's reference, formats asserted)
        finds valid against the whole schema. None where that does not apply, or ``jsonschema``
        is not installed (the keywords are then read, or refused, one by one)."""
        lists = [schema] + [self.deref(m, ptr) for m in schema.get("allOf", []) if isinstance(m, (dict, bool))]
        found = [_constants(m) for m in lists if isinstance(m, dict) and _constants(m) is not None]
        for kw in ("anyOf", "oneOf"):  # alternatives that all list their values: the language is among them
            alts = [self.deref(m, ptr) for m in schema.get(kw, [])] if isinstance(schema.get(kw), list) else []
            if alts and all(isinstance(m, dict) and isinstance(_constants(m), list) for m in alts):
                found.append([v for m in alts for v in _constants(m)])
        if not found or not isinstance(found[0], list):
            return None
        if set(schema) - ANNOTATIONS <= {"enum", "const", "type"}:
            return None  # read directly (constants)
        try:
            import jsonschema
        except ImportError:
            return None
        if self.loops_in_place(schema, ptr):
            return None  # (jsonschema would recurse without end; the keywords are read, and refused, one by one)
        why = None
        try:
            if self.validator is None:
                cls = jsonschema.validators.validator_for(self.root, default=jsonschema.Draft202012Validator)
                self.validator = cls(self.root, format_checker=cls.FORMAT_CHECKER)
            check = self.validator.evolve(schema=schema)
            kept = [v for v in found[0] if check.is_valid(v)]
        except Exception as exc:  # noqa: BLE001 (a schema jsonschema cannot read)
            why = str(exc)
        except BaseException as exc:  # a RecursionError in jsonschema's resolver (Rust) arrives as pyo3's PanicException
            if type(exc).__name__ != "PanicException":
                raise
            why = "it refers to itself without end"
        if why is not None:
            raise SchemaError(ptr, "enum", f"the listed values cannot be checked against the schema ({why})")
        unique = []
        for v in kept:
            if not any(_json_eq(v, u) for u in unique):
                unique.append(v)
        return unique

    def by_type(self, schema: dict, ptr: str) -> list[str]:
        types = schema.get("type", list(TYPES))
        types = [types] if isinstance(types, str) else list(types)
        for t in types:
            if t not in TYPES:
                raise SchemaError(ptr, "type", f"unknown type {t!r}")
        if "number" in types and "integer" in types:
            types.remove("integer")
        out = []
        for t in TYPES:
            if t in types:
                alt = getattr(self, "t_" + t)(schema, ptr)
                if alt:  # (None or "": no instance of that type is valid)
                    out.append(alt)
        return out

    def t_null(self, schema, ptr):
        return '"null"'

    def t_boolean(self, schema, ptr):
        return '"true" | "false"'

    def t_integer(self, schema, ptr):
        lo, hi = self.bounds(schema, ptr, integer=True)
        mult = schema.get("multipleOf")
        if mult is not None and mult != 1:
            raise SchemaError(ptr, "multipleOf", "multipleOf other than 1 is not supported")
        return self.terms.integers(lo, hi, ptr=ptr)

    def t_number(self, schema, ptr):
        mult = schema.get("multipleOf")
        if mult is not None and not isinstance(mult, bool):
            raise SchemaError(ptr, "multipleOf", "`multipleOf` on non-integer numbers is not supported (it is for integers)")
        lo, hi = None, None
        for kw, lower, exclusive in (("minimum", True, False), ("maximum", False, False),
                                     ("exclusiveMinimum", True, True), ("exclusiveMaximum", False, True)):
            v = schema.get(kw)
            if v is None or isinstance(v, bool):
                continue  # draft-4 boolean exclusive* are read with minimum/maximum (finite: _checked_keywords)
            ex = exclusive or schema.get("exclusiveMinimum" if lower else "exclusiveMaximum") is True
            b = (Decimal(v) if isinstance(v, int) else Decimal(repr(v)), not ex)  # the bound as written (shortest repr)
            if lower:
                lo = b if lo is None or b[0] > lo[0] or (b[0] == lo[0] and not b[1]) else lo
            else:
                hi = b if hi is None or b[0] < hi[0] or (b[0] == hi[0] and not b[1]) else hi
        if lo is not None and hi is not None and (lo[0] > hi[0] or (lo[0] == hi[0] and not (lo[1] and hi[1]))):
            raise SchemaError(ptr, "minimum", "no number lies within the bounds")
        return self.terms.numbers(lo, hi, ptr=ptr)

    def bounds(self, schema: dict, ptr: str, integer: bool) -> tuple:
        lo, hi = None, None
        for kw, lower, exclusive in (("minimum", True, False), ("maximum", False, False),
                                     ("exclusiveMinimum", True, True), ("exclusiveMaximum", False, True)):
            v = schema.get(kw)
            if v is None or isinstance(v, bool):
                continue  # draft-4 boolean exclusive* are read with minimum/maximum below (finite: _checked_keywords)
            ex = exclusive or schema.get("exclusiveMinimum" if lower else "exclusiveMaximum") is True
            if lower:
                b = math.floor(v) + 1 if ex else math.ceil(v)
                lo = b if lo is None else max(lo, b)
            else:
                b = math.ceil(v) - 1 if ex else math.floor(v)
                hi = b if hi is None else min(hi, b)
        if lo is not None and hi is not None and lo > hi:
            raise SchemaError(ptr, "minimum", "no integer lies within the bounds")
        return lo, hi

    def t_string(self, schema, ptr):
        node = self.string_node(schema, ptr)
        if node is None:
            return self.string_rule(schema, None, None, ptr)
        if rx.is_empty_language(node):
            return None  # no string is valid: no alternative
        return self.string_rule(schema, self.terms.string_language(node, ptr), node, ptr)

    def string_node(self, schema, ptr):
        """The language of the strings the schema's ``format``, ``pattern``s and length bounds
        take, as a regex node (None: every string)."""
        if LANGUAGE in schema:
            return schema[LANGUAGE]
        nodes = []
        if "format" in schema:
            node = format_node(schema["format"])
            if node is False:
                raise SchemaError(ptr, "format", f"format {schema['format']!r} is not supported (no exact grammar for it)")
            if node is not None:
                nodes.append(node)
        for pattern in ([schema["pattern"]] if "pattern" in schema else []) + schema.get(PATTERNS, []):
            try:
                nodes.append(rx.parse_ecma(pattern))
            except rx.RegexError as exc:
                raise SchemaError(ptr, "pattern", str(exc)) from None
        lo, hi = schema.get("minLength", 0), schema.get("maxLength")
        for kw, v in (("minLength", lo), ("maxLength", hi)):
            if v is not None and v > self.max_repeat:
                raise SchemaError(ptr, kw, f"{v} is past the bound on unrolled lengths, max_repeat={self.max_repeat} "
                                           "(each position is a lexer state: Grammar.from_json_schema(..., max_repeat=N) "
                                           "raises it, and compile time and memory grow with it)")
        if lo or hi is not None:
            nodes = _with_length(nodes, lo, hi, ptr, self.terms)
        if not nodes:
            return None
        node = nodes[0]
        if len(nodes) > 1:  # format and pattern (and a length bound): the strings all of them take
            from .intersect import intersect

            node = intersect(nodes)
            if node is None:
                raise SchemaError(ptr, "pattern", "the language of the pattern together with the format and lengths is too large to build")
        return node

    def string_rule(self, schema, language, node, ptr: str) -> str:
        """The strings of the language but those ``not`` excludes (see negation): each excluded
        one is a literal terminal (lexed apart, which needs some rule to reach it)."""
        import re

        excluded = schema.get(NOT_STRINGS, [])
        if node is not None:
            raw = re.compile(rx.raw_regex(node))
            excluded = [v for v in excluded if raw.fullmatch(v)]
        for v in excluded:
            self.lexed_apart.append((f"{ptr}/not", self.terms.literal(v)))
        minus = frozenset(self.terms.string_language(n, ptr) for n in schema.get(MINUS, []))
        for name in minus:  # (their lexemes are told apart only where some rule reaches their terminals)
            self.lexed_apart.append((ptr, name))
        return self.terms.strings(language, frozenset(excluded), minus, ptr=ptr)

    def t_array(self, schema, ptr):
        if schema.get("uniqueItems") is True:
            raise SchemaError(ptr, "uniqueItems", "uniqueItems cannot be compiled into an exact grammar")
        prefix, rest = schema.get("prefixItems", []), schema.get("items", True)
        if isinstance(rest, list):  # draft-4..2019 tuple form
            prefix, rest = rest, schema.get("additionalItems", True)
        lo, hi = schema.get("minItems", 0), schema.get("maxItems")
        last = len(prefix) if rest is False else None
        if hi is not None:
            last = hi if last is None else min(hi, last)
        for kw, v in (("minItems", lo), ("maxItems", last)):
            if v is not None and v > self.max_repeat:
                raise SchemaError(ptr, kw, f"{v} is past the bound on unrolled repeats, max_repeat={self.max_repeat} "
                                           "(Grammar.from_json_schema(..., max_repeat=N) raises it; the grammar grows with it)")
        if last is not None and lo > last:
            raise SchemaError(ptr, "minItems", "no array length satisfies minItems, maxItems and the item schemas")
        t = self.terms
        comma = t.punct("COMMA")
        items = [self.value(s, f"{ptr}/prefixItems/{i}") for i, s in enumerate(prefix)]
        rest_rule = None if rest is False else self.value(rest, f"{ptr}/items")
        elem = lambda i: items[i] if i < len(items) else rest_rule  # noqa: E731
        tail = ""
        if last is None:
            tail = f"({comma} {rest_rule})*"
        for i in reversed(range(1, len(items) if last is None else last)):
            if i >= lo:
                tail = f"[{comma} {elem(i)} {tail}]"
        alts = []
        if last is None or last >= 1:  # (last 0: `items: false` and no prefix, only [] is valid)
            head = f" {comma} ".join(elem(i) for i in range(max(lo, 1)))
            alts.append(f"{t.punct('LSQB')} {head} {tail if max(lo, 1) >= 1 else ''} {t.punct('RSQB')}")
        if lo == 0:
            alts.append(t.empty("array"))
        return " | ".join(alts)

    def t_object(self, schema, ptr):
        t = self.terms
        props = dict(schema.get("properties", {}))
        required = list(dict.fromkeys(schema.get("required", [])))
        # anyOf over objects that differ only in `required` (see union): one of these sets of names
        branch_required = [list(dict.fromkeys([*required, *r])) for r in schema.get(REQUIRED_ANY_OF, [[]])]
        extra = schema.get("additionalProperties", True if self.allow_additional else False)
        patterns = self.pattern_regions(schema.get("patternProperties", {}), ptr)

        def can_have(n: str) -> bool:
            return props[n] is not False if n in props else extra is not False or any(p[0].fullmatch(n) for p in patterns)

        # other conditions on which members are present: each a list of ways to meet it, (names
        # required, names ruled out): a dependency's name left out, or its names present and absent
        conditions = [[((), (name,)), (req, forbid)] for name, req, forbid in self.dependencies(schema, ptr)]
        conditions += [[((), (n,)) for n in names] for names in schema.get(NOT_ALL, [])]
        if len(branch_required) > 1:  # a branch that requires a name no member can have never holds
            kept = [r for r in branch_required if all(map(can_have, r))]
            if not kept:
                raise empty_language(ptr)
            branch_required = kept
        required = [n for n in branch_required[0] if all(n in r for r in branch_required)]  # in every branch
        some_required = list(dict.fromkeys(n for r in branch_required for n in r))
        named = list(dict.fromkeys([*some_required, *(n for ways in conditions for way in ways for n in (*way[0], *way[1]) if can_have(n))]))
        for name in list(props):  # a declared name that a pattern matches takes both schemas
            props[name] = self.with_patterns(props[name], name, patterns, ptr)
        promoted = [n for n in named if n not in props and n not in some_required]  # (undeclared: additional members)
        for name in named:  # (the conditions' names too: named members, so that their presence is tracked)
            if name not in props:
                if not can_have(name):
                    raise SchemaError(ptr, "required", f"{name!r} is required but additional properties are not allowed")
                props[name] = self.with_patterns(extra, name, patterns, ptr, alone=True)
        members = []  # (name, member text, required)
        never = []  # declared names no value is valid for
        index: dict[str, int] = {}  # name -> its place in members
        for name, sub in props.items():
            if sub is False:
                if name in some_required:
                    raise SchemaError(ptr, "required", f"{name!r} is required but its schema is false")
                never.append(name)
                continue
            try:
                v = self.value(sub, f"{ptr}/properties/{_escape(name)}")
            except SchemaError as exc:
                if exc.empty and name not in some_required:
                    never.append(name)
                    continue  # no valid value: the member can never appear
                raise
            index[name] = len(members)
            members.append((f"{t.literal(name)} {t.punct('COLON')} {v}", name in required))
        declared = frozenset(props)
        extras = []  # members the schema does not name: one per pattern region, then the rest
        taken = set()  # the patterns (None: additionalProperties) whose keys may appear
        for regex, term, sub, sub_ptr, _depth, nested in patterns:
            v = self.member_value(sub, sub_ptr)
            keys = _unless_empty(lambda: t.strings(term, declared, nested, ptr=sub_ptr))
            if v is not None and keys is not None:
                extras.append(f"{keys} {t.punct('COLON')} {v}")
                taken.add(regex)
        if extra is not False and all(p[1] is not None for p in patterns):  # (a pattern that takes every key leaves none)
            v = self.member_value(extra, ptr + "/additionalProperties")
            in_patterns = frozenset(p[1] for p in patterns)
            keys = _unless_empty(lambda: t.strings(None, declared, in_patterns, ptr=ptr + "/additionalProperties"))
            if v is not None and keys is not None:
                extras.append(f"{keys} {t.punct('COLON')} {v}")
                taken.add(None)
        for name in never:
            # Its name is excluded from the other keys by its literal terminal, which exists only
            # where a rule uses it; one that no rule uses is dropped, and the name would pass for another key.
            matched = [m for m in patterns if m[0].fullmatch(name)]
            if (max(matched, key=lambda m: m[4])[0] if matched else None) in taken:
                self.lexed_apart.append((f"{ptr}/properties/{_escape(name)}", t.literal(name)))
        addl = (extras[0] if len(extras) == 1 else self.rule(extras)) if extras else None
        branches = [frozenset(index[n] for n in r) for r in branch_required]
        exactly_one = schema.get(EXACTLY_ONE, False)
        keyword = next((kw for kw in DEPENDENCIES if kw in schema), "not")
        branches, forbids = _with_conditions(branches, conditions, index, exactly_one, ptr, keyword)
        n_req = min(len(b) for b in branches)
        lo, hi = schema.get("minProperties", 0), schema.get("maxProperties")
        if lo > max(n_req, 1):
            raise SchemaError(ptr, "minProperties", "only minProperties up to the number of required properties (or 1) is supported")
        if hi is not None and (addl is not None or hi < len(members)):
            raise SchemaError(ptr, "maxProperties", "only maxProperties that the properties already imply is supported")
        allow_empty = lo == 0 and (sum(not b for b in branches) == 1 if exactly_one else n_req == 0)
        # properties; required first; each side of a merge first; each branch's required first
        heads = [[], required, *schema.get(ORDERS, []), *(branch_required if len(branch_required) > 1 else [])]
        # (names only dependencies or `not` name go among the additional members; in bigger
        # objects, with the named ones: before the additional members)
        anywhere = bool(promoted and addl and len(members) <= self.any_order)
        return self.object_of(members, addl, allow_empty, branches, [[index[n] for n in h if n in index] for h in heads],
                              exactly_one, forbids, anywhere=anywhere)

    def object_of(self, members, addl, allow_empty: bool, branches, heads: list[list[int]], exactly_one: bool = False,
                  forbids=None, regions=None, anywhere: bool = False, open_to: frozenset | None = None) -> str:
        """The rules of an object: its named members in any order where there are few of them
        (``any_order_rules``), else in the orders that start with one of ``heads`` (member
        indices; ``order_rules``) where that gives more than one, else in ``properties`` order
        (``object_rules``)."""
        if anywhere or 2 <= len(members) <= self.any_order:
            return self.any_order_rules(members, addl, allow_empty, branches, exactly_one, forbids, regions, anywhere, open_to)
        if self.any_order and len(members) <= FEW_ORDERS:
            orders = _completed(heads, list(range(len(members))))[:MAX_ORDERS]
            if len(orders) > 1:
                return self.order_rules(members, addl, allow_empty, orders, branches, exactly_one, forbids, regions, open_to)
        return self.object_rules(members, addl, allow_empty, branches=branches, exactly_one=exactly_one, forbids=forbids,
                                 regions=regions, open_to=open_to)

    def dependencies(self, schema, ptr: str) -> list[tuple[str, list[str], list[str]]]:
        """``dependencies``, ``dependentRequired`` and ``dependentSchemas`` as (name, the names
        required when it is present, the names forbidden then). A dependent schema may only
        require members (``required``) or forbid them (``properties`` whose schema is false or
        ``{"not": {}}``); annotations and ``type: object`` beside them are ignored."""
        out = []
        for kw in DEPENDENCIES:
            given = schema.get(kw, {})
            if not isinstance(given, dict):
                raise SchemaError(ptr, kw, f"must be an object, not {_shown(given)}")
            for name, dep in given.items():
                at = f"{ptr}/{kw}/{_escape(name)}"
                if isinstance(dep, list) and kw != "dependentSchemas":
                    if not all(isinstance(n, str) for n in dep):
                        raise SchemaError(at, kw, "the names a member depends on must be strings")
                    out.append((name, list(dep), []))
                    continue
                if kw == "dependentRequired":
                    raise SchemaError(at, kw, f"must be a list of names, not {_shown(dep)}")
                dep = self.deref(dep, at)
                if dep is True or dep == {}:
                    continue
                if dep is False:
                    out.append((name, [], [name]))
                    continue
                if not isinstance(dep, dict):
                    raise SchemaError(at, kw, f"a dependency is a list of names or a schema, not {_shown(dep)}")
                props = dep.get("properties", {})
                forbid = [n for n, sub in props.items() if sub is False or _json_eq(sub, {"not": {}})] if isinstance(props, dict) else None
                other = {k for k in dep if k not in ANNOTATIONS and k not in ("required", "properties")}
                if dep.get("type") == "object":
                    other.discard("type")
                if other or forbid is None or len(forbid) < len(props) or not isinstance(dep.get("required", []), list):
                    raise SchemaError(at, kw, "only dependent schemas that require members (`required`) or forbid them "
                                              "(`properties` with a false schema) are supported")
                out.append((name, list(dep.get("required", [])), forbid))
        return out

    def object_union(self, branches: list[tuple], ptr: str, exactly_one: bool) -> tuple[list[str], list[tuple]] | None:
        """A oneOf (``exactly_one``) or anyOf whose alternatives (``branches``: (schema, pointer)
        pairs) that may be objects are objects alone (``type``, ``properties``, ``required``,
        ``additionalProperties``, after ``allOf``; the same ``additionalProperties`` in each, or
        false: the first additional member rules that branch out) and,
        for a oneOf, whose others cannot overlap: the objects as one object rule that tracks which
        branches its members leave possible (each member's values split by the branches that take
        them, :meth:`member_regions`), ending right where exactly one branch (anyOf: some branch)
        is left with its required members present; and the other branches, as they are. None
        where the branches are not of that form."""
        plain = {"type", "properties", "required", "additionalProperties", ORDERS}  # (ORDERS: ignored)
        read = (ASSERTIONS | REFUSED | INTERNAL) - plain  # (other keywords are annotations)
        objs, others = [], []
        for b, p in branches:
            while isinstance(b, dict) and "allOf" in b:  # (as alternatives reads it)
                try:
                    b = self.merged_all_of(b, p)
                except SchemaError:
                    return None
            if "object" in _types_of(b):
                if not isinstance(b, dict) or set(b) & read or b.get("type", "object") not in ("object", ["object"]) \
                        or not isinstance(b.get("properties", {}), dict) or not isinstance(b.get("required", []), list):
                    return None
                objs.append(b)
            else:
                others.append((b, p))
        if len(objs) < 2 or (others and any("type" not in b for b in objs)):
            return None
        kinds = [_types_of(b) for b, _ in others]
        if exactly_one and any(kinds[i] & kinds[j] and not _disjoint_constants(others[i][0], others[j][0])
                               for i in range(len(others)) for j in range(i + 1, len(others))):
            return None
        extra = [b.get("additionalProperties", True if self.allow_additional else False) for b in objs]
        taken = [e for e in extra if e is not False]  # (additional members: the same schema, or none, in each)
        if not all(_json_eq(taken[0], e) for e in taken[1:]):
            return None
        open_to = None if len(taken) == len(extra) else frozenset(i for i, e in enumerate(extra) if e is not False)
        t = self.terms
        names = list(dict.fromkeys(n for b in objs for n in b.get("properties", {})))
        index = {n: i for i, n in enumerate(names)}
        if any(n not in index for b in objs for n in b.get("required", [])):
            return None
        members, regions = [], []
        for n in names:
            at = f"{ptr}/properties/{_escape(n)}"
            split = self.member_regions([b.get("properties", {}).get(n, e) for b, e in zip(objs, extra)], at)
            if split is None:
                return None
            ways = []
            for schemas, alive in split:
                values = [v for v in (_unless_empty(lambda: self.value(x, at)) for x in schemas) if v is not None]
                if values:
                    ways.append((f"{t.literal(n)} {t.punct('COLON')} {values[0] if len(values) == 1 else self.rule(values)}", alive))
            if not ways:
                return None  # (a name no branch takes a value for: its literal would have to be lexed apart)
            members.append((ways[0][0], False))
            regions.append(ways)
        addl = None
        if taken:
            v = self.member_value(taken[0], ptr + "/additionalProperties")
            keys = _unless_empty(lambda: t.strings(None, frozenset(names), frozenset(), ptr=ptr + "/additionalProperties"))
            addl = f"{keys} {t.punct('COLON')} {v}" if v is not None and keys is not None else None
        required = [frozenset(index[n] for n in b.get("required", [])) for b in objs]
        allow_empty = _ends_right(frozenset(i for i, r in enumerate(required) if not r), exactly_one)
        # properties; each branch's own members first (a merge's orders); each branch's required first
        heads = [[], *_merged_orders([b.get(ORDERS, []) for b in objs]), *(b.get("required", []) for b in objs)]
        obj = self.object_of(members, addl, allow_empty, required, [[index[n] for n in h if n in index] for h in heads],
                             exactly_one, regions=regions, open_to=open_to)
        out = [obj] if obj else []
        if _ends_right(frozenset(i for i, b in enumerate(objs) if "type" not in b), exactly_one):  # a non-object holds for those branches alone
            out += self.alternatives({"type": [x for x in TYPES if x != "object"]}, ptr)
        return out, others

    def string_union(self, branches: list[tuple], ptr: str) -> list[str] | None:
        """A oneOf whose alternatives (``branches``) constrain strings alone (``type``,
        ``pattern``, ``format``, ``minLength``/``maxLength``): the strings exactly one alternative
        takes (its language less the others', a language of its own) and the values of each other type
        exactly one alternative takes. None where the alternatives are not of that form, or
        where the numbers exactly one takes are the non-integral ones only."""
        from .intersect import intersect

        kinds = ("null", "boolean", "object", "array", "string", "integer", "fraction")
        takes, nodes = [], []
        for b, p in branches:
            b = {} if b is True else b
            if not isinstance(b, dict) or not _strings_alone(b):
                return None
            types = b.get("type", list(TYPES))
            types = {types} if isinstance(types, str) else set(types)
            takes.append({k for k in kinds if k in types or (k in ("integer", "fraction") and "number" in types)})
            nodes.append((self.string_node(b, p) or rx.ANY_STRING) if "string" in takes[-1] else None)
        once = [k for k in kinds if sum(k in t for t in takes) == 1]
        if "fraction" in once and "integer" not in once:
            return None
        out = self.alternatives({"type": [k for k in once if k in TYPES and k != "string"] + (["number"] if "fraction" in once else [])}, ptr)
        for i, node in enumerate(nodes):  # the strings of one alternative that no other takes: a language of their own
            if node is not None:  # (not a rule of the language less the others': no rule would reach the lexemes of both)
                alone = intersect([node], minus=[n for j, n in enumerate(nodes) if j != i and n is not None])
                if alone is None:
                    raise SchemaError(ptr, "oneOf", "the strings one alternative takes and no other does form a language too large to build")
                if not rx.is_empty_language(alone):
                    out.append(self.string_rule({}, self.terms.string_language(alone, f"{ptr}/oneOf/{i}"), alone, ptr))
        return out

    def merged_all_of(self, schema: dict, ptr: str):
        """A schema with ``allOf``: the schema without it, each member merged in."""
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for i, sub in enumerate(schema["allOf"]):
            merged = self.merge(merged, self.deref(sub, f"{ptr}/allOf/{i}"), f"{ptr}/allOf/{i}")
        return merged

    def member_regions(self, schemas: list, ptr: str) -> list[tuple[list, frozenset]] | None:
        """A member's values split by the branches that take them (``schemas[i]``: branch i's
        schema for it, False where it may not appear): (schemas, branches) pairs, the
        schemas' languages pairwise disjoint across pairs, the pairs of a branch together its
        language. Values of one type that branches take with schemas neither equal nor disjoint
        cannot be split here (None)."""
        groups: list[tuple[Any, set]] = []
        for i, sub in enumerate(schemas):
            sub = self.deref(sub, ptr)
            if sub is not False:
                _add_to_group(groups, {} if sub is True else sub, {i})
        if len(groups) <= 1:
            return [([g[0]], frozenset(g[1])) for g in groups]
        by_branches: dict[frozenset, list] = {}
        for kind in ("null", "boolean", "object", "array", "string", "number"):
            parts: list[tuple[Any, set]] = []
            for sub, which in groups:
                part = _of_type(sub, kind)
                if part is _UNKNOWN:
                    return None
                if part is not None:
                    _add_to_group(parts, part, which)
            if any(not _disjoint_constants(a[0], b[0]) for k, a in enumerate(parts) for b in parts[k + 1:]):
                parts = self.string_atoms(parts, ptr) if kind == "string" else None
                if parts is None:
                    return None
            for part, which in parts:
                by_branches.setdefault(frozenset(which), []).append(part)
        return [(parts, which) for which, parts in by_branches.items()]

    def string_atoms(self, parts: list[tuple[dict, set]], ptr: str) -> list[tuple[dict, set]] | None:
        """Overlapping schemas of strings (``parts``: each with the branches that take it) as
        disjoint ones: per set of parts, the strings in those and in no other, with the branches
        of those parts. Where one of the set lists its strings (``enum``), those of them; else
        the set's language (``LANGUAGE``: one of them that the others all hold, or their
        intersection) less the others' (``MINUS``). None where a part is more than that (``not``
        excludes strings), there are more than ``MAX_ATOM_PARTS`` languages, or they are too
        large to build."""
        import re
        from itertools import combinations

        from .intersect import dfa, intersect

        listed = [_constants(part) for part, _ in parts]
        if None not in listed:  # listed strings only: split by value
            by_value: dict[str, set] = {}
            for values, (_, which) in zip(listed, parts):
                for v in values:
                    by_value.setdefault(v, set()).update(which)
            grouped: dict[frozenset, list] = {}
            for v, which in by_value.items():
                grouped.setdefault(frozenset(which), []).append(v)
            return [({"enum": values}, set(which)) for which, values in grouped.items()]
        if len(parts) > MAX_ATOM_PARTS:
            return None
        nodes = []
        for (part, _), values in zip(parts, listed):
            if not _strings_alone(part, {"enum", "const"}):
                return None
            node = ("alt", [rx.literal(v) for v in values]) if values is not None else self.string_node(part, ptr)
            nodes.append(node if node is not None else rx.ANY_STRING)
        raws = [re.compile(rx.raw_regex(n)) for n in nodes]
        atoms = []
        for size in range(1, len(parts) + 1):
            for inside in combinations(range(len(parts)), size):
                outside = [n for i, n in enumerate(nodes) if i not in inside]
                branches = set().union(*(parts[i][1] for i in inside))
                lists = [i for i in inside if listed[i] is not None]
                if lists:  # a subset of those listed strings
                    kept = [v for v in listed[lists[0]] if all(raws[i].fullmatch(v) for i in inside)
                            and not any(raws[j].fullmatch(v) for j in range(len(nodes)) if j not in inside)]
                    atoms += [({"enum": kept}, branches)] if kept else []
                    continue
                got = dfa([nodes[i] for i in inside], minus=outside)
                if got is None:
                    return None
                if _no_string(got):
                    continue  # (no string is in just these)
                within = next((nodes[i] for i in inside if _no_string(dfa([nodes[i]], minus=[nodes[j] for j in inside if j != i]))), None)
                if within is None:
                    within = nodes[inside[0]] if size == 1 else intersect([nodes[i] for i in inside])
                if within is None:
                    return None
                atoms.append(({"type": "string", LANGUAGE: within, MINUS: outside}, branches))
        return atoms

    def member_value(self, sub, ptr: str) -> str | None:
        """The value rule of a member that may be left out (None: no value is valid, so it never appears)."""
        return None if sub is False else _unless_empty(lambda: self.value(sub, ptr))

    def pattern_regions(self, pattern_props, ptr: str) -> list:
        """``patternProperties`` as (compiled regex, key terminal, value schema, pointer, number of
        patterns around it, the key terminals nested in it), one per pattern: a key lexed as that pattern's terminal (its strings less those of the patterns
        nested in it) matches it and every pattern around it, so its value takes all their
        schemas (merged as allOf). The patterns' languages (ECMA searches) must be laminar:
        nested or disjoint; equal ones are merged, overlapping ones refused."""
        if not pattern_props:
            return []
        import re

        from .relations import relation

        kw = "patternProperties"
        found = []  # [node, raw regex, [patterns], schema]
        for pattern, sub in pattern_props.items():
            try:
                node = rx.parse_ecma(pattern)
            except rx.RegexError as exc:
                raise SchemaError(f"{ptr}/{kw}", _escape(pattern), str(exc)) from None
            raw = rx.raw_regex(node)
            for f in found:
                if relation(f[1], raw) == "equal":
                    f[2].append(pattern)
                    f[3] = self.merge(self.deref(f[3], ptr), self.deref(sub, ptr), f"{ptr}/{kw}/{_escape(pattern)}")
                    break
            else:
                found.append([node, raw, [pattern], sub])
        around: dict[int, list[int]] = {i: [i] for i in range(len(found))}  # i -> the patterns whose language holds i's
        for i in range(len(found)):
            for j in range(i + 1, len(found)):
                rel = relation(found[i][1], found[j][1])
                if rel == "overlap":
                    raise SchemaError(ptr, kw, f"the patterns {found[i][2][0]!r} and {found[j][2][0]!r} may both match a key "
                                      "without either containing the other; only nested or disjoint patterns are supported")
                if rel == "subset":
                    around[i].append(j)
                elif rel == "superset":
                    around[j].append(i)
        terms = [self.terms.string_language(f[0], f"{ptr}/{kw}/{_escape(f[2][0])}") for f in found]
        out = []
        for i, (node, raw, names, sub) in enumerate(found):
            sub_ptr = f"{ptr}/{kw}/{_escape(names[0])}"
            merged = sub
            for j in around[i][1:]:
                merged = self.merge(self.deref(merged, sub_ptr), self.deref(found[j][3], sub_ptr), sub_ptr)
            nested = frozenset(terms[j] for j in range(len(found)) if j != i and i in around[j])  # (None is never nested)
            out.append((re.compile(raw), terms[i], merged, sub_ptr, len(around[i]), nested))
        return out

    def with_patterns(self, sub, name: str, patterns: list, ptr: str, alone: bool = False):
        """The schema of a member named ``name``: ``sub`` and those of the patterns it matches;
        ``alone``: ``sub`` is additionalProperties, which applies only when none matches."""
        matched = [m for m in patterns if m[0].fullmatch(name)]
        if not matched:
            return sub
        # the patterns a name matches are nested (laminar); the deepest one's schema is merged with the others'
        deepest = max(matched, key=lambda m: m[4])
        if alone:
            return deepest[2]
        return self.merge(self.deref(sub, ptr), self.deref(deepest[2], ptr), f"{ptr}/properties/{_escape(name)}")

    def object_rules(self, members, addl, allow_empty: bool, branches=None, exactly_one: bool = False, forbids=None,
                     regions=None, open_to: frozenset | None = None) -> str:
        """``{`` members in order ``}``, each optional one may be left out, then the additional ones.

        ``after(i, A)``: the members from i on when the next one written is i or later (no comma
        before it); ``rest(i, A)``: what may follow a member written before i (a comma, then
        ``after(i)``, or nothing once no required member is left). The comma comes before the
        choice of member, and a rule of ``after`` lists the next ``SKIP_BLOCK`` members (up to the
        first required one) plus one alternative that skips them all. So the parser state after a
        comma holds the rules for every later member once, with one nonterminal per block, not a
        chain of one rule per member, which made Lark's LALR analysis cubic in the number of
        optional members (3.2 s for 100 of them). A run of required members is written inline.

        ``branches``: sets of member indices, one of which must all be present (an anyOf of
        ``required``; default: the members marked required), or exactly one (``exactly_one``: a
        oneOf); A is the set of branches no skipped member has ruled out (at the end, those all
        present), and a member is required where every branch in A requires it. With
        ``exactly_one``, only the places from which some choice of the members left ends with one
        branch in A have rules (``rest`` and ``after`` give None for the others). ``forbids``: per
        branch, the members it rules out (from ``dependencies``); writing one leaves it out of A;
        ``regions``: per member, its texts by the branches they leave in A (``object_union``);
        ``open_to``: the branches that take additional members (None: all), which the first of
        them leaves in A."""
        t = self.terms
        comma = t.punct("COMMA")
        n = len(members)
        if branches is None:
            branches = [frozenset(i for i, (_, req) in enumerate(members) if req)]
        if not exactly_one and forbids is None and regions is None:  # (equal required sets may differ in what they
            branches = list(dict.fromkeys(branches))  # rule out, or in the values regions leave them)
        everyone = frozenset(range(len(branches)))
        tail = f"({comma} {addl})*" if addl else ""
        afters: dict = {}
        rests: dict = {}

        def alive(a: frozenset, skipped) -> frozenset:
            return _left(branches, a, skipped)

        def must(i: int, a: frozenset) -> bool:
            return all(i in branches[b] for b in a)

        def may_end(i: int, a: frozenset, extra: bool = False) -> bool:
            """Whether the object may end before member i (the rest left out; ``extra``: after
            additional members)."""
            return _ends_right(_opened(alive(a, range(i, n)), open_to if extra else None), exactly_one)

        def after(i: int, a: frozenset) -> str | None:
            if (i, a) not in afters:
                if i == n:
                    afters[(i, a)] = f"{addl} {tail}" if addl and may_end(n, a, True) else None
                else:
                    alts = []
                    for j in range(i, min(n, i + SKIP_BLOCK)):
                        aj = alive(a, range(i, j))
                        if not aj:
                            break
                        for text, written in _ways(members, regions, forbids, aj, j):
                            nxt = rest(j + 1, written)
                            if nxt is not None:
                                alts.append(f"{text} {nxt}".strip())
                        if must(j, aj):
                            break
                    else:
                        rest_a = alive(a, range(i, min(n, i + SKIP_BLOCK)))
                        skip = after(min(n, i + SKIP_BLOCK), rest_a) if rest_a else None
                        alts += [skip] if skip is not None else []
                    afters[(i, a)] = (self.rule(alts) if len(alts) > 1 else alts[0]) if alts else None
            return afters[(i, a)]

        def rest(i: int, a: frozenset) -> str | None:
            """As one symbol (or nothing), so that the rules of ``after`` do not copy runs; None
            where no member written from here on ends the object right."""
            if i == n:
                if not (addl and may_end(n, a, True)):
                    return "" if may_end(n, a) else None
                return tail if may_end(n, a) else f"({comma} {addl})+"
            if (i, a) not in rests:
                alts = []
                if not exactly_one or regions or _one_may_remain(branches, a, range(i, n)):
                    if must(i, a):  # (no branch that requires a member rules it out)
                        for text, written in _ways(members, regions, forbids, a, i):
                            inner = rest(i + 1, written)
                            alts += [f"{comma} {text} {inner}".strip()] if inner is not None else []
                    else:
                        nxt = after(i, a)
                        alts += [f"{comma} {nxt}"] if nxt is not None else []
                if may_end(i, a):
                    alts.append("")  # the object may end here
                rests[(i, a)] = (self.rule(alts) if alts != [""] else "") if alts else None
            return rests[(i, a)]

        out = []
        body = after(0, everyone)
        if body is not None:
            out.append(f"{t.punct('LBRACE')} {body} {t.punct('RBRACE')}")
        if allow_empty:
            out.append(t.empty("object"))
        return " | ".join(out) if out else ""

    def any_order_rules(self, members, addl, allow_empty: bool, branches, exactly_one: bool = False, forbids=None,
                        regions=None, anywhere: bool = False, open_to: frozenset | None = None) -> str:
        """``{`` the named members in any order, each at most once, then the additional ones ``}``:
        one rule per set S of members written and set A of branches they leave possible,
        ``rest(S, A)``: a comma and a member not in S, or (once some branch in A lies in S;
        exactly one with ``exactly_one``) the additional members or the end; none where nothing
        from there ends right. 2**n rules, so only for small objects. In one object each
        alternative after a comma begins with its own key terminal; objects of a union told
        apart by a member's value still conflict (``Grammar.from_json_schema`` then asks for the
        ``properties`` order) unless they are one object (``object_union``). ``forbids`` and
        ``regions``, ``open_to``: as in ``object_rules``; ``anywhere``: the additional members also
        before and between the named ones (and then every branch takes them)."""
        t = self.terms
        comma = t.punct("COMMA")
        n = len(members)
        tail = f"({comma} {addl})*" if addl else ""
        rests: dict[tuple, str | None] = {}

        def complete(written: frozenset, a: frozenset) -> bool:
            return _ends_right(frozenset(i for i in a if branches[i] <= written), exactly_one)

        def rest(written: frozenset, a: frozenset) -> str | None:
            if (written, a) not in rests:
                alts = []
                for j in range(n):
                    if j not in written:
                        for text, left in _ways(members, regions, forbids, a, j):
                            nxt = rest(written | {j}, left)
                            alts += [f"{comma} {text} {nxt}".strip()] if nxt is not None else []
                if addl and not anywhere and complete(written, _opened(a, open_to)):
                    alts.append(f"{comma} {addl} {tail}")
                if complete(written, a):
                    alts.append("")  # the object may end here
                if anywhere and alts:  # an additional member, and the same place again (a rule that names itself)
                    name = f"r{len(self.rules)}"
                    self.rules.append(f"{name}: " + " | ".join([f"{comma} {addl} {name}", *alts]))
                    rests[(written, a)] = name
                else:
                    rests[(written, a)] = (self.rule(alts) if alts != [""] else "") if alts else None
            return rests[(written, a)]

        everyone = frozenset(range(len(branches)))
        body = []
        for j in range(n):
            for text, left in _ways(members, regions, forbids, everyone, j):
                nxt = rest(frozenset([j]), left)
                body += [f"{text} {nxt}".strip()] if nxt is not None else []
        if anywhere:
            first = rest(frozenset(), everyone)
            body += [f"{addl} {first}".strip()] if first is not None else []
        elif addl and complete(frozenset(), _opened(everyone, open_to)):
            body.append(f"{addl} {tail}")
        out = [f"{t.punct('LBRACE')} {self.rule(body)} {t.punct('RBRACE')}"] if body else []
        if allow_empty:
            out.append(t.empty("object"))
        return " | ".join(out)

    def order_rules(self, members, addl, allow_empty: bool, orders: list[list[int]], branches: list[frozenset],
                    exactly_one: bool = False, forbids=None, regions=None, open_to: frozenset | None = None) -> str:
        """``{`` the named members in one of ``orders`` (the first is that of ``properties``),
        each optional one may be left out, then the additional ones ``}``. One rule per state of
        the automaton that reads members in every order at once (a place in each and the branches
        its skipped members leave, as ``object_rules`` keeps them, or None where the order was
        broken), so each alternative after a comma begins with its own key terminal and LALR(1)
        stays exact; none where nothing from there ends right. ``forbids``, ``regions`` and
        ``open_to``: as in ``object_rules``."""
        t = self.terms
        comma = t.punct("COMMA")
        n = len(members)
        tail = f"({comma} {addl})*" if addl else ""
        place = [{m: j for j, m in enumerate(order)} for order in orders]

        def step(k: int, at: tuple | None, m: int, which: frozenset | None) -> tuple | None:
            """Where order k is after member m is written at place ``at`` with a value that leaves
            the branches ``which`` possible (None: all; None returned: broken)."""
            if at is None or place[k][m] < at[0]:
                return None
            j = place[k][m]
            a = _written(forbids, _left(branches, at[1], orders[k][at[0]:j]), m)
            a = a if which is None else a & which
            if not a or (exactly_one and not regions and not _one_may_remain(branches, a, orders[k][j + 1:])):
                return None
            return j + 1, a

        def done(state: tuple, extra: bool = False) -> bool:
            """Whether the object may end here (``extra``: after additional members)."""
            return any(_ends_right(_opened(_left(branches, at[1], orders[k][at[0]:]), open_to if extra else None), exactly_one)
                       for k, at in enumerate(state) if at is not None)

        def moves(state: tuple) -> list[tuple[str, tuple]]:
            out = []
            for m in range(n):
                for text, which in regions[m] if regions else [(members[m][0], None)]:
                    nxt = tuple(step(k, at, m, which) for k, at in enumerate(state))
                    if any(at is not None for at in nxt):
                        out.append((text, nxt))
            return out

        rests: dict[tuple, str | None] = {}

        def rest(state: tuple) -> str | None:
            if state not in rests:
                alts = []
                for text, nxt in moves(state):
                    after = rest(nxt)
                    alts += [f"{comma} {text} {after}".strip()] if after is not None else []
                if addl and done(state, True):
                    alts.append(f"{comma} {addl} {tail}")
                if done(state):
                    alts.append("")  # the object may end here
                rests[state] = (self.rule(alts) if alts != [""] else "") if alts else None
            return rests[state]

        start = ((0, frozenset(range(len(branches)))),) * len(orders)
        body = []
        for text, nxt in moves(start):
            after = rest(nxt)
            body += [f"{text} {after}".strip()] if after is not None else []
        if addl and done(start, True):
            body.append(f"{addl} {tail}")
        out = [f"{t.punct('LBRACE')} {self.rule(body)} {t.punct('RBRACE')}"] if body else []
        if allow_empty:
            out.append(t.empty("object"))
        return " | ".join(out)

    def constants(self, schema, ptr: str) -> list[str]:
        values = [schema["const"]] if "const" in schema else schema["enum"]
        if "const" in schema and "enum" in schema:
            values = [v for v in values if _json_eq(v, schema["const"]) and any(_json_eq(v, e) for e in schema["enum"])]
        rest = {k for k in schema if k in ASSERTIONS and k not in ("enum", "const", "type")}
        if rest:
            kw = sorted(rest)[0]
            raise SchemaError(ptr, kw, f"`{kw}` beside enum/const is not supported")
        types = schema.get("type")
        if types is not None:
            types = [types] if isinstance(types, str) else types
            values = [v for v in values if _type_of(v) in types or (_type_of(v) == "integer" and "number" in types)]
        unique = []
        for v in values:
            if not any(_json_eq(v, u) for u in unique):
                unique.append(v)
        return [self.constant(v) for v in unique]

    def constant(self, v) -> str:
        t = self.terms
        if v is None or isinstance(v, bool):
            return f'"{json.dumps(v)}"'
        if isinstance(v, float) and v.is_integer():  # 2.0 is the number 2: either spelling
            return f"({t.literal(v)} | {t.literal(int(v))})"
        if isinstance(v, (str, int, float)):
            return t.literal(v)
        if isinstance(v, list):
            if not v:
                return t.empty("array")
            return f"{t.punct('LSQB')} " + f" {t.punct('COMMA')} ".join(self.constant_rule(x) for x in v) + f" {t.punct('RSQB')}"
        if not v:
            return t.empty("object")
        body = f" {t.punct('COMMA')} ".join(f"{t.literal(k)} {t.punct('COLON')} {self.constant_rule(x)}" for k, x in v.items())
        return f"{t.punct('LBRACE')} {body} {t.punct('RBRACE')}"

    def constant_rule(self, v) -> str:
        text = self.constant(v)
        return text if " " not in text else f"({text})"

    # -------------------------------------------------------------- composition

    def union(self, schema: dict, kw: str, ptr: str) -> list[str]:
        alts = schema[kw]  # (a non-empty array of schemas: _checked_keywords)
        siblings = {k: v for k, v in schema.items() if k != kw}
        branches, objects = [], []
        for i, sub in enumerate(alts):
            sub = self.deref(sub, f"{ptr}/{kw}/{i}")
            sub = _checked_keywords(sub, f"{ptr}/{kw}/{i}") if isinstance(sub, dict) else sub
            merged = self.merge(siblings, sub, f"{ptr}/{kw}/{i}") if siblings else sub
            if UNION_AT in siblings and isinstance(merged, dict):  # the branch's members also where the union stood
                merged = _in_turn(merged, siblings[UNION_AT], sub)
            if kw == "oneOf" or not any(_json_eq(merged, b) for b, _ in branches):  # (a oneOf counts equal ones)
                branches.append((merged, f"{ptr}/{kw}/{i}"))
        if kw == "oneOf" and len(branches) > 1:
            merged = _required_any_of([b for b, _ in branches])
            if merged is not None:  # objects that differ only in `required`: exactly one set is all present
                types = merged.get("type", "object")
                if "object" not in (types if isinstance(types, list) else [types]):
                    raise empty_language(ptr)  # (every branch holds for the same values, or none: never just one)
                return self.alternatives({**merged, "type": "object", EXACTLY_ONE: True}, ptr)
            kinds = [_types_of(b) for b, _ in branches]
            overlap = next(((i, j) for i in range(len(kinds)) for j in range(i + 1, len(kinds))
                            if kinds[i] & kinds[j] and not _disjoint_constants(branches[i][0], branches[j][0])), None)
            got = self.object_union(branches, ptr, True) if overlap is not None or self.object_unions else None
            if got is None and overlap is not None:
                strings = self.string_union(branches, ptr)
                if strings is None:
                    raise SchemaError(ptr, kw, f"alternatives {overlap[0]} and {overlap[1]} may both match an instance; oneOf "
                                      "is only supported when they cannot, for objects told apart member by member, or for "
                                      "alternatives that constrain strings alone")
                got = strings, []
            if got is not None:
                objects, branches = got
        if kw == "anyOf" and len(branches) > 1:
            merged = _required_any_of([b for b, _ in branches])
            if merged is not None:
                return self.alternatives(merged, ptr)
            got = self.object_union(branches, ptr, False) if self.object_unions else None
            if got is not None:
                objects, branches = got
        out = objects
        for b, p in branches:
            try:
                out += self.alternatives(b, p) if b is not True else self.alternatives({}, p)
            except SchemaError as exc:
                if not exc.empty:
                    raise
                # an alternative with no valid instance (a required member whose merged schema
                # is empty) adds nothing to the union
        out = list(dict.fromkeys(self.alias(a) for a in out))
        sets = [a for a in out if self.terms.is_lexeme_set(a)]
        if len(sets) > 1:  # strings, integers, numbers, literals: one rule for their terminals
            merged = self.terms.union(sets, ptr=ptr)
            out = [a for a in out if a not in sets]
            out.insert(0, merged)
        return out

    def alias(self, symbol: str) -> str:
        """The one symbol a rule of one alternative stands for (a ``$ref`` to ``type: string``), else the symbol."""
        if symbol.startswith("r") and symbol[1:].isdigit():
            text = self.rules[int(symbol[1:])]
            if text and text.startswith(f"{symbol}: "):
                body = text[len(symbol) + 2:]
                if " " not in body and self.terms.is_lexeme_set(body):
                    return body
        return symbol

    def loops_in_place(self, schema, ptr: str) -> bool:
        """Whether ``$ref`` and the keywords that apply schemas to the same instance lead from the
        schema back to a schema on the way (validating any instance would never end), or to a
        reference that cannot be followed."""
        done: set[int] = set()

        def visit(node, path: set[int]) -> bool:
            if not isinstance(node, dict) or id(node) in done:
                return False
            if id(node) in path:
                return True
            path.add(id(node))
            kids = [m for kw in ("allOf", "anyOf", "oneOf") if isinstance(node.get(kw), list) for m in node[kw]]
            kids += [node[kw] for kw in ("not", "if", "then", "else") if kw in node]
            if "$ref" in node:
                kids.append(self.resolve(node["$ref"], ptr)[0])
            if any(visit(k, path) for k in kids):
                return True
            path.discard(id(node))
            done.add(id(node))
            return False

        try:
            return visit(schema, set())
        except SchemaError:
            return True

    def deref(self, schema, ptr: str):
        """A schema whose ``$ref`` (alone, or with annotations) is followed, for merging."""
        seen = 0
        while isinstance(schema, dict) and "$ref" in schema and all(k == "$ref" or k in ANNOTATIONS for k in schema):
            schema, ptr = self.resolve(schema["$ref"], ptr)
            seen += 1
            if seen > 50:
                raise SchemaError(ptr, "$ref", "a cycle of references")
        return schema

    def merge(self, a, b, ptr: str):
        """allOf of two schemas as one schema, where the keywords combine exactly."""
        self.merge_depth += 1
        try:
            if self.merge_depth > 64:  # (recursive schemas whose merge unrolls without end)
                raise SchemaError(ptr, "allOf", "allOf of recursive schemas that do not merge into a finite schema is not supported")
            for x in (a, b):
                if not isinstance(x, (dict, bool)):  # (a member's schema merged in, not read as a schema yet)
                    raise SchemaError(ptr, "", f"a schema is an object or a boolean, not {type(x).__name__}")
            a, b = (_checked_keywords(x, ptr) if isinstance(x, dict) else x for x in (a, b))
            return self._merge(a, b, ptr)
        finally:
            self.merge_depth -= 1

    def _merge(self, a, b, ptr: str):
        if a is True or a == {}:
            return b
        if b is True or b == {}:
            return a
        if a is False or b is False:
            return False
        out = dict(a)
        for k, v in b.items():
            if k in (ORDERS, UNION_AT):
                continue  # (below)
            if k in ANNOTATIONS or k not in out or _json_eq(out[k], v):
                out[k] = out.get(k, v) if k in ANNOTATIONS else v
                continue
            w = out[k]
            if k in ("additionalProperties", "items", "additionalItems") and (w in (True, {}) or v in (True, {})):
                out[k] = v if w in (True, {}) else w  # (true constrains nothing)
                continue
            if k == "type":
                ta, tb = ({w} if isinstance(w, str) else set(w)), ({v} if isinstance(v, str) else set(v))
                both = (ta & tb) | ({"integer"} if ("number" in ta and "integer" in tb) or ("integer" in ta and "number" in tb) else set())
                out[k] = sorted(both)
            elif k in ("required", NOT_STRINGS, PATTERNS, NOT_ALL):
                out[k] = list(dict.fromkeys([*w, *v]))
            elif k == "pattern":  # a string holds both: the second one kept aside, intersected in t_string
                out[PATTERNS] = list(dict.fromkeys([*out.get(PATTERNS, []), v]))
            elif k == "properties":
                props = dict(w)
                for name, sub in v.items():
                    props[name] = self.merge(self.deref(props[name], ptr), self.deref(sub, ptr), ptr) if name in props else sub
                out[k] = props
            elif k in ("minimum", "minLength", "minItems", "exclusiveMinimum", "minProperties"):
                out[k] = max(w, v)
            elif k in ("maximum", "maxLength", "maxItems", "exclusiveMaximum", "maxProperties"):
                out[k] = min(w, v)
            elif k in ("items", "additionalProperties") and isinstance(w, (dict, bool)) and isinstance(v, (dict, bool)):
                out[k] = self.merge(self.deref(w, ptr), self.deref(v, ptr), ptr)
            elif k == "enum":
                out[k] = [x for x in w if any(_json_eq(x, y) for y in v)]
            else:
                raise SchemaError(ptr, k, f"allOf with two different `{k}` cannot be merged exactly")
        if UNION_AT not in out:  # an allOf part that is a union, after others' members (see union)
            if any(kw in b and kw not in a for kw in ("anyOf", "oneOf")) and a.get("properties"):
                out[UNION_AT] = list(a["properties"])
            elif UNION_AT in b:
                out[UNION_AT] = b[UNION_AT]
        if a.get("properties") and b.get("properties") or ORDERS in a or ORDERS in b:
            # each side's own orders, then b's members first (instances often write the members of
            # an allOf part or a oneOf branch before those of the schema around it)
            names = list(out.get("properties", {}))
            orders = _completed([*a.get(ORDERS, []), *b.get(ORDERS, []), list(b.get("properties", {}))], names)
            orders = [o for o in orders if o != names][:MAX_ORDERS]
            out.pop(ORDERS, None)
            if orders:
                out[ORDERS] = orders
        for x, y in ((a, b), (b, a)):  # additionalProperties of one side constrains the other's properties
            if x.get("additionalProperties", True) in (True, {}):
                continue  # (true allows everything: no constraint)
            if y.get("patternProperties") and not _json_eq(x.get("patternProperties"), y["patternProperties"]):
                raise SchemaError(ptr, "additionalProperties", "allOf with additionalProperties and other patternProperties cannot be merged exactly")
            only_y = [n for n in y.get("properties", {}) if n not in x.get("properties", {})]
            if only_y and x.get("patternProperties"):
                raise SchemaError(ptr, "additionalProperties", "allOf with additionalProperties, patternProperties and other properties cannot be merged exactly")
            if only_y:  # a member only y names is an additional one for x: it takes x's additionalProperties too
                props = dict(out["properties"])
                for name in only_y:
                    props[name] = self.merge(self.deref(props[name], ptr), self.deref(x["additionalProperties"], ptr), ptr)
                out["properties"] = props
        return out

    def resolve(self, ref, ptr: str):
        """The schema a local ``$ref`` names and its JSON pointer: ``#`` and a JSON pointer, or ``#``
        and a plain name that a subschema declares (``$anchor``, or ``id``/``$id`` of ``#name``)."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise SchemaError(ptr, "$ref", f"only local references (#/...) are supported, not {ref!r}")
        node, path = self.root, unquote(ref[1:])
        if path and not path.startswith("/"):  # a plain-name fragment
            if self.anchors is None:
                self.anchors = _anchors(self.root)
            found = self.anchors.get(path, [])
            if len(found) != 1:
                why = "points nowhere (no subschema declares that name)" if not found else "is declared by more than one subschema"
                raise SchemaError(ptr, "$ref", f"{ref!r} {why}")
            path = found[0]
        for part in [p for p in path.split("/")[1:]] if path else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            elif isinstance(node, dict) and part in node:
                node = node[part]
            else:
                raise SchemaError(ptr, "$ref", f"{ref!r} points nowhere")
        return node, "#" + path


_DATA = {"enum", "const", "default", "examples"}  # keywords whose values are instances, not schemas


def _anchors(root) -> dict[str, list[str]]:
    """Plain names that subschemas declare (``$anchor: name``, or ``id``/``$id`` of ``#name`` as
    draft-04 to 07 write them) -> the JSON pointers (without ``#``) of the subschemas."""
    out: dict[str, list[str]] = {}
    stack = [(root, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            names = [node.get("$anchor")] + [node[k][1:] for k in ("id", "$id") if isinstance(node.get(k), str) and node[k].startswith("#")]
            for name in dict.fromkeys(n for n in names if isinstance(n, str) and n):
                out.setdefault(name, []).append(path)
            stack += [(v, f"{path}/{_escape(k)}") for k, v in node.items() if k not in _DATA]
        elif isinstance(node, list):
            stack += [(v, f"{path}/{i}") for i, v in enumerate(node)]
    return out


def _with_length(nodes, lo: int, hi, ptr: str, terms) -> list:
    """The string constraints and a length bound as one language, where that is exact."""
    length = ("rep", rx.ANY_CHAR, lo, hi)
    if not nodes:
        return [length]
    node = nodes[0]
    if len(nodes) == 1 and node[0] == "rep" and node[1][0] == "chars":  # ^[class]{m,n}$
        a, b = max(node[2], lo), node[3] if hi is None else (hi if node[3] is None else min(hi, node[3]))
        if b is not None and a > b:
            raise SchemaError(ptr, "minLength", "no string satisfies the pattern and the length bounds")
        return [("rep", node[1], a, b)]
    from .relations import relation

    if len(nodes) == 1:
        rel = relation(rx.raw_regex(node), rx.raw_regex(length))  # as their JSON spellings relate (one per character)
        if rel in ("subset", "equal"):
            return [node]
        if rel == "superset":
            return [length]
    return [*nodes, length]  # intersected by the caller


def _reachable(rules: list[str]) -> set[str]:
    """The symbols the rules reach from the first one (``name: body`` lines)."""
    import re

    body = {}
    for line in rules:
        name, _, text = line.partition(":")
        body[name.strip()] = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", re.sub(r'"[^"]*"', "", text)))
    first = rules[0].partition(":")[0].strip()
    seen, stack = {first}, [first]
    while stack:
        for sym in body.get(stack.pop(), ()):
            if sym not in seen:
                seen.add(sym)
                stack.append(sym)
    return seen


def _unless_empty(make: Callable[[], str]) -> str | None:
    """``make()``, or None where it finds no instance valid (the caller may leave the part out)."""
    try:
        return make()
    except SchemaError as exc:
        if exc.empty:
            return None
        raise


def _left(branches: list[frozenset], alive: frozenset, skipped) -> frozenset:
    """The branches of ``alive`` that require none of the members ``skipped``."""
    skipped = set(skipped)
    return frozenset(b for b in alive if not branches[b] & skipped)


def _ways(members: list, regions: list | None, forbids: list[frozenset] | None, alive: frozenset, j: int) -> list:
    """The ways to write member j when the branches ``alive`` are possible: (its text, the
    branches left after it), those that leave some (``regions``: per member, its texts and the
    branches each value region leaves possible; ``forbids``: see :func:`_written`)."""
    alive = _written(forbids, alive, j)
    ways = [(members[j][0], alive)] if regions is None else [(text, alive & which) for text, which in regions[j]]
    return [(text, a) for text, a in ways if a]


_UNKNOWN = object()
_KEYWORDS_OF = {  # the keywords that apply to one type only (the others apply to every type)
    "string": {"pattern", "minLength", "maxLength", "format", PATTERNS, NOT_STRINGS, LANGUAGE, MINUS},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "array": {"items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains"},
    "object": {"properties", "required", "additionalProperties", "patternProperties", "minProperties", "maxProperties",
               *DEPENDENCIES, REQUIRED_ANY_OF, EXACTLY_ONE, ORDERS, NOT_ALL, UNION_AT},
}


def _of_type(schema: dict, kind: str):
    """The part of ``schema`` for the values of one type (``kind``; "number" takes the integers
    too), as a schema; None where it takes none of them; _UNKNOWN where keywords that combine
    schemas make that more than a reading of its keywords."""
    keys = set(schema) - ANNOTATIONS
    if keys & {"anyOf", "oneOf", "allOf", "not", "$ref", "if", "then", "else"}:
        return _UNKNOWN
    values = _constants(schema)
    if values is not None:
        if keys - {"enum", "const", "type"}:
            return _UNKNOWN
        types = schema.get("type")
        types = set(TYPES) if types is None else {types} if isinstance(types, str) else set(types)
        kept = [v for v in values if (_type_of(v) in ("integer", "number") if kind == "number" else _type_of(v) == kind)]
        kept = [v for v in kept if _type_of(v) in types or ("number" in types and _type_of(v) == "integer")]
        return {"enum": kept} if kept else None
    types = schema.get("type", list(TYPES))
    types = {types} if isinstance(types, str) else set(types)
    if kind not in types and not (kind == "number" and "integer" in types):
        return None
    others = set().union(*(kws for k, kws in _KEYWORDS_OF.items() if k != kind))
    part = {k: v for k, v in schema.items() if k not in ANNOTATIONS and k not in others}
    part["type"] = "integer" if kind == "number" and "number" not in types else kind
    return part


def _written(forbids: list[frozenset] | None, alive: frozenset, member: int) -> frozenset:
    """The branches of ``alive`` that writing ``member`` leaves (``forbids``: per branch, the
    members it rules out)."""
    return alive if not forbids else frozenset(b for b in alive if member not in forbids[b])


def _with_conditions(branches: list[frozenset], conditions: list, index: dict[str, int], exactly_one: bool, ptr: str,
                     keyword: str) -> tuple[list[frozenset], list[frozenset] | None]:
    """The required sets ``branches`` with the ``conditions`` met (each a list of ways to meet
    it: names required, names ruled out; from ``dependencies`` and ``not``): per branch and way
    to meet every condition, the members required and those ruled out (None for the second list
    where no condition constrains anything). Names no member may have are never present."""
    found, constrained = [(base, frozenset()) for base in branches], False
    for ways in conditions:
        ways = [(frozenset(index[n] for n in need), frozenset(index[n] for n in out if n in index))
                for need, out in ways if all(n in index for n in need)]
        if any(not need and not out for need, out in ways):
            continue  # (met whatever is written)
        if exactly_one:
            raise SchemaError(ptr, keyword, "dependencies or `not` beside a oneOf over required members are not supported")
        constrained = True
        met = {(need | n, out | f) for need, out in found for n, f in ways if not (need | n) & (out | f)}
        # (a way that requires and rules out no less than another is never needed)
        found = [w for w in met if not any(v != w and v[0] <= w[0] and v[1] <= w[1] for v in met)]
        if len(found) > MAX_BRANCHES:
            raise SchemaError(ptr, keyword, f"dependencies or `not` that can be met in more than {MAX_BRANCHES} ways "
                                            "(sets of members present and absent) are not supported")
    if not found:
        raise empty_language(ptr)
    if not constrained:
        return branches, None
    found.sort(key=lambda w: (sorted(w[0]), sorted(w[1])))  # (the same grammar text on every run)
    return [need for need, _ in found], [out for _, out in found]


def _add_to_group(groups: list[tuple[Any, set]], schema, which: set) -> None:
    """Adds the branches ``which`` to the group of schemas equal to ``schema`` (a new one if none)."""
    for g in groups:
        if _json_eq(g[0], schema):
            g[1].update(which)
            return
    groups.append((schema, set(which)))


def _strings_alone(schema: dict, also: set = frozenset()) -> bool:
    """Whether the schema's keywords (but annotations and ``also``) are ``type`` and those
    :meth:`_Walker.string_node` reads into a language."""
    return not set(schema) - ANNOTATIONS - also - {"type", "pattern", "format", "minLength", "maxLength", PATTERNS}


def _no_string(automaton) -> bool:
    """Whether an automaton of :func:`.intersect.dfa` accepts nothing (False where it was too
    large to build: None)."""
    return automaton is not None and 0 not in automaton[2]


def _opened(alive: frozenset, open_to: frozenset | None) -> frozenset:
    """The branches of ``alive`` left once an additional member is written (``open_to``: those
    that take one; None: all)."""
    return alive if open_to is None else alive & open_to


def _ends_right(alive: frozenset, exactly_one: bool) -> bool:
    """Whether an object whose members leave these branches all present is valid: one of them
    (a oneOf: exactly one)."""
    return len(alive) == 1 if exactly_one else bool(alive)


def _one_may_remain(branches: list[frozenset], alive: frozenset, later) -> bool:
    """Whether leaving out some of the members ``later`` leaves exactly one of the branches
    ``alive`` with all its members present: one b such that every other branch has a member
    among ``later`` that b does not."""
    later = set(later)
    return any(all((branches[c] & later) - branches[b] for c in alive if c != b) for b in alive)


def _required_any_of(branches: list):
    """anyOf alternatives that differ only in ``required`` (and annotations) as one schema whose
    objects have one of the required sets (read by ``t_object``); None when they differ otherwise."""
    if not all(isinstance(b, dict) and "enum" not in b and "const" not in b and REQUIRED_ANY_OF not in b for b in branches):
        return None
    rest = [{k: v for k, v in b.items() if k != "required" and k not in ANNOTATIONS} for b in branches]
    if not all(_json_eq(rest[0], r) for r in rest[1:]):
        return None
    return {**rest[0], REQUIRED_ANY_OF: [list(b.get("required", [])) for b in branches]}


def _in_turn(merged: dict, before: list, branch) -> dict:
    """A union's branch merged with the schema around it (``merged``), which an allOf made of
    parts with members ``before`` the union's and others after: also the order of the parts in
    turn (the branch's members after ``before``), unless the orders are full."""
    merged = {k: v for k, v in merged.items() if k != UNION_AT}
    if isinstance(branch, dict) and UNION_AT in branch:  # (the branch's own union's)
        merged[UNION_AT] = branch[UNION_AT]
    own = list(branch.get("properties", {})) if isinstance(branch, dict) else []
    names = list(merged.get("properties", {}))
    orders = merged.get(ORDERS, [])
    if own and len(orders) < MAX_ORDERS:
        merged[ORDERS] = [o for o in _completed([*orders, [*before, *own]], names) if o != names][:MAX_ORDERS]
    return merged


def _merged_orders(orders: list[list[list]]) -> list[list]:
    """The member orders of a union's objects (``orders``: per branch, its orders): the k-th
    orders of the branches as one where they agree on every pair of members they share (each
    branch's members then written in its order), else each apart."""
    out = []
    for k in range(max(map(len, orders), default=0)):
        seqs = [o[k] for o in orders if k < len(o)]
        merged = _merged_sequence(seqs)
        out += seqs if merged is None else [merged]
    return out


def _merged_sequence(seqs: list[list]) -> list | None:
    """One sequence of the names of ``seqs`` that keeps the order of each (earliest-seen first
    where they leave a choice); None where they disagree."""
    rank = {n: i for i, n in enumerate(dict.fromkeys(n for q in seqs for n in q))}
    before: dict = {n: set() for n in rank}
    for q in seqs:
        for x, y in zip(q, q[1:]):
            before[y].add(x)
    out: list = []
    while len(out) < len(rank):
        ready = [n for n in rank if n not in out and before[n] <= set(out)]
        if not ready:
            return None
        out.append(ready[0])
    return out


def _completed(heads: list[list], everything: list) -> list[list]:
    """Each head (without repeats) followed by the rest of ``everything`` in its order; equal
    results once, in the order of their heads."""
    out = [(*dict.fromkeys(h), *(x for x in everything if x not in h)) for h in heads]
    return [list(o) for o in dict.fromkeys(out)]


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _type_of(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer()):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}[type(v)]


def _types_of(schema) -> set:
    if not isinstance(schema, dict):
        return set(TYPES)
    if "const" in schema or "enum" in schema:
        values = [schema["const"]] if "const" in schema else schema["enum"]
        return {"number" if _type_of(v) == "integer" else _type_of(v) for v in values}
    t = schema.get("type", list(TYPES))
    t = {t} if isinstance(t, str) else set(t)
    return {"number" if x == "integer" else x for x in t}


def _constants(schema):
    if isinstance(schema, dict) and ("const" in schema or "enum" in schema):
        return [schema["const"]] if "const" in schema else schema["enum"]
    return None


def _disjoint_constants(a, b) -> bool:
    """Two schemas whose instances differ for sure: disjoint constants, or objects with a
    required property whose constants are disjoint."""
    ca, cb = _constants(a), _constants(b)
    if ca is not None and cb is not None:
        return not any(_json_eq(x, y) for x in ca for y in cb)
    if isinstance(a, dict) and isinstance(b, dict):
        for x, y in ((a, b), (b, a)):  # x requires a member that y does not allow
            if y.get("additionalProperties") is False and not y.get("patternProperties") and \
                    set(x.get("required", [])) - set(y.get("properties", {})) and _types_of(x) & _types_of(y) <= {"object"}:
                return True
        for name in set(a.get("required", [])) & set(b.get("required", [])):
            pa, pb = a.get("properties", {}).get(name), b.get("properties", {}).get(name)
            if _disjoint(pa, pb):
                return True
        return _disjoint_strings(a, b) or _disjoint_arrays(a, b)
    return False


def _disjoint(a, b) -> bool:
    """Two schemas no instance satisfies both of, as far as their types and constants tell."""
    return not _types_of(a) & _types_of(b) or _disjoint_constants(a, b)


def _disjoint_arrays(a: dict, b: dict) -> bool:
    """Two schemas whose common instances could only be arrays, and no array is both: their
    bounds on the number of items do not meet, or both take at least one item and their
    ``items`` schemas are disjoint (other keywords only narrow them further)."""
    if not _types_of(a) & _types_of(b) <= {"array"} or "prefixItems" in a or "prefixItems" in b:
        return False
    bounds = _common_bounds(a, b, "minItems", "maxItems")
    if bounds is None:
        return False
    if bounds[0] > bounds[1]:
        return True
    items = [x.get("items", True) for x in (a, b)]
    return bounds[0] >= 1 and all(isinstance(i, (dict, bool)) for i in items) and (False in items or _disjoint(*items))


def _common_bounds(a: dict, b: dict, low: str, high: str) -> tuple | None:
    """The bounds on a count (``low``/``high``: its keywords, ``minItems``/``maxItems``) that both
    schemas allow together, lowest and highest (past each other where none is); None where a
    bound is not a number."""
    lo, hi = [x.get(low, 0) for x in (a, b)], [x.get(high, math.inf) for x in (a, b)]
    return (max(lo), min(hi)) if all(isinstance(v, (int, float)) for v in lo + hi) else None


def _disjoint_strings(a: dict, b: dict) -> bool:
    """Two schemas whose common instances could only be strings, and no string is both: their
    bounds on the length do not meet, the constants of one all miss the other's ``pattern``, or
    the two patterns' languages (ECMA searches) are disjoint."""
    import re

    from .relations import relation

    if not _types_of(a) & _types_of(b) <= {"string"}:
        return False
    bounds = _common_bounds(a, b, "minLength", "maxLength")
    if bounds is not None and bounds[0] > bounds[1]:
        return True
    langs = []
    for x in (a, b):
        try:
            langs.append(rx.raw_regex(rx.parse_ecma(x["pattern"])) if isinstance(x.get("pattern"), str) else None)
        except rx.RegexError:
            langs.append(None)
    for values, lang in ((_constants(a), langs[1]), (_constants(b), langs[0])):
        if values is not None and lang is not None and not any(isinstance(v, str) and re.fullmatch(lang, v) for v in values):
            return True
    return None not in langs and relation(*langs) == "disjoint"


def _json_eq(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_json_eq(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_json_eq(a[k], b[k]) for k in a)
    return a == b


_COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")


def _checked_keywords(schema: dict, ptr: str) -> dict:
    """``schema`` with the values of the keywords it reads checked (a SchemaError naming the
    keyword where one is malformed: never a TypeError from deeper in); an integral float count
    (``3.0``, an integer from draft 6 on) becomes an int, in a copy."""
    fixed = {}
    for kw in _COUNTS:
        if kw not in schema:
            continue
        v = schema[kw]
        if isinstance(v, float) and v.is_integer() and v >= 0:
            fixed[kw] = int(v)
        elif not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise SchemaError(ptr, kw, f"must be a non-negative integer, not {_shown(v)}")
    for kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
        if kw not in schema:
            continue
        v = schema[kw]
        if isinstance(v, bool) and kw.startswith("exclusive"):
            continue  # draft 4's form
        if kw == "multipleOf":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise SchemaError(ptr, kw, f"must be a number greater than 0, not {_shown(v)}")
        elif isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise SchemaError(ptr, kw, f"must be a finite number, not {_shown(v)}")
    for kw, kind, name in (("pattern", str, "a string"), ("format", str, "a string"), ("uniqueItems", bool, "a boolean"),
                           ("properties", dict, "an object"), ("patternProperties", dict, "an object"),
                           ("$defs", dict, "an object"), ("definitions", dict, "an object"), ("prefixItems", list, "an array"),
                           ("enum", list, "an array")):
        if kw in schema and not isinstance(schema[kw], kind):
            raise SchemaError(ptr, kw, f"must be {name}, not {_shown(schema[kw])}")
    for kw in ("properties", "patternProperties"):  # (member schemas, read after the object's other keywords)
        for name, sub in schema.get(kw, {}).items():
            if not isinstance(sub, (dict, bool)):
                raise SchemaError(f"{ptr}/{kw}/{_escape(name)}", "", f"a schema is an object or a boolean, not {type(sub).__name__}")
    for kw, kinds in (("additionalProperties", (dict, bool)), ("items", (dict, bool, list)), ("not", (dict, bool)),
                      ("contains", (dict, bool)), ("propertyNames", (dict, bool)), ("if", (dict, bool)), ("then", (dict, bool)),
                      ("else", (dict, bool))):
        if kw in schema and not isinstance(schema[kw], kinds):
            raise SchemaError(ptr, kw, f"must be a schema (an object or a boolean), not {_shown(schema[kw])}")
    t = schema.get("type", "null")
    if not isinstance(t, str) and not (isinstance(t, list) and all(isinstance(x, str) for x in t)):
        raise SchemaError(ptr, "type", f"must be a type name or an array of them, not {_shown(t)}")
    required = schema.get("required", [])
    if isinstance(required, bool):  # draft 3's form, on a member's schema: not read
        if "type" not in schema or "object" in ([t] if isinstance(t, str) else t):
            raise SchemaError(ptr, "required", "a boolean `required` (draft 3) on an object schema is not supported")
    elif not isinstance(required, list) or not all(isinstance(n, str) for n in required):
        raise SchemaError(ptr, "required", f"must be an array of strings, not {_shown(required)}")
    for kw in ("allOf", "anyOf", "oneOf"):
        if kw not in schema:
            continue
        subs = schema[kw]
        if not isinstance(subs, list) or not subs:
            raise SchemaError(ptr, kw, "must be a non-empty array")
        for i, sub in enumerate(subs):
            if not isinstance(sub, (dict, bool)):
                raise SchemaError(f"{ptr}/{kw}/{i}", "", f"a schema is an object or a boolean, not {type(sub).__name__}")
    return {**schema, **fixed} if fixed else schema


def _shown(value) -> str:
    return json.dumps(value, default=str)[:80]
