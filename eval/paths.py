"""Where eval's data lives: the repository's benchmark grammars, tokenizers and programs; ../shared is optional."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH_GRAMMARS = ROOT / "grammars" / "bench"  # the paper's benchmark grammars (SynCode's, MIT)
PROGRAMS = ROOT / "eval" / "data" / "programs"  # the benchmark programs, one folder per language
TOKENIZERS = ROOT / "tokenizers"  # the real tokenizers the repository ships
OUT = ROOT / "eval" / "out"  # untracked output (gitignored)
SHARED = ROOT.parent / "shared"  # optional: only table1's check of the paper's text reads it
PROGRAM_SUFFIX = {"go": ".go", "java": ".java", "json": ".json", "python": ".py"}


def bench_grammar(name: str, root: Path = ROOT) -> Path:
    """A benchmark grammar of the checkout at ``root``: grammars/bench/<name>.lark, or
    grammars/<name>.lark in revisions from before the move (for eval.ab_compare)."""
    for path in (root / "grammars" / "bench" / f"{name}.lark", root / "grammars" / f"{name}.lark"):
        if path.is_file():
            return path
    raise FileNotFoundError(f"benchmark grammar {name!r} not found: {root / 'grammars' / 'bench' / f'{name}.lark'} is missing")


def tokenizer_file(name: str) -> Path:
    """A shipped tokenizer's tokenizer.json.gz (its folder also holds tokenizer_config.json)."""
    path = TOKENIZERS / name / "tokenizer.json.gz"
    if not path.is_file():
        raise FileNotFoundError(f"tokenizer {name!r} not found: {path} is missing")
    return path


def programs(language: str) -> list[Path]:
    """The benchmark programs of a language, sorted; an error naming the folder when there are none."""
    folder = PROGRAMS / language
    found = sorted(folder.glob(f"*{PROGRAM_SUFFIX[language]}"))
    if not found:
        raise FileNotFoundError(f"no {language} benchmark programs in {folder}")
    return found


def markdown_table(columns: list[str], rows: list[list[object]], align: str) -> str:
    """A Markdown table; ``align`` has one letter per column: l (left) or r (right)."""
    rule = "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"
    lines = ["| " + " | ".join(columns) + " |", rule] + ["| " + " | ".join(str(x) for x in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def write_results(checked_in: Path, update: bool, data: dict, table: str) -> Path:
    """Write ``data`` as JSON and ``table`` beside it (.md): over the checked-in file with
    ``update``, else under eval/out/; returns where the JSON went."""
    target = checked_in if update else OUT / checked_in.name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data, indent=1) + "\n")
    target.with_suffix(".md").write_text(table)
    return target
