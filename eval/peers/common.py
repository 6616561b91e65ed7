"""What every peer runner shares (standard library only: it runs inside each peer's own venv).

A runner defines a `Peer` subclass and calls `main(PeerClass)`. `main` parses
`--grammar {go,java,json,python} --tokenizer {llama2,llama3,qwen3} [--variant NAME]`, makes a
throwaway local tokenizer directory (tokenizer.json unzipped + tokenizer_config.json, no hub:
HF_HUB_OFFLINE=1) and fresh cache directories, times `Peer.preprocess()` (cold: this is a fresh
process), then walks every benchmark program token by token with the ids cached by
`eval/peers/encode_programs.py` (the project's exact tokenization): every mask call is timed (the
first, cold ones included, and one more after the last token, for EOS), a program token the mask
refuses counts as a violation and the walk goes on with the program's token (see `Peer.advance`).
It prints ONE JSON line (schema in eval/peers/README.md), also when the peer fails.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT))  # eval.paths (standard library only) from a peer's venv, run as a script
from eval.paths import bench_grammar, tokenizer_file  # noqa: E402

CACHE = ROOT / "eval" / "out" / "peers" / "tokens"
GRAMMARS = ("go", "java", "json", "python")
TOKENIZERS = ("llama2", "llama3", "qwen3")
ERROR_CHARS = 500
MAX_VIOLATION_DETAILS = 25


class BudgetExceeded(Exception):
    """The --budget ran out before any mask was measured."""


class Unsupported(Exception):
    """The peer cannot take this grammar (its own words go in the message)."""


class Peer:
    """One tool. Subclasses fill in the methods; `self.args`, `self.tok_dir`, `self.grammar_text` are set."""

    tool = "?"
    api = ""  # the calls used, for the record

    def version(self) -> str:
        raise NotImplementedError

    def load(self) -> None:
        """Import the tool (not timed as preprocessing, like core_bench imports greatgramma first)."""

    def preprocess(self) -> dict:
        """Load the tokenizer and compile the grammar (timed as a whole). Returns stage timings (s)."""
        raise NotImplementedError

    def start(self) -> None:
        """A fresh matcher at the start of a program (not timed)."""
        raise NotImplementedError

    def before_mask(self) -> None:
        """Untimed preparation of a mask call (e.g. the input tensors a generation loop already has)."""

    def mask(self):
        """Compute the next-token mask (timed)."""
        raise NotImplementedError

    def allowed(self, mask, token: int) -> bool:
        raise NotImplementedError

    def advance(self, token: int, allowed: bool) -> bool:
        """Move on with the program's token; False if the tool could not take it (its state stays)."""
        raise NotImplementedError

    def eos_ids(self) -> list[int]:
        """The EOS ids the tool itself uses (default: the tokenizer's, from the token cache)."""
        return list(self.cache["eos_token_ids"])

    def extra(self) -> dict:
        """Anything else worth recording (variant, notes)."""
        return {}

    def verdict(self) -> tuple[str, str] | None:
        """(status, error) overriding "ok" after the walk, e.g. a grammar the tool took silently but refused."""
        return None


def _hex_repr(h: str) -> str:
    b = bytes.fromhex(h)
    try:
        return repr(b.decode("utf-8"))
    except UnicodeDecodeError:
        return repr(b)


def percentile(sorted_xs: list[float], q: float) -> float:
    """numpy's default (linear) percentile of an already sorted list."""
    if not sorted_xs:
        return float("nan")
    pos = (len(sorted_xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def make_tokenizer_dir(tokenizer: str, into: Path) -> Path:
    src = tokenizer_file(tokenizer).parent
    d = into / tokenizer
    d.mkdir(parents=True, exist_ok=True)
    (d / "tokenizer.json").write_bytes(gzip.decompress((src / "tokenizer.json.gz").read_bytes()))
    shutil.copy(src / "tokenizer_config.json", d / "tokenizer_config.json")
    return d


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(peer_cls: type[Peer]) -> None:
    ap = argparse.ArgumentParser(description=peer_cls.__doc__)
    ap.add_argument("--grammar", required=True, choices=GRAMMARS)
    ap.add_argument("--tokenizer", required=True, choices=TOKENIZERS)
    ap.add_argument("--variant", default=None, help="a peer-specific modified variant (see the runner)")
    ap.add_argument("--cache", default=str(CACHE), help="folder of <tokenizer>.json token caches")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds from start; past it the walk stops and the partial figures are reported "
                         "with status 'timeout' (run_all sets it a little under its own timeout)")
    args = ap.parse_args()

    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix=f"peer-{peer_cls.tool}-"))
    # Cold and offline: fresh caches in a temp dir, no model hub.
    for k, v in {
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
        "HF_HOME": str(work / "hf"), "XDG_CACHE_HOME": str(work / "cache"),
        "OUTLINES_CACHE_DIR": str(work / "outlines"), "TOKENIZERS_PARALLELISM": "false",
        "SYNCODE_CACHE": str(work / "syncode") + "/", "HF_CACHE": str(work / "hf") + "/",
        "TORCHINDUCTOR_CACHE_DIR": str(work / "inductor"), "TRITON_CACHE_DIR": str(work / "triton"),
    }.items():
        os.environ[k] = v

    res: dict = {
        "tool": peer_cls.tool, "version": None, "variant": args.variant, "grammar": args.grammar,
        "tokenizer": args.tokenizer, "status": "error", "error": None,
        "preprocess_s": None, "stages_s": {}, "masks": 0,
        "mask_mean_ms": None, "mask_median_ms": None, "mask_p99_ms": None, "mask_max_ms": None,
        "violations": None, "violating_programs": None, "tokens": None, "skipped": None, "eos_ok": None, "eos_ok_programs": None,
        "violation_details": [], "peak_rss_mib": None, "api": peer_cls.api,
        "python": platform.python_version(), "date": time.strftime("%Y-%m-%d"),
    }
    peer = peer_cls()
    stage = "setup"
    try:
        stage = "version"
        res["version"] = peer.version()
        peer.args = args
        peer.work = work
        stage = "token cache"
        cache_file = Path(args.cache) / f"{args.tokenizer}.json"
        if not cache_file.is_file():
            raise FileNotFoundError(f"{cache_file} missing: run `python -m eval.peers.encode_programs` in the project's python")
        peer.cache = json.loads(cache_file.read_text())
        programs = peer.cache["programs"][args.grammar]
        peer.tok_dir = make_tokenizer_dir(args.tokenizer, work / "tok")
        peer.grammar_path = bench_grammar(args.grammar)
        peer.grammar_text = peer.grammar_path.read_text(encoding="utf-8")

        stage = "import"
        t0 = time.perf_counter()
        peer.load()
        res["import_s"] = time.perf_counter() - t0
        stage = "preprocess"
        t0 = time.perf_counter()
        res["stages_s"] = peer.preprocess() or {}
        # a stage named "not_counted" (e.g. building a stand-in model) is left out of preprocess_s
        res["preprocess_s"] = time.perf_counter() - t0 - res["stages_s"].get("not_counted", 0.0)

        stage = "walk"
        times: list[float] = []
        violations = skipped = ntok = runs = 0
        details = []
        eos_ok = []
        bad_programs = set()
        eos = peer.eos_ids()
        total = sum(len(p["ids"]) + 1 for p in programs)
        stopped = None
        for prog in programs:
            if stopped:
                break
            peer.start()
            prev_ok = True
            for i, tok in enumerate(prog["ids"]):
                if args.budget is not None and time.perf_counter() - started > args.budget:
                    stopped = (f"walk stopped at the {args.budget:.0f} s budget after {len(times)} of {total} masks "
                               f"(program {prog['name']}, token {i}); figures are for the masks measured")
                    break
                peer.before_mask()
                t = time.perf_counter()
                m = peer.mask()
                times.append(time.perf_counter() - t)
                ok = peer.allowed(m, tok)
                if not ok:
                    violations += 1
                    runs += prev_ok  # a new run of consecutive refusals starts here
                    bad_programs.add(prog["name"])
                    if len(details) < MAX_VIOLATION_DETAILS:
                        details.append({"program": prog["name"], "index": i, "token_id": tok,
                                        "token": _hex_repr(prog["hex"][i])})
                prev_ok = ok
                if not peer.advance(tok, ok):
                    skipped += 1
                ntok += 1
            if stopped:
                break
            peer.before_mask()
            t = time.perf_counter()
            m = peer.mask()
            times.append(time.perf_counter() - t)
            eos_ok.append(any(peer.allowed(m, e) for e in eos))
        if not times:
            raise BudgetExceeded(stopped or "no mask measured")
        ms = sorted(x * 1000 for x in times)
        res.update({
            "masks": len(ms), "tokens": ntok,
            "mask_mean_ms": sum(ms) / len(ms), "mask_median_ms": percentile(ms, 50),
            "mask_p99_ms": percentile(ms, 99), "mask_max_ms": ms[-1],
            "violations": violations, "violating_programs": len(bad_programs),
            "violation_runs": runs, "skipped": skipped, "violation_details": details,
            "eos_ok": all(eos_ok) if eos_ok else None, "eos_ok_programs": eos_ok, "status": "ok",
            "masks_planned": total,
        })
        if stopped:
            res.update({"status": "timeout", "error": stopped, "partial": True})
        override = peer.verdict()
        if override:
            res["status"], res["error"] = override[0], override[1][:ERROR_CHARS]
    except BudgetExceeded as exc:
        res["status"] = "timeout"
        res["error"] = f"[{stage}] {exc}"[:ERROR_CHARS]
    except Unsupported as exc:
        res["status"] = "unsupported"
        res["error"] = f"[{stage}] {exc}"[:ERROR_CHARS]
    except BaseException as exc:  # noqa: BLE001 - every failure is a result
        res["status"] = "error"
        msg = f"[{stage}] {type(exc).__name__}: {exc}"
        res["error"] = msg[:ERROR_CHARS]
        res["traceback_tail"] = traceback.format_exc()[-1500:]
    finally:
        try:
            res.update(peer.extra())
        except Exception:  # noqa: BLE001
            pass
        res["peak_rss_mib"] = peak_rss_mib()
        shutil.rmtree(work, ignore_errors=True)
    sys.stdout.flush()
    print(json.dumps(res), flush=True)


def strip_priorities(lark_text: str) -> str:
    """A MODIFIED grammar ("stripped" variant): Lark priorities dropped (`NAME.2:` -> `NAME:`,
    `rule.3:` -> `rule:`) and the tree-shaping rule prefixes `!` / `?` dropped (`!?rule:` -> `rule:`).
    The prefixes do not change the language; the priorities do change how Lark's lexer breaks ties."""
    import re

    return re.sub(r"(?m)^(\s*)[!?]*([A-Za-z_][A-Za-z_0-9]*)\s*(?:\.\s*-?\d+)?(\s*:)", r"\1\2\3", lark_text)
