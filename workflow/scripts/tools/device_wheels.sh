#!/bin/bash
# The wheels that run_parts.sh installs on a GPU machine that reaches no package registry (its $WHEELS): every
# package of requirements/lock.txt for CPython 3.12 on x86-64 Linux, less those the machine's image already holds
# (torch, triton, numpy, CUDA's and NVIDIA's libraries and torch's own dependencies) and those a measurement never
# imports there (the figures' matplotlib and seaborn, the tests' pytest and hypothesis, and pulp, which Snakemake's
# ILP scheduler alone imports: run_parts.sh runs the greedy one). A package with no wheel on PyPI (connection-pool)
# is built into one here. The wheels travel with the tree, whose limit on the lent machines is 64 MiB.
#
#   bash workflow/scripts/tools/device_wheels.sh [.whl]      # then: echo /.whl/ >> .git/info/exclude
set -eu
DEST=${1:-.whl}
LOCK=$(dirname "$0")/../../../requirements/lock.txt
SKIP='^(torch|triton|numpy|nvidia-.*|cuda-.*|setuptools|sympy|mpmath|networkx|jinja2|markupsafe|filelock|fsspec|typing-extensions|pillow|matplotlib|fonttools|kiwisolver|contourpy|seaborn|cycler|pyparsing|hypothesis|sortedcontainers|pytest|pytest-xdist|pluggy|iniconfig|execnet|pulp|colorama|pyreadline3)$'
PLAT="--platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64"
for n in 24 27 28 31 34 35; do PLAT="$PLAT --platform manylinux_2_${n}_x86_64"; done
mkdir -p "$DEST"
# name==version of each lock line, the markers for Python 3.12 kept (contourpy and networkx have two pins)
grep -E '^[A-Za-z0-9_.-]+==' "$LOCK" | sed 's/ \\$//' \
  | awk '/python_full_version < .3\.12/ {next} {sub(/ ;.*/, ""); print}' \
  | while read -r req; do
      name=${req%%==*}
      if [[ $name =~ $SKIP ]]; then continue; fi
      python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $PLAT \
        -d "$DEST" "$req" >/dev/null 2>&1 \
        || python3 -m pip wheel -q --no-deps -w "$DEST" "$req" >/dev/null \
        || { echo "no wheel for $req" >&2; exit 1; }
    done
echo "$(ls "$DEST"/*.whl | wc -l) wheels, $(du -sh "$DEST" | cut -f1) in $DEST"
