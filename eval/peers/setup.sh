#!/usr/bin/env bash
# Create/update one virtual environment per peer under eval/.venvs/<peer> (never the project's
# environment), install the peer from PyPI, and record installed versions in eval/peers/versions.json.
# Idempotent: an existing venv is reused and pip only installs what is missing.
#
#   bash eval/peers/setup.sh                 # all peers
#   bash eval/peers/setup.sh llguidance xgrammar
#
# Pin a different peer version with e.g. XGRAMMAR_SPEC='xgrammar==0.2.8'. Outlines gets its llguidance extra:
# outlines 1.x alone has no CFG engine (its CFG path imports llguidance and fails without it).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
VENVS="$ROOT/eval/.venvs"
PY="${PYTHON:-python3}"
CONSTRAINTS="$HERE/constraints.txt"

SYNCODE_SPEC="${SYNCODE_SPEC:-syncode==0.4.16}"
LLGUIDANCE_SPEC="${LLGUIDANCE_SPEC:-llguidance==1.9.1}"
XGRAMMAR_SPEC="${XGRAMMAR_SPEC:-xgrammar==0.2.9}"
OUTLINES_SPEC="${OUTLINES_SPEC:-outlines[llguidance]==1.3.3}"

peers=("$@")
[ ${#peers[@]} -eq 0 ] && peers=(llguidance xgrammar outlines syncode)

# packages each peer venv gets; the runners need numpy/psutil-free stdlib only, plus a tokenizer loader.
specs_for() {
  case "$1" in
    syncode)    echo "$SYNCODE_SPEC" ;;
    llguidance) echo "$LLGUIDANCE_SPEC transformers tokenizers numpy" ;;
    xgrammar)   echo "$XGRAMMAR_SPEC transformers tokenizers numpy" ;;
    outlines)   echo "$OUTLINES_SPEC transformers tokenizers numpy" ;;
    *) echo "unknown peer $1" >&2; exit 2 ;;
  esac
}
needs_torch() { case "$1" in syncode|xgrammar|outlines) return 0 ;; *) return 1 ;; esac; }

mkdir -p "$VENVS"
for peer in "${peers[@]}"; do
  venv="$VENVS/$peer"
  log="$VENVS/$peer.setup.log"
  echo "== $peer -> $venv (log: $log)"
  [ -x "$venv/bin/python" ] || "$PY" -m venv "$venv"
  pip=("$venv/bin/python" -m pip install --disable-pip-version-check -c "$CONSTRAINTS")
  {
    if needs_torch "$peer"; then
      # The CPU wheel lies in /opt/wheels (pip's find-links via /etc/xdg/pip); never a CUDA build.
      "${pip[@]}" "torch==2.13.0"
      tv="$("$venv/bin/python" -c 'import torch; print(torch.__version__)')"
      case "$tv" in *+cpu) ;; *) echo "torch $tv is not the +cpu build" >&2; exit 1 ;; esac
    fi
    # shellcheck disable=SC2046
    "${pip[@]}" $(specs_for "$peer")
  } >"$log" 2>&1 || { echo "   FAILED installing $peer; last lines of $log:"; tail -20 "$log"; continue; }
  if "$venv/bin/python" -m pip list 2>/dev/null | grep -qiE '^nvidia-'; then
    echo "   WARNING: CUDA packages (nvidia-*) got into $venv:"; "$venv/bin/python" -m pip list | grep -iE '^nvidia-'
  fi
  echo "   ok"
done

# versions.json: for every venv that exists, the python and the installed packages of interest;
# the entries of peers whose venv is not on this machine are kept as they were (each with its date).
"$PY" - "$VENVS" "$HERE/versions.json" <<'PYEOF'
import json, subprocess, sys, time
from pathlib import Path
venvs, out = Path(sys.argv[1]), Path(sys.argv[2])
keep = {"syncode", "llguidance", "xgrammar", "outlines", "outlines-core", "outlines_core", "torch", "transformers",
        "tokenizers", "lark", "numpy", "interegular", "regex", "pydantic"}
old = json.loads(out.read_text()) if out.exists() else {"venvs": {}}
res = {"date": time.strftime("%Y-%m-%d"), "venvs": {}}
for name, entry in old.get("venvs", {}).items():  # kept unless measured again below
    res["venvs"][name] = {"date": entry.get("date", old.get("date")), **{k: v for k, v in entry.items() if k != "date"}}
for peer in ("syncode", "llguidance", "xgrammar", "outlines"):
    py = venvs / peer / "bin" / "python"
    if not py.exists():
        continue
    pyv = subprocess.run([str(py), "-c", "import platform; print(platform.python_version())"], capture_output=True, text=True).stdout.strip()
    lst = subprocess.run([str(py), "-m", "pip", "list", "--format=json", "--disable-pip-version-check"], capture_output=True, text=True).stdout
    pk = {p["name"].lower(): p["version"] for p in json.loads(lst or "[]")}
    res["venvs"][peer] = {"date": res["date"], "python": pyv, "packages": {k: v for k, v in sorted(pk.items()) if k in keep},
                          "cuda_packages": sorted(k for k in pk if k.startswith("nvidia-"))}
out.write_text(json.dumps(res, indent=2) + "\n")
print(f"wrote {out}")
PYEOF
