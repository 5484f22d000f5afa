# The README's commands. No GPU is needed for `make paper` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
JOBS ?= 2
GPU ?= nvidia-h200
RUN ?= run-$(shell date -u +%Y%m%dT%H%M%SZ)
GPUS ?= 1
SUDO ?= $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
# Debian's TeX Live for latexmk, and poppler for the tests that read the PDF.
TEX_PACKAGES = latexmk texlive-latex-recommended texlive-fonts-recommended poppler-utils

.PHONY: paper test report build measure tex clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[cpu,test,workflow]'
	touch $@

## tex: install TeX Live and poppler from Debian's packages if latexmk or pdftotext is missing
tex:
	@command -v latexmk >/dev/null && command -v pdftotext >/dev/null || \
	  { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
	    --no-install-recommends $(TEX_PACKAGES) >/dev/null; }

## paper: results/paper.pdf from the committed data (build and verify on the CPU, no GPU)
paper: $(VENV)/.installed tex
	$(BIN)/snakemake --profile profiles/cpu
	@echo "built results/paper.pdf"

## test: the whole test suite on the CPU, the pipeline end to end included
test: $(VENV)/.installed tex
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile -q tests

## report: Snakemake's HTML report with every figure (after `make paper`)
report: $(VENV)/.installed
	$(BIN)/snakemake --report results/report.html --cores 1

## build: compile every stage and variant for sm_90, sm_89 and sm_120 (the pipeline's build step)
build: $(VENV)/.installed
	$(BIN)/snakemake --profile profiles/cpu build_all

## measure: on a machine with GPUs, a new run into data/$(GPU)/$(RUN) (verify, bench, profile, ceilings), spread
##          over GPUS GPUs, then everything rebuilt from all runs. Uses $(PYTHON), which must hold CUDA torch,
##          triton 3.6.0 and this package: pip install -e '.[workflow]'
measure:
	@$(PYTHON) -c "import kernels, snakemake" 2>/dev/null || { echo "make measure needs this package and Snakemake \
	in $(PYTHON) (the Python that holds CUDA torch): $(PYTHON) -m pip install -e '.[workflow]'"; exit 1; }
	$(PYTHON) -m snakemake --profile profiles/gpu --resources gpu=$(GPUS) --config measure=True run=$(RUN)

clean:
	rm -rf results logs benchmarks .snakemake .pytest_cache
