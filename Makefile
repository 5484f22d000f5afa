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
.PHONY: help smoke paper test report build measure tex slurm lock release clean

## help: list the commands (the default)
help:
	@grep -hE '^##' $(MAKEFILE_LIST) | sed -e 's/^## //' -e 's/^   */      /'

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
	    $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
	      --no-install-recommends $(TEX_PACKAGES) >/dev/null; \
	  else \
	    echo "The paper needs latexmk (with pdflatex and bibtex) and pdftotext (poppler). Install them:"; \
	    echo "  Fedora:  sudo dnf install latexmk texlive-scheme-medium poppler-utils"; \
	    echo "  macOS:   brew install --cask mactex-no-gui && brew install poppler"; \
	    echo "  conda:   conda install -c conda-forge texlive-core latexmk poppler"; \
	    exit 1; \
	  fi; }

## slurm: Slurm and MUNGE for the SLURM test: installed from Debian's packages where apt-get exists, else what to
##        install is said (the test then fails, naming what is missing)
slurm:
	@export PATH="$$PATH:/usr/sbin:/sbin"; \
	command -v sbatch >/dev/null && command -v slurmctld >/dev/null && command -v slurmd >/dev/null && \
	  command -v munged >/dev/null || { \
	  if command -v apt-get >/dev/null; then \
	    $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
	      --no-install-recommends $(SLURM_PACKAGES) >/dev/null; \
	  else \
	    echo "tests/test_slurm.py starts a one-node SLURM cluster: it needs slurmctld, slurmd, sbatch and munged."; \
	    echo "  Fedora:  sudo dnf install slurm slurm-slurmctld slurm-slurmd munge"; \
	  fi; }

## smoke: kick the tires in about two minutes: build v7 for sm_90, verify it in the interpreter, the paper from data
smoke: $(VENV)/.installed tex
	env -u TRITON_INTERPRET $(BIN)/python -m kernels.build --variants v7 --archs 90 --out results/smoke/build
	TRITON_INTERPRET=1 $(BIN)/python workflow/scripts/verify/verify.py --device cpu --N 77 --stages v7 --out results/smoke/verify
	$(BIN)/python -m pipeline.seal verify-all data
	$(BIN)/snakemake --profile profiles/cpu
	@echo "smoke: built v7 for sm_90, verified it on the CPU, built results/paper.pdf from the committed data"

## paper: results/paper.pdf from the committed data (build and verify on the CPU, no GPU); every sealed folder of
##        data/ is verified first, against its checksums and data/SEALS.csv, whatever Snakemake finds up to date
paper: $(VENV)/.installed tex
	$(BIN)/python -m pipeline.seal verify-all data
	$(BIN)/snakemake --profile profiles/cpu
	@echo "built results/paper.pdf"

## test: the whole test suite on the CPU, the pipeline end to end included
test: $(VENV)/.installed tex slurm
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile -q tests

## report: Snakemake's HTML report with every figure (after `make paper`)
report: $(VENV)/.installed
	$(BIN)/snakemake --report results/report.html --cores 1

## build: compile every stage and variant for each architecture of config build.archs (the pipeline's build step)
build: $(VENV)/.installed
	$(BIN)/snakemake --profile profiles/cpu build_all

## measure: on a machine with GPUs, a new run into data/$(GPU)/$(RUN) (verify, bench, profile, ceilings, Qwen3 end
##          to end), spread over GPUS GPUs, then everything rebuilt from all runs. Uses $(PYTHON), which must hold
##          CUDA torch, triton 3.6.0 and this package: pip install -e '.[workflow,hf]'
measure:
	@nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || { echo "make measure needs NVIDIA GPUs: nvidia-smi lists none \
	here (not installed, or no GPU). Nothing was written."; exit 1; }
	@$(PYTHON) -c "import kernels, snakemake, transformers" 2>/dev/null || { echo "make measure needs this package, \
	Snakemake and transformers in $(PYTHON) (the Python that holds CUDA torch): $(PYTHON) -m pip install -e \
	'.[workflow,hf]'"; exit 1; }
	$(PYTHON) -m snakemake --profile profiles/gpu --resources gpu=$(GPUS) --config measure=True run=$(RUN)

## release: tag v<version> (pyproject.toml) and write dist/ with its source archive and SHA-256; a dirty tree is refused
release:
	@test -z "$$(git status --porcelain)" || { echo "release: the tree has uncommitted changes (git status): commit \
	or stash them first, so that the archive is exactly the tagged commit"; exit 1; }
	@v=$$($(PYTHON) -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])'); \
	  name=fa2-triton-stages-$$v; \
	  git tag -a v$$v -m "fa2-triton-stages $$v" && mkdir -p dist && \
	  git archive --format=tar.gz --prefix=$$name/ -o dist/$$name.tar.gz v$$v && \
	  (cd dist && sha256sum $$name.tar.gz > $$name.tar.gz.sha256) && \
	  echo "release: tagged v$$v; dist/$$name.tar.gz and its .sha256 (archive it on Zenodo: .zenodo.json)"

clean:
	rm -rf results logs benchmarks .snakemake .pytest_cache
