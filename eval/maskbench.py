"""MaskBench (JSONSchemaBench's mask benchmark): JSON Schemas compiled fresh, instances walked token by token.

For each schema: time to first mask (TTFM: ``Grammar.from_json_schema`` + ``compile`` + the
first mask; nothing is cached between schemas except the vocabulary's token trie, built once per
vocabulary), then every test instance, serialized as MaskBench serializes it (pretty-printed with
two spaces, integral floats as integers), walked token by token with every mask timed (TBM).
Each schema is counted once: passing, compile error (an honest refusal), validation error (a
valid instance refused), invalidation error (an invalid instance accepted) or crash.
Whether llguidance and XGrammar are importable is recorded; running them on the same files is
not written yet (eval/peers/ has how they were run for the grammar benchmark).

The data is not in the repository (it has no license): get ``maskbench/data`` from
https://github.com/guidance-ai/jsonschemabench and pass its folder.

    python -m eval.maskbench ../shared/bench/jsonschema/data --limit 300
    python -m eval.maskbench DATA --limit 300 --update-results   # writes eval/maskbench-<date>.json and .md
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

from eval.paths import OUT, ROOT, tokenizer_file

OUTCOMES = ("passing", "compile_error", "validation_error", "invalidation_error", "crash")


def sample(folder: Path, limit: int | None) -> list[Path]:
    """Every file, or ``limit`` of them spread evenly over the sorted list (so over the splits)."""
    files = sorted(folder.glob("*.json"))
    if limit is None or limit >= len(files):
        return files
    step = len(files) / limit
    return [files[int(i * step)] for i in range(limit)]


def round_float_to_int(v):
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, list):
        return [round_float_to_int(x) for x in v]
    if isinstance(v, dict):
        return {k: round_float_to_int(x) for k, x in v.items()}
    return v


def serialize(data) -> str:
    """As MaskBench serializes an instance (serde_json's pretty printer)."""
    return json.dumps(round_float_to_int(data), indent=2, ensure_ascii=False)


class Greatgramma:
    name = "greatgramma"

    def __init__(self, vocab, tokenizer):
        import greatgramma as gg

        self.gg, self.vocab, self.eos = gg, vocab, vocab.eos_token_ids[0]

    def compile(self, schema):
        gg = self.gg
        masker = gg.Masker(gg.compile(gg.Grammar.from_json_schema(schema), self.vocab))
        masker.mask(masker.initial_state())
        return masker

    refusals = ()  # set in main: the errors that mean "refused the schema"

    def walk(self, masker, ids: list[int], times: list[float]) -> bool:
        """True when every token is allowed and EOS is allowed at the end."""
        state = masker.initial_state()
        for t in ids:
            t0 = time.perf_counter()
            words = masker.mask(state)
            times.append(time.perf_counter() - t0)
            if not (int(words.view(np.uint32)[t >> 5]) >> (t & 31)) & 1:
                return False
            state = masker.advance(state, t)
        t0 = time.perf_counter()
        words = masker.mask(state)
        times.append(time.perf_counter() - t0)
        return bool((int(words.view(np.uint32)[self.eos >> 5]) >> (self.eos & 31)) & 1)


def peers(tokenizer_path: Path) -> dict:
    """Which peers can run here: name -> None (runs) or why not."""
    found = {}
    for name in ("llguidance", "xgrammar"):
        try:
            __import__(name)
            found[name] = "importable, but this script does not run peers yet"
        except ImportError:
            found[name] = f"{name} is not installed in this Python (pip install {name})"
    return found


def run_schema(engine, path: Path, tok, vocab) -> dict:
    from greatgramma.tokenize import encode_exact

    doc = json.loads(path.read_text(encoding="utf-8"))
    rec = {"file": path.name, "outcome": "passing", "tests": len(doc.get("tests", []))}
    t0 = time.perf_counter()
    try:
        masker = engine.compile(doc["schema"])
    except engine.refusals as exc:
        rec.update(outcome="compile_error", error=str(exc).splitlines()[0][:300])
        return rec
    except Exception as exc:  # noqa: BLE001 - a crash is a result here
        rec.update(outcome="crash", error=f"{type(exc).__name__}: {exc}"[:300])
        return rec
    rec["ttfm_ms"] = (time.perf_counter() - t0) * 1000
    times: list[float] = []
    for i, test in enumerate(doc.get("tests", [])):
        text = serialize(test["data"])
        try:
            ids = encode_exact(tok, text, vocab.token_bytes)
            ok = engine.walk(masker, ids, times)
        except Exception as exc:  # noqa: BLE001
            rec.update(outcome="crash", error=f"test {i}: {type(exc).__name__}: {exc}"[:300])
            break
        if ok != test["valid"]:
            rec["jsonschema_agrees_with_engine"] = _jsonschema_valid(doc["schema"], json.loads(text)) == ok
        if test["valid"] and not ok:
            rec.update(outcome="validation_error", error=f"test {i}: valid instance refused: {text[:200]}")
            break
        if not test["valid"] and ok:
            rec.update(outcome="invalidation_error", error=f"test {i}: invalid instance accepted: {text[:200]}")
            break
    rec["tbm_ms"] = [round(t * 1000, 4) for t in times]
    return rec


def _jsonschema_valid(schema, instance):
    """The serialized instance's validity by Python's jsonschema (formats checked), or None when it cannot tell."""
    try:
        import jsonschema

        cls = jsonschema.validators.validator_for(schema)
        return cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(instance)
    except Exception:  # noqa: BLE001 - an oracle that cannot run says nothing
        return None


def summarize(records: list[dict]) -> dict:
    counts = {o: sum(r["outcome"] == o for r in records) for o in OUTCOMES}
    ttfm = np.array([r["ttfm_ms"] for r in records if "ttfm_ms" in r]) if records else np.array([])
    tbm = np.array([t for r in records for t in r.get("tbm_ms", [])])
    pct = lambda a, q: round(float(np.percentile(a, q)), 3) if a.size else None  # noqa: E731
    return {
        "schemas": len(records), **counts,
        "errors_where_jsonschema_agrees_with_engine": sum(bool(r.get("jsonschema_agrees_with_engine")) for r in records),
        "ttfm_ms": {"p50": pct(ttfm, 50), "p75": pct(ttfm, 75), "p99": pct(ttfm, 99), "n": int(ttfm.size)},
        "tbm_ms": {"mean": round(float(tbm.mean()), 4) if tbm.size else None, "p50": pct(tbm, 50), "p99": pct(tbm, 99), "n": int(tbm.size)},
    }


TARGETS = [  # (what, test on the summary, cause when missed)
    ("invalidation errors 0", lambda s: s["invalidation_error"] == 0),
    ("crashes 0", lambda s: s["crash"] == 0),
    ("validation errors <= 0.2% of schemas", lambda s: s["validation_error"] <= 0.002 * s["schemas"]),
    ("TTFM p50 <= 20 ms", lambda s: (s["ttfm_ms"]["p50"] or 0) <= 20),
    ("TTFM p99 <= 1 s", lambda s: (s["ttfm_ms"]["p99"] or 0) <= 1000),
    ("TBM mean <= 0.1 ms", lambda s: (s["tbm_ms"]["mean"] or 0) <= 0.1),
    ("TBM p99 <= 1 ms", lambda s: (s["tbm_ms"]["p99"] or 0) <= 1),
]


def report(result: dict) -> str:
    """A short Markdown summary: the counts, the percentiles, each target MET or MISS."""
    s = result["greatgramma"]["summary"]
    lines = [f"# MaskBench, {result['date']}: {s['schemas']} schemas (--limit {result['limit']}), tokenizer {result['tokenizer']}", "",
             "| outcome | schemas |", "|---|---|"]
    lines += [f"| {o.replace('_', ' ')} | {s[o]} |" for o in OUTCOMES]
    lines += ["", f"TTFM ms: p50 {s['ttfm_ms']['p50']}, p75 {s['ttfm_ms']['p75']}, p99 {s['ttfm_ms']['p99']} ({s['ttfm_ms']['n']} schemas compiled)",
              f"TBM ms: mean {s['tbm_ms']['mean']}, p50 {s['tbm_ms']['p50']}, p99 {s['tbm_ms']['p99']} ({s['tbm_ms']['n']} masks)", "",
              "| target | |", "|---|---|"]
    lines += [f"| {what} | {'met' if ok(s) else 'MISS'} |" for what, ok in TARGETS]
    for name, peer in result["peers"].items():
        lines.append(f"\n{name}: not run ({peer['not_run']})")
    errors = [r for r in result["greatgramma"]["schemas"] if r["outcome"] not in ("passing",)]
    lines += ["", "## Every schema not passing", "", "| file | outcome | why |", "|---|---|---|"]
    lines += [f"| {r['file']} | {r['outcome']} | {r.get('error', '').splitlines()[0][:160].replace('|', '/')} |" for r in errors]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path, help="MaskBench's data folder (one JSON file per schema)")
    ap.add_argument("--limit", type=int, default=None, help="this many schemas, spread over the sorted files")
    ap.add_argument("--tokenizer", default="llama3")
    ap.add_argument("--update-results", action="store_true", help="write eval/maskbench-<date>.json/.md (else eval/out/)")
    ap.add_argument("--report", type=Path, help="only write the Markdown summary of this result file (beside it)")
    args = ap.parse_args(argv)
    if args.report:
        args.report.with_suffix(".md").write_text(report(json.loads(args.report.read_text(encoding="utf-8"))), encoding="utf-8")
        return 0
    if not args.data.is_dir():
        print(f"maskbench: {args.data} is not a folder; get maskbench/data from "
              "https://github.com/guidance-ai/jsonschemabench", file=sys.stderr)
        return 2
    import greatgramma as gg
    from greatgramma.tokenize import load_tokenizer

    path = tokenizer_file(args.tokenizer)
    vocab, tok = gg.Vocabulary.from_file(path), load_tokenizer(path)
    gg.compile(gg.Grammar('start: "x"'), vocab)  # builds the vocabulary's shared token trie once
    engine = Greatgramma(vocab, tok)
    Greatgramma.refusals = (gg.GrammarError, gg.ResourceLimitError)
    files = sample(args.data, args.limit)
    records = []
    for k, f in enumerate(files):
        rec = run_schema(engine, f, tok, vocab)
        records.append(rec)
        print(f"[{k + 1}/{len(files)}] {f.name}: {rec['outcome']} {rec.get('ttfm_ms', 0):.0f} ms {rec.get('error', '')[:120]}",
              file=sys.stderr, flush=True)
    result = {
        "date": datetime.date.today().isoformat(),
        "machine": {"python": platform.python_version(), "processor": platform.processor() or platform.machine()},
        "data": str(args.data), "limit": args.limit, "tokenizer": args.tokenizer,
        "greatgramma": {"summary": summarize(records), "schemas": [{k: v for k, v in r.items() if k != "tbm_ms"} for r in records]},
        "peers": {name: {"not_run": why} for name, why in peers(path).items() if why},
    }
    dest = ROOT / "eval" if args.update_results else OUT
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / f"maskbench-{result['date']}.json"
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(report(result), encoding="utf-8")
    print(json.dumps(result["greatgramma"]["summary"], indent=1))
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
