# The README's commands. No GPU is needed for `make smoke`, `make paper` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
JOBS ?= 2
GPU ?= nvidia-h200
RUN ?= run-$(shell date -u +%Y%m%dT%H%M%SZ)
GPUS ?= 1
LOCK ?= requirements/lock.txt
SUDO ?= $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
# Debian's TeX Live for latexmk, and poppler for the tests that read the PDF.
TEX_PACKAGES = latexmk texlive-latex-recommended texlive-fonts-recommended poppler-utils
# Debian's Slurm and MUNGE for tests/test_slurm.py, which starts a one-node SLURM cluster of its own.
SLURM_PACKAGES = slurm-wlm munge

.DEFAULT_GOAL := help
.PHONY: help smoke paper test report build measure compare tex slurm lock release clean

# The commands in the order a newcomer meets them; a documented target missing here is listed after them.
HELP_ORDER = smoke paper test measure compare report build tex slurm lock release help clean

## help: list the commands (the default)
help:
	@awk -v order="$(HELP_ORDER)" '/^## / { line = $$0; sub(/^## /, "", line); \
	  if (match(line, /^[a-z_-]+:/)) { t = substr(line, 1, RLENGTH - 1); seen[++n] = t; text[t] = line } \
	  else { sub(/^ +/, "      ", line); text[t] = text[t] "\n" line } } \
	  END { k = split(order, o, " "); for (i = 1; i <= k; i++) if (o[i] in text) { print text[o[i]]; done[o[i]] = 1 } \
	  for (i = 1; i <= n; i++) if (!(seen[i] in done)) print text[seen[i]] }' $(MAKEFILE_LIST)

# The environment: every version from the lock file, each wheel checked against its hash; then this package.
$(VENV)/.installed: $(LOCK) pyproject.toml
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "Python 3.11 or newer is needed (Snakemake 9)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --require-hashes -r $(LOCK)
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

## lock: write requirements/lock.txt again from pyproject.toml (uv pip compile, with hashes, PyPI alone)
lock: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet uv
	$(BIN)/python -m uv pip compile pyproject.toml --extra test --extra workflow --extra hf --universal --python-version 3.11 \
	  --generate-hashes --no-config --index-url https://pypi.org/simple -o $(LOCK)

## tex: latexmk and pdftotext: installed from Debian's packages where apt-get exists, else what to install is said
tex:
	@command -v latexmk >/dev/null && command -v pdftotext >/dev/null || { \
	  if command -v apt-get >/dev/null; then \
	    echo "make tex: installing Debian's $(TEX_PACKAGES) system-wide (apt-get$(if $(SUDO), through $(SUDO)))"; \
	    $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
	      --no-install-recommends $(TEX_PACKAGES) >/dev/null; \
	  else \
	    echo "The paper needs latexmk (with pdflatex and bibtex) and pdftotext (poppler). Install them:"; \
	    echo "  Fedora:  sudo dnf install latexmk texlive-scheme-medium poppler-utils"; \
	    echo "  macOS:   brew install --cask mactex-no-gui && brew install poppler"; \
	    echo "  conda:   conda install -c conda-forge texlive-core latexmk poppler"; \
	    exit 1; \
	  fi; }

## slurm: Slurm and MUNGE for the SLURM test: installed from Debian's packages where apt-get exists (system-wide;
##        said before), else what to install is said (the test then fails, naming what is missing)
slurm:
	@export PATH="$$PATH:/usr/sbin:/sbin"; \
	command -v sbatch >/dev/null && command -v slurmctld >/dev/null && command -v slurmd >/dev/null && \
	  command -v munged >/dev/null || { \
	  if command -v apt-get >/dev/null; then \
	    echo "make slurm: installing Debian's $(SLURM_PACKAGES) system-wide (apt-get$(if $(SUDO), through $(SUDO))) for \
	tests/test_slurm.py, which starts munged, slurmctld and slurmd of its own while it runs (and stops them by their \
	PIDs). Not wanted: make test SLURM=0 (the SLURM test is then skipped, saying so)"; \
	    $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
	      --no-install-recommends $(SLURM_PACKAGES) >/dev/null; \
	  else \
	    echo "tests/test_slurm.py starts a one-node SLURM cluster: it needs slurmctld, slurmd, sbatch and munged."; \
	    echo "  Fedora:  sudo dnf install slurm slurm-slurmctld slurm-slurmd munge"; \
	  fi; }

## smoke: kick the tires first (no GPU, no TeX; about 2 min on 2 cores): the kernel in Triton's interpreter against
##        a float64 reference, then through the pipeline's own rules the aggregate of the committed runs, the claims'
##        verdicts, one figure and one table (the build for sm_90 alone)
SMOKE_TARGETS = results/aggregate/claims.csv results/figures/stage_times.pdf results/tables/claims.tex
smoke: $(VENV)/.installed
	rm -rf results/smoke
	$(BIN)/python -m pipeline.seal verify-all data
	TRITON_INTERPRET=1 $(BIN)/python workflow/scripts/verify/verify.py --device cpu --N 77 --stages v7 \
	  --out results/smoke/verify
	$(BIN)/snakemake --profile profiles/cpu --configfile config/config.yaml config/smoke.yaml -- $(SMOKE_TARGETS)
	$(BIN)/python workflow/scripts/tools/smoke_check.py

## paper: results/paper.pdf from the committed data (build and verify on the CPU, no GPU); every sealed folder of
##        data/ is verified first, against its checksums and data/SEALS.csv, whatever Snakemake finds up to date
paper: $(VENV)/.installed tex
	$(BIN)/python -m pipeline.seal verify-all data
	$(BIN)/snakemake --profile profiles/cpu
	@echo "built results/paper.pdf"

## test: the whole test suite on the CPU, the pipeline end to end included. Installs what is missing first, saying
##       so: TeX (make tex) and Slurm with MUNGE (make slurm: system-wide, with apt-get; the SLURM test starts their
##       daemons). SLURM=0: neither installs Slurm nor runs the SLURM test, which is skipped, saying why
SLURM ?= 1
test: $(VENV)/.installed tex $(if $(filter 0,$(SLURM)),,slurm)
	$(if $(filter 0,$(SLURM)),FA2_SKIP_SLURM=1 )$(BIN)/python -m pytest -n $(JOBS) --dist loadfile -q tests

## compare: your run against the paper: make compare RUN=<run folder> (a sealed run folder, anywhere, or a name
##          under data/$(GPU)/). Writes results/compare/<run>/compare.md, .html and .csv: each headline time and
##          ratio, per-N figure and verdict, the paper's value, the run's, the committed runs' spread, within or
##          outside; fails, naming them, where verdicts flip
COMPARE_RUN = $(abspath $(if $(wildcard $(RUN)/SHA256SUMS),$(RUN),data/$(GPU)/$(RUN)))
COMPARE_OUT = results/compare/$(notdir $(COMPARE_RUN))
compare: $(VENV)/.installed
	@test "$(origin RUN)" != file || { echo "make compare RUN=<run folder>: name the sealed run folder to compare \
	(a path, or a run's name under data/$(GPU)/)"; exit 1; }
	@test -f "$(COMPARE_RUN)/SHA256SUMS" || { echo "make compare: $(RUN) is not a sealed run folder (no \
	SHA256SUMS in $(COMPARE_RUN))"; exit 1; }
	$(BIN)/snakemake --profile profiles/cpu $(COMPARE_OUT)/compare.md --config compare=$(COMPARE_RUN)
	@sed -n '/^## Summary/,/^## [^S]/p' $(COMPARE_OUT)/compare.md | grep '^|'
	@echo "compare: $(COMPARE_OUT)/compare.md (and .html, .csv)"
	@if [ -s $(COMPARE_OUT)/flips.txt ]; then echo "compare: verdict(s) flipped against the paper:"; \
	  sed 's/^/  /' $(COMPARE_OUT)/flips.txt; exit 1; fi; echo "compare: no verdict flipped"

## report: Snakemake's HTML report: the workflow, every figure with its caption, every table, the verdicts (after
##         `make paper`)
report: $(VENV)/.installed
	$(BIN)/snakemake --report results/report.html --cores 1

## build: compile every stage and variant for each architecture of config build.archs (the pipeline's build step)
build: $(VENV)/.installed
	$(BIN)/snakemake --profile profiles/cpu build_all

## measure: on a machine with GPUs, a new run into data/<gpu>/$(RUN), <gpu> detected (verify, bench, profile, ceilings, Qwen3 end
##          to end), spread over GPUS GPUs, then everything rebuilt from all runs. Uses $(PYTHON), which must hold
##          CUDA torch, triton 3.6.0 and this package: pip install -e '.[workflow,hf]'
# The run's folder data/<gpu>/: GPU= where given (make measure GPU=...), else the slug of the GPU detected here;
# the first GPU step (rule gpu_check) refuses a GPU= that is not the GPU detected, before anything is measured.
# config/config.yaml's cross-check waivers name the GPU of their runs (gpu: nvidia-h200): they apply to those runs
# alone, which then go to the paper's appendix of other GPUs.
MEASURE_GPU = $(if $(filter command line environment,$(origin GPU)),$(GPU),$(shell $(PYTHON) -m pipeline.gpu_env slug 2>/dev/null))
measure:
	@nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || { echo "make measure needs NVIDIA GPUs: nvidia-smi lists none \
	here (not installed, or no GPU). Nothing was written."; exit 1; }
	@$(PYTHON) -c "import kernels, snakemake, transformers" 2>/dev/null || { echo "make measure needs this package, \
	Snakemake and transformers in $(PYTHON) (the Python that holds CUDA torch): $(PYTHON) -m pip install -e \
	'.[workflow,hf]'"; exit 1; }
	@[ -n "$(MEASURE_GPU)" ] || { echo "make measure: the GPU model here could not be detected \
	(python -m pipeline.gpu_env slug); give it: make measure GPU=<slug>. Nothing was written."; exit 1; }
	$(PYTHON) -m snakemake --profile profiles/gpu --resources gpu=$(GPUS) --config measure=True run=$(RUN) \
	  gpu=$(MEASURE_GPU)

## release: tag v<version> (pyproject.toml) and write dist/ with its archive (the source, the built paper and the
##          HTML report) and SHA-256; refused on a dirty tree, or while CITATION.cff or .zenodo.json hold a
##          placeholder or another date than today's (workflow/scripts/tools/check_release.py)
RELEASE_BUILD ?= paper report
release:
	@test -z "$$(git status --porcelain)" || { echo "release: the tree has uncommitted changes (git status): commit \
	or stash them first, so that the archive is exactly the tagged commit"; exit 1; }
	@$(PYTHON) workflow/scripts/tools/check_release.py
	$(if $(strip $(RELEASE_BUILD)),$(MAKE) --no-print-directory $(RELEASE_BUILD))
	@test -s results/paper.pdf -a -s results/report.html || { echo "release: results/paper.pdf and \
	results/report.html are missing: make paper report"; exit 1; }
	@v=$$($(PYTHON) -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])'); \
	  name=fa2-triton-stages-$$v; \
	  git tag -a v$$v -m "fa2-triton-stages $$v" && mkdir -p dist && \
	  git archive --format=tar.gz --prefix=$$name/results/ --add-file=results/paper.pdf \
	    --add-file=results/report.html --prefix=$$name/ -o dist/$$name.tar.gz v$$v && \
	  (cd dist && sha256sum $$name.tar.gz > $$name.tar.gz.sha256) && \
	  echo "release: tagged v$$v; dist/$$name.tar.gz (the source, results/paper.pdf, results/report.html) and its \
	.sha256 (archive it on Zenodo: .zenodo.json)"

## clean: remove what the pipeline and the tests built (results/, logs/, benchmarks/, .snakemake/, .pytest_cache/);
##        data/ and .venv stay
clean:
	rm -rf results logs benchmarks .snakemake .pytest_cache
