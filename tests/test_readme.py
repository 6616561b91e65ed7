"""README.md keeps its promises: the headline table is the generated one, the example runs as
written, .ci/run runs the README's test command, and the README's first command works on a fresh
clone in a new virtual environment, with nothing beside the clone."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

MAIN_MARKER = "<!-- readme: main command"
TEST_MARKER = "<!-- readme: test command"
EXAMPLE_MARKER = "<!-- readme: example"


def fenced_block(text: str, marker: str, language: str) -> str:
    """The body of the first ```language block after the line starting with `marker`."""
    start = text.find(marker)
    assert start >= 0, f"README.md lacks the marker {marker!r}"
    match = re.compile(rf"^```{language}\n(.*?)^```$", re.S | re.M).search(text, start)
    assert match, f"no ```{language} block after {marker!r} in README.md"
    assert text[start:match.start()].count("\n") == 1, f"the ```{language} block must follow {marker!r} directly"
    return match.group(1)


def command(text: str, marker: str) -> str:
    lines = fenced_block(text, marker, "bash").strip().splitlines()
    assert len(lines) == 1, f"the command after {marker!r} must be one line, got {lines}"
    return lines[0]


def test_headline_table_is_the_generated_one():
    from eval import readme_table

    assert readme_table.current(README.read_text(encoding="utf-8")) == readme_table.render(), (
        "README.md's headline table is stale: run python -m eval.readme_table"
    )


@pytest.mark.real_tokenizers
def test_example_runs_verbatim(tmp_path):
    pytest.importorskip("tokenizers", reason="the example encodes text with the `tokenizers` package (pip install '.[test]')")
    code = fenced_block(README.read_text(encoding="utf-8"), EXAMPLE_MARKER, "python")
    script = tmp_path / "readme_example.py"
    script.write_text(code, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "11 tokens:" in out.stdout, out.stdout
    assert "," in out.stdout.splitlines()[-1], out.stdout  # the refusal names what was expected


def test_ci_runs_the_readme_test_command():
    test_command = command(README.read_text(encoding="utf-8"), TEST_MARKER)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    runs = [line.strip() for line in ci.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert test_command in runs, f".ci/run does not run the README's test command {test_command!r}"
    installs = [line for line in runs if "pip install" in line and line != test_command]
    assert not installs, f".ci/run installs something beside the README's test command: {installs}"


def test_readme_commands_name_files_in_the_repository():
    text = README.read_text(encoding="utf-8")
    for marker in (MAIN_MARKER,):
        for path in re.findall(r"(?:grammars|tokenizers)/\S+", command(text, marker)):
            assert (ROOT / path).is_file(), f"the README's command names {path}, which the repository lacks"


@pytest.mark.fresh_clone
def test_main_command_on_a_fresh_clone(tmp_path):
    """Clone the repository (its committed HEAD) into a folder with no ../shared, make a venv with
    `python -m venv`, and run the README's first command there verbatim with bash."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout of the repository to clone")
    clone = tmp_path / "clone"  # not "greatgramma": from tmp_path that name would shadow the package
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True, timeout=300)
    assert not (tmp_path / "shared").exists()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    main_command = command((clone / "README.md").read_text(encoding="utf-8"), MAIN_MARKER)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env.update(VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", PIP_RETRIES="1")
    out = subprocess.run(
        ["bash", "-c", main_command], cwd=clone, env=env, capture_output=True, text=True, timeout=900
    )
    assert out.returncode == 0, f"$ {main_command}\n{out.stdout}\n{out.stderr}"
    announced = re.search(r"^\s*artifact\s+(\S+) \(", out.stdout, re.M)
    assert announced, f"the command did not say where the artifact is:\n{out.stdout}"
    artifact = clone / announced.group(1)
    assert artifact.is_file(), f"announced {announced.group(1)}, but {artifact} does not exist"
    check = subprocess.run(
        [str(venv / "bin" / "python"), "-c", f"import greatgramma as gg; print(gg.load({str(artifact)!r}).vocab.vocab_size)"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert check.returncode == 0, check.stderr
    assert check.stdout.split() == ["128256"], check.stdout
