#!/bin/bash
# The sm_90 build (kernels.build: registers, blocks per SM, SASS counts) of some stages at another commit's kernel
# source, on the CPU, for comparing a source change's machine code with the current one's:
#
#   bash workflow/scripts/tools/build_at_commit.sh <commit> <out.csv> v2 v3 v4 v5
#
# The commit's kernels/ and pipeline/ are exported to a temporary folder (git archive) and built there with this
# checkout's Python and Triton; the build's CSV is kept, and beside it <out>.env.json: the commit built, the tools'
# versions and the machine (no GPU is used).
set -euo pipefail
COMMIT=$1 OUT=$2; shift 2
[ $# -gt 0 ] || { echo "name the stages to build after the commit and the output file" >&2; exit 2; }
PY=${PYTHON:-.venv/bin/python}
PY=$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")
SRC=$(mktemp -d) BUILD=$(mktemp -d)
trap 'rm -rf "$SRC" "$BUILD"' EXIT
git archive "$COMMIT" kernels pipeline pyproject.toml | tar x -C "$SRC"
(cd "$SRC" && env -u TRITON_INTERPRET PYTHONPATH="$SRC" "$PY" -m kernels.build --variants "$@" --archs 90 --out "$BUILD")
cp "$BUILD/build.csv" "$OUT"
"$PY" - "$COMMIT" "$(git rev-parse "$COMMIT")" > "${OUT%.csv}.env.json" <<'PY'
import json, platform, sys, datetime
import torch, triton
print(json.dumps({"commit_named": sys.argv[1], "commit": sys.argv[2], "python": platform.python_version(),
                  "triton": triton.__version__, "torch": torch.__version__, "machine": platform.machine(),
                  "system": platform.platform(), "cpus": __import__("os").cpu_count(),
                  "made_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}, indent=1))
PY
