"""Regexes for JSON numerals whose value lies in an interval: integers, and numbers written with a
fraction or an exponent, compared with decimal bounds exactly (no float rounding).

A numeral with an exponent ``m e E`` is compared through its exponent when its mantissa is
*normalized* (one non-zero digit before the point: ``1.5e3``, as ``json.dumps`` and serde_json
write floats) or zero: then the value's order of magnitude is E. Whether ``10 e E`` or
``0.001 e E`` is at least a bound other than 0 is not a regular (nor context-free) property of its
spelling (``10...0e-n`` against 1 counts zeros against n), so a mantissa that is not normalized is
decided by its sign only: such numerals are taken where the interval holds every positive (or
every negative) number, and are outside the canonical form otherwise (the grammar's one
restriction, as ``1.0`` is outside it for integers).
"""

from __future__ import annotations

from decimal import Decimal
from functools import lru_cache
from typing import Optional

Bound = Optional[tuple[Decimal, bool]]  # (value, inclusive), or None for no bound on that side

ZERO_FORMS = r"0(?:\.0+|(?:\.0+)?[eE][+-]?[0-9]+)"  # the value 0 written with a fraction or an exponent
_ODD_MANTISSA = r"(?:0\.[0-9]*[1-9][0-9]*|[1-9][0-9]+(?:\.[0-9]+)?)[eE][+-]?[0-9]+"  # not normalized, not zero
ODD_POSITIVE = _ODD_MANTISSA
ODD_NEGATIVE = "-" + _ODD_MANTISSA
_ANY_MANTISSA = r"[1-9](?:\.[0-9]+)?"


def _group(alts: list[str]) -> str | None:
    alts = [a for a in alts if a]
    if not alts:
        return None
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


# ---------------------------------------------------------------- integers


def _digits_range(lo: str, hi: str) -> str:
    """Regex for decimal numerals of one length between ``lo`` and ``hi`` (same length)."""
    if not lo:
        return ""
    if lo[0] == hi[0]:
        return lo[0] + _digits_range(lo[1:], hi[1:])
    n = len(lo) - 1
    alts, first, last = [], int(lo[0]), int(hi[0])
    if lo[1:] != "0" * n:
        alts.append(lo[0] + _digits_range(lo[1:], "9" * n))
        first += 1
    tail = None
    if hi[1:] != "9" * n:
        tail = hi[0] + _digits_range("0" * n, hi[1:])
        last -= 1
    if first <= last:
        alts.append((str(first) if first == last else f"[{first}-{last}]") + (f"[0-9]{{{n}}}" if n else ""))
    if tail:
        alts.append(tail)
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def _positive(lo: int, hi: int | None) -> list[str]:
    """Numerals (no leading zero) of the integers in [lo, hi], 1 <= lo; hi None: unbounded."""
    out, length = [], len(str(lo))
    top = len(str(hi)) if hi is not None else length
    for n in range(length, top + 1):
        a = max(lo, 10 ** (n - 1))
        b = 10**n - 1 if hi is None else min(hi, 10**n - 1)
        if a <= b:
            out.append(_digits_range(str(a), str(b)))
    if hi is None:
        out.append(f"[1-9][0-9]{{{length},}}")
    return out


def integer_regex(lo: int | None, hi: int | None) -> str:
    """The integer numerals (``-0`` included with 0) with value in [lo, hi] (None: unbounded)."""
    alts = []
    if lo is None or lo < 0:
        top = -1 if hi is None or hi >= 0 else hi
        neg = _positive(-top, None if lo is None else -lo)
        if neg:
            alts.append("-" + (neg[0] if len(neg) == 1 else "(?:" + "|".join(neg) + ")"))
    if (lo is None or lo <= 0) and (hi is None or hi >= 0):
        alts.append("-?0")
    if hi is None or hi > 0:
        alts += _positive(max(lo or 1, 1), hi)
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def _natural(lo: int, hi: int | None) -> str | None:
    """Numerals without a sign or leading zero of the integers in [lo, hi], 0 <= lo."""
    if hi is not None and hi < lo:
        return None
    alts = ["0"] if lo == 0 else []
    if hi is None or hi >= 1:
        alts += _positive(max(lo, 1), hi)
    return _group(alts)


def _exponent(lo: int | None, hi: int | None) -> str | None:
    """``[eE]`` and an exponent (sign and leading zeros allowed) with value in [lo, hi]."""
    alts = []
    if hi is None or hi >= 0:
        pos = _natural(max(lo, 0) if lo is not None else 0, hi)
        alts.append(pos and rf"\+?0*{pos}")
    if lo is None or lo <= 0:
        neg = _natural(max(-hi, 0) if hi is not None else 0, None if lo is None else -lo)
        alts.append(neg and f"-0*{neg}")
    body = _group(alts)
    return body and f"[eE]{body}"


# ---------------------------------------------------------------- fractions


@lru_cache(maxsize=4096)
def _fraction(lo: str | None, lo_incl: bool, hi: str | None, hi_incl: bool) -> tuple[str | None, bool]:
    """Digit strings F with ``0.lo <= 0.F <= 0.hi`` (strict where not incl; lo None: no lower
    bound, hi None: no upper bound below 1), as (regex of the non-empty ones, whether the empty
    string (value 0) is in). ``lo``/``hi``: the digits still tied to the bound, trailing zeros dropped."""
    if lo == "" and lo_incl:
        lo = None  # the rest is >= 0 anyway
    if hi == "":
        ok = hi_incl and (lo is None)
        return ("0+" if ok else None), ok  # the rest must be 0: only zeros may follow
    if lo == "" and hi is None:
        return "[0-9]*[1-9][0-9]*", False  # the rest must be > 0
    if lo is None and hi is None:
        return "[0-9]+", True
    empty_ok = lo is None  # lo == "" (strict) or non-empty: 0 is too small
    lo_d = int(lo[0]) if lo else 0
    hi_d = int(hi[0]) if hi is not None else 9
    alts = []
    for d in sorted({lo_d, hi_d}):
        if d < lo_d or d > hi_d:
            continue
        new_lo = (lo[1:].rstrip("0") if lo else "") if lo is not None and d == lo_d else None
        new_hi = hi[1:].rstrip("0") if hi is not None and d == hi_d else None
        alts.append(_then(str(d), *_fraction(new_lo, lo_incl, new_hi, hi_incl)))
    if lo_d + 1 <= hi_d - 1:
        mid = str(lo_d + 1) if lo_d + 1 == hi_d - 1 else f"[{lo_d + 1}-{hi_d - 1}]"
        alts.append(mid + "[0-9]*")
    return _group(alts), empty_ok


def _then(head: str, rest: str | None, rest_empty: bool) -> str | None:
    """``head`` followed by one of the rest's strings (``rest`` non-empty ones, or nothing when ``rest_empty``)."""
    if rest and rest_empty:
        return f"{head}(?:{rest})?"
    if rest:
        return f"{head}(?:{rest})"
    return head if rest_empty else None


def _split(v: Decimal) -> tuple[int, str]:
    """A non-negative decimal as (integer part, fraction digits without trailing zeros)."""
    text = format(v, "f")
    whole, _, frac = text.partition(".")
    return int(whole), frac.rstrip("0")


def _decimal(lo: Decimal, lo_incl: bool, hi: Decimal | None, hi_incl: bool, *, digit: bool) -> str | None:
    """``I.F`` numerals with value in the interval (lo >= 0). ``digit``: the mantissa of an
    exponent form, I one digit 1-9 and the fraction optional (hi <= 10); else I a natural numeral
    and F required."""
    li, lf = _split(lo)
    hi_i, hf = _split(hi) if hi is not None else (None, None)

    def with_fraction(whole: str, frac: tuple[str | None, bool]) -> str | None:
        rest, empty = frac
        if digit:
            return _then(whole, rest and rf"\.(?:{rest})", empty)
        return rest and rf"{whole}\.(?:{rest})"

    if hi_i is not None and li == hi_i:
        return with_fraction(str(li), _fraction(lf, lo_incl, hf, hi_incl))
    alts = [with_fraction(str(li), _fraction(lf, lo_incl, None, False))]
    top = hi_i - 1 if hi_i is not None else None
    if digit:
        top = 9 if top is None else min(top, 9)
        if li + 1 <= top:
            alts.append((str(top) if li + 1 == top else f"[{li + 1}-{top}]") + r"(?:\.[0-9]+)?")
    else:
        mid = _natural(li + 1, top)
        alts.append(mid and rf"{mid}\.[0-9]+")
    if hi_i is not None and (not digit or hi_i <= 9):
        alts.append(with_fraction(str(hi_i), _fraction(None, True, hf, hi_incl)))
    return _group(alts)


def _scientific(lo: Decimal, lo_incl: bool, hi: Decimal | None, hi_incl: bool) -> str | None:
    """Normalized exponent forms ``d(.F)?eE`` with value in the interval (lo >= 0)."""
    e1 = lo.adjusted() if lo > 0 else None
    e2 = hi.adjusted() if hi is not None else None
    m1 = lo.scaleb(-e1) if e1 is not None else None
    m2 = hi.scaleb(-e2) if e2 is not None else None
    one = Decimal(1)
    if e1 is not None and e1 == e2:
        m = _decimal(m1, lo_incl, m2, hi_incl, digit=True)
        return m and m + _exponent(e1, e1)
    alts = []
    if e1 is not None:
        m = _decimal(m1, lo_incl, None, False, digit=True)
        alts.append(m and m + _exponent(e1, e1))
    low = e1 + 1 if e1 is not None else None
    high = e2 - 1 if e2 is not None else None
    if low is None or high is None or low <= high:
        alts.append(_ANY_MANTISSA + _exponent(low, high))
    if e2 is not None:
        m = _decimal(one, True, m2, hi_incl, digit=True)
        alts.append(m and m + _exponent(e2, e2))
    return _group(alts)


def _magnitudes(lo: Decimal, lo_incl: bool, hi: Decimal | None, hi_incl: bool) -> str | None:
    """Unsigned fraction/normalized-exponent numerals with a positive value in the interval (lo >= 0)."""
    if lo == 0:
        lo_incl = False
    if hi is not None and (hi < lo or (hi == lo and not (lo_incl and hi_incl))):
        return None
    return _group([_decimal(lo, lo_incl, hi, hi_incl, digit=False), _scientific(lo, lo_incl, hi, hi_incl)])


def fraction_regex(lo: Bound, hi: Bound) -> str | None:
    """The numerals written with a fraction or an exponent whose value lies between the bounds,
    but those whose exponent's mantissa is neither normalized nor zero (:data:`ODD_POSITIVE`,
    :data:`ODD_NEGATIVE`); None for none."""
    alts = []
    lo_v, lo_incl = lo if lo is not None else (None, False)
    hi_v, hi_incl = hi if hi is not None else (None, False)
    if hi_v is None or hi_v > 0:
        start = (lo_v, lo_incl) if lo_v is not None and lo_v > 0 else (Decimal(0), False)
        alts.append(_magnitudes(*start, hi_v, hi_incl))
    if contains(lo, hi, Decimal(0)):
        alts.append("-?" + ZERO_FORMS)
    if lo_v is None or lo_v < 0:
        start = (-hi_v, hi_incl) if hi_v is not None and hi_v < 0 else (Decimal(0), False)
        neg = _magnitudes(*start, None if lo_v is None else -lo_v, lo_incl)
        alts.append(neg and "-" + neg)
    return _group(alts)


def contains(lo: Bound, hi: Bound, v: Decimal) -> bool:
    if lo is not None and (v < lo[0] or (v == lo[0] and not lo[1])):
        return False
    return not (hi is not None and (v > hi[0] or (v == hi[0] and not hi[1])))
