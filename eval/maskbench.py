"""MaskBench (JSONSchemaBench's mask benchmark): JSON Schemas compiled fresh, instances walked token by token.

For each schema: time to first mask (TTFM: ``Grammar.from_json_schema`` + ``compile`` + the
first mask; nothing is cached between schemas except the vocabulary's token trie, built once per
vocabulary), then every test instance, serialized as MaskBench serializes it (pretty-printed with
two spaces, integral floats as integers), walked token by token with every mask timed (TBM).
Each schema is counted once: passing, compile error (an honest refusal), validation error (a
valid instance refused), invalidation error (an invalid instance accepted) or crash. An instance
whose label the serialization cannot keep (an integral float, such as ``12345.0`` where the schema
wants an integer, is written ``12345``, which Python's jsonschema finds valid) is left out for
every engine and listed in the report.
The peers (llguidance, XGrammar) run the same cases one after the other, each in its own venv
(``eval/peers/run_maskbench.py``, which also holds the per-schema walk and classification all
engines share): the same schema text, the same token ids, the same outcomes and timings.

The data is not in the repository (it has no license): get ``maskbench/data`` from
https://github.com/guidance-ai/jsonschemabench and pass its folder.

    python -m eval.maskbench ../shared/bench/jsonschema/data --limit 300
    python -m eval.maskbench DATA --limit 300 --update-results   # writes eval/maskbench-<date>.json and .md
    python -m eval.maskbench DATA --peers '' --only Github_easy---o28258.json,Github_easy---o6168   # these schemas only
    python -m eval.maskbench DATA --limit 20 --peers '' --venvs /other/checkout/eval/.venvs
    python -m eval.maskbench --report eval/maskbench-<date>.json --notes causes.md   # rewrite the .md, notes appended
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from eval.paths import OUT, ROOT, tokenizer_file
from eval.peers.run_maskbench import run_case

OUTCOMES = ("passing", "compile_error", "validation_error", "invalidation_error", "crash")


def sample(folder: Path, limit: int | None) -> list[Path]:
    """Every file, or ``limit`` of them spread evenly over the sorted list (so over the splits)."""
    files = sorted(folder.glob("*.json"))
    if limit is None or limit >= len(files):
        return files
    step = len(files) / limit
    return [files[int(i * step)] for i in range(limit)]


def only(folder: Path, names: str) -> list[Path]:
    """The named files of ``folder`` (comma-separated names, ``.json`` optional), in the order given."""
    files = []
    for name in filter(None, (n.strip() for n in names.split(","))):
        path = folder / (name if name.endswith(".json") else name + ".json")
        if not path.is_file():
            raise SystemExit(f"maskbench: --only: {path} is not a file")
        files.append(path)
    return files


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

    def __init__(self, vocab):
        import greatgramma as gg

        self.gg, self.vocab, self.eos = gg, vocab, vocab.eos_token_ids[0]
        self.refusals = (gg.GrammarError, gg.ResourceLimitError)  # the errors that mean "refused the schema"

    def compile(self, schema):
        gg = self.gg
        masker = gg.Masker(gg.compile(gg.Grammar.from_json_schema(schema), self.vocab))
        masker.mask(masker.initial_state())
        return masker

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


def make_cases(files: list[Path], tok, vocab) -> tuple[list[dict], list[dict], list[dict]]:
    """Per schema file: the case every engine walks (schema text, each instance's token ids as
    greatgramma tokenizes it) and the instances' serialized text (for the report); and the
    instances left out, for every engine alike: those whose serialization changed a value's type
    (an integral float written as an integer) where Python's jsonschema then finds the text that
    would be walked valid against an "invalid" label, or invalid against a "valid" one. The label
    is about a value no engine is shown."""
    from greatgramma.tokenize import encode_exact

    cases, texts, left_out = [], [], []
    for path in files:
        doc = json.loads(path.read_text(encoding="utf-8"))
        tests, shown = [], []
        for i, test in enumerate(doc.get("tests", [])):
            text = serialize(test["data"])
            if not same_json(json.loads(text), test["data"]):
                verdict = _jsonschema_valid(doc["schema"], json.loads(text))
                if verdict is not None and verdict != bool(test["valid"]):
                    left_out.append({"file": path.name, "test": i, "label": "valid" if test["valid"] else "invalid",
                                     "why": "an integral float is serialized as an integer; Python's jsonschema finds the "
                                            f"serialized text {'valid' if verdict else 'invalid'}"})
                    continue
            shown.append(text)
            try:
                tests.append({"valid": bool(test["valid"]), "ids": encode_exact(tok, text, vocab.token_bytes)})
            except ValueError as exc:
                tests.append({"valid": bool(test["valid"]), "ids": [], "error": str(exc)[:200]})
        cases.append({"file": path.name, "schema": json.dumps(doc["schema"], ensure_ascii=False), "tests": tests})
        texts.append(shown)
    return cases, texts, left_out


def same_json(a, b) -> bool:
    """Equal JSON values of the same types (``12345 == 12345.0`` in Python, not here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    return a == b


def explain(rec: dict, case: dict, texts: list[str]) -> dict:
    """Beside a validation/invalidation error: whether Python's jsonschema agrees with the engine on
    the serialized instance (the instance itself is not recorded: MaskBench's data has no license)."""
    i = rec.get("test")
    if i is not None and rec["outcome"] in ("validation_error", "invalidation_error"):
        rec["jsonschema_agrees_with_engine"] = _jsonschema_valid(json.loads(case["schema"]), json.loads(texts[i])) == (
            rec["outcome"] == "invalidation_error")
    return rec


def _pump(stream, into: queue.Queue) -> None:
    for line in stream:
        into.put(line)
    into.put(None)


def run_peer(python: Path, peer: str, tokenizer: str, cases: list[dict], timeout: float) -> dict:
    """One peer on every case, in its own venv's process; a schema with no answer within ``timeout``
    seconds (or a process that dies on it) is a crash, and the process is started again after it."""
    runner = ROOT / "eval" / "peers" / "run_maskbench.py"
    records, info = [], None
    with tempfile.TemporaryDirectory() as work:
        while len(records) < len(cases):
            todo = cases[len(records):]
            path = Path(work) / "cases.json"
            path.write_text(json.dumps(todo), encoding="utf-8")
            proc = subprocess.Popen([str(python), str(runner), "--peer", peer, "--tokenizer", tokenizer, "--cases", str(path)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=work)
            lines: queue.Queue = queue.Queue()
            threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
            stderr: list[str] = []
            threading.Thread(target=lambda: stderr.extend(proc.stderr), daemon=True).start()
            started = False
            while len(records) < len(cases):
                try:
                    line = lines.get(timeout=timeout + (0 if started else 300))
                except queue.Empty:
                    line = "timeout"
                if line is None or line == "timeout":
                    proc.kill()
                    proc.wait()
                    if not started:
                        return {"not_run": f"{peer} did not start: {''.join(stderr)[-500:]}"}
                    why = f"timeout: no result within {timeout:.0f} s" if line else \
                        f"process died (exit {proc.returncode}): {''.join(stderr).strip()[-200:]}"
                    records.append({"file": cases[len(records)]["file"], "outcome": "crash", "error": why})
                    print(f"  {peer} {records[-1]['file']}: crash ({why})", file=sys.stderr, flush=True)
                    break
                got = json.loads(line)
                if "ready" in got:
                    started, info = True, info or got["ready"]
                    continue
                records.append(got)
            proc.kill()
            proc.wait()
    return {**info, "records": records}


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


def _share(s: dict) -> float:
    return s["passing"] / s["schemas"] if s["schemas"] else 0.0


TARGETS = [  # (what, test on greatgramma's summary and the peers' summaries)
    ("invalidation errors 0", lambda s, p: s["invalidation_error"] == 0),
    ("crashes 0", lambda s, p: s["crash"] == 0),
    ("validation errors <= 0.2% of schemas", lambda s, p: s["validation_error"] <= 0.002 * s["schemas"]),
    ("passing >= llguidance's share on the same files",
     lambda s, p: _share(s) >= _share(p["llguidance"]) if "llguidance" in p else None),
    ("TTFM p50 <= 20 ms", lambda s, p: (s["ttfm_ms"]["p50"] or 0) <= 20),
    ("TTFM p99 <= 1 s", lambda s, p: (s["ttfm_ms"]["p99"] or 0) <= 1000),
    ("TBM mean <= 0.1 ms", lambda s, p: (s["tbm_ms"]["mean"] or 0) <= 0.1),
    ("TBM p99 <= 1 ms", lambda s, p: (s["tbm_ms"]["p99"] or 0) <= 1),
]


def report(result: dict) -> str:
    """A short Markdown summary: each engine's counts and percentiles, greatgramma's targets, the schemas not passing."""
    engines = {"greatgramma": result["greatgramma"], **{k: v for k, v in result["peers"].items() if "summary" in v}}
    g = result["greatgramma"]["summary"]
    lines = [f"# MaskBench, {result['date']}: {g['schemas']} schemas (--limit {result['limit']}), tokenizer {result['tokenizer']}", "",
             f"Run serially on {result['machine']['processor']}, Python {result['machine']['python']}; load average "
             f"(1 min) {result['load_average']['start']} at the start, {result['load_average']['end']} at the end; "
             f"greatgramma's loops: {result['machine'].get('loops', 'not recorded')}.", "",
             "| engine | passing | compile error | validation error | invalidation error | crash | TTFM p50 ms | TTFM p99 ms | TBM mean ms | TBM p99 ms |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, e in engines.items():
        s = e["summary"]
        label = f"{name} {e.get('version', '')}".strip()
        lines.append(f"| {label} | " + " | ".join(str(s[o]) for o in OUTCOMES) +
                     f" | {s['ttfm_ms']['p50']} | {s['ttfm_ms']['p99']} | {s['tbm_ms']['mean']} | {s['tbm_ms']['p99']} |")
    for name, peer in result["peers"].items():
        if "summary" in peer:
            lines.append(f"\n{name}: `{peer['api']}`")
        else:
            lines.append(f"\n{name}: not run ({peer['not_run']})")
    peers = {k: v["summary"] for k, v in engines.items() if k != "greatgramma"}
    lines += ["", "greatgramma's targets:", "", "| target | |", "|---|---|"]
    verdict = {True: "met", False: "MISS", None: "not measured"}
    lines += [f"| {what} | {verdict[ok(g, peers)]} |" for what, ok in TARGETS]
    if result.get("instances_left_out"):
        lines += ["", "Instances left out for every engine (their label is about a value the serialization changed):", ""]
        lines += [f"- {d['file']} test {d['test']} (labelled {d['label']}): {d['why']}" for d in result["instances_left_out"]]
    if result.get("notes"):  # the causes, written after the run (--report --notes)
        lines += ["", result["notes"].rstrip()]
    by_file = {name: {r["file"]: r for r in e["schemas"]} for name, e in engines.items()}
    lines += ["", "## Every schema some engine does not pass", "",
              "| file | " + " | ".join(engines) + " | greatgramma's why |", "|---|" + "---|" * (len(engines) + 1)]
    for r in result["greatgramma"]["schemas"]:
        outs = [by_file[n].get(r["file"], {}).get("outcome", "-") for n in engines]
        if any(o != "passing" for o in outs):
            why = r.get("error", "").splitlines()[0][:160].replace("|", "/") if r.get("error") else ""
            lines.append(f"| {r['file']} | " + " | ".join(outs) + f" | {why} |")
    for name in peers:
        errs = [r for r in engines[name]["schemas"] if r["outcome"] != "passing"]
        lines += ["", f"### {name}'s errors, verbatim", "", "| file | outcome | error |", "|---|---|---|"]
        lines += [f"| {r['file']} | {r['outcome']} | {r.get('error', '').replace(chr(10), ' ')[:200].replace('|', '/')} |" for r in errs]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path, nargs="?", help="MaskBench's data folder (one JSON file per schema)")
    ap.add_argument("--limit", type=int, default=None, help="this many schemas, spread over the sorted files")
    ap.add_argument("--only", default=None, help="comma-separated file names (e.g. Github_easy---o28258.json): only these schemas")
    ap.add_argument("--tokenizer", default="llama3")
    ap.add_argument("--peers", default="llguidance,xgrammar", help="comma-separated; '' for none")
    ap.add_argument("--venvs", type=Path, default=ROOT / "eval" / ".venvs", help="the peers' venvs (<venvs>/<peer>/bin/python)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds a peer may take on one schema")
    ap.add_argument("--update-results", action="store_true", help="write eval/maskbench-<date>.json/.md (else eval/out/)")
    ap.add_argument("--report", type=Path, help="only write the Markdown summary of this result file (beside it)")
    ap.add_argument("--notes", type=Path, help="with --report: a Markdown file stored in the result and appended to the summary")
    args = ap.parse_args(argv)
    if args.report:
        result = json.loads(args.report.read_text(encoding="utf-8"))
        if args.notes:
            result["notes"] = args.notes.read_text(encoding="utf-8")
            args.report.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        args.report.with_suffix(".md").write_text(report(result), encoding="utf-8")
        return 0
    if args.data is None or not args.data.is_dir():
        print(f"maskbench: {args.data} is not a folder; get maskbench/data from "
              "https://github.com/guidance-ai/jsonschemabench", file=sys.stderr)
        return 2
    import greatgramma as gg
    from greatgramma import native
    from greatgramma.tokenize import load_tokenizer

    if native.ext is None:
        print("maskbench: greatgramma's compiled loops are missing (python setup.py build_ext --inplace); "
              "the numpy fallback is about 3x slower per mask", file=sys.stderr)
    load_start = os.getloadavg()[0]
    path = tokenizer_file(args.tokenizer)
    vocab, tok = gg.Vocabulary.from_file(path), load_tokenizer(path)
    gg.compile(gg.Grammar('start: "x"'), vocab)  # builds the vocabulary's shared token trie once
    engine = Greatgramma(vocab)
    files = sample(args.data, args.limit)
    if args.only:
        files = only(args.data, args.only)
    cases, texts, left_out = make_cases(files, tok, vocab)
    records = []
    for k, case in enumerate(cases):
        rec = explain(run_case(engine, case), case, texts[k])
        records.append(rec)
        print(f"[{k + 1}/{len(files)}] {case['file']}: {rec['outcome']} {rec.get('ttfm_ms', 0):.0f} ms {rec.get('error', '')[:120]}",
              file=sys.stderr, flush=True)
    peers = {}
    for name in filter(None, args.peers.split(",")):
        python = args.venvs / name / "bin" / "python"
        if not python.is_file():
            peers[name] = {"not_run": f"{python} is missing (bash eval/peers/setup.sh {name})"}
            continue
        print(f"{name}: {len(cases)} schemas", file=sys.stderr, flush=True)
        got = run_peer(python, name, args.tokenizer, cases, args.timeout)
        if "records" in got:
            recs = [explain(r, c, t) for r, c, t in zip(got.pop("records"), cases, texts)]
            got.update(summary=summarize(recs), schemas=[{k: v for k, v in r.items() if k != "tbm_ms"} for r in recs])
        peers[name] = got
    result = {
        "date": datetime.date.today().isoformat(),
        "machine": {"python": platform.python_version(), "processor": platform.processor() or platform.machine(),
                    "loops": "compiled (greatgramma._native)" if native.ext is not None else "numpy fallback (no greatgramma._native: "
                             "python setup.py build_ext --inplace)",
                    "cpus": os.cpu_count()},
        "load_average": {"start": round(load_start, 2), "end": round(os.getloadavg()[0], 2)},
        "data": str(args.data), "limit": args.limit, "tokenizer": args.tokenizer, "instances_left_out": left_out,
        "greatgramma": {"summary": summarize(records), "schemas": [{k: v for k, v in r.items() if k != "tbm_ms"} for r in records]},
        "peers": peers,
    }
    dest = ROOT / "eval" if args.update_results else OUT
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / f"maskbench-{result['date']}.json"
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(report(result), encoding="utf-8")
    print(report(result).split("## Every")[0])
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
