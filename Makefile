# The README's commands. `make test` runs every test on the CPU (no GPU needed).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
JOBS ?= 2
GPU ?= nvidia-h200
RUN ?= run-$(shell date -u +%Y%m%dT%H%M%SZ)
GPUS ?= 1

.PHONY: test build measure clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[cpu,test]'
	touch $@

## test: the whole test suite on the CPU (kernels in Triton's interpreter, the build step for sm_90/sm_89/sm_120)
test: $(VENV)/.installed
	$(BIN)/python -m pytest -n $(JOBS) -q tests

## build: compile every stage for sm_90, sm_89 and sm_120 and write the static report to results/build
build: $(VENV)/.installed
	$(BIN)/python -m kernels.build --variants all --archs 90 89 120 --out results/build

## measure: on a machine with GPUs, measure into data/$(GPU)/$(RUN) (verify, bench, profile, ceilings),
##          then rebuild everything from all runs. RUN must be new; GPUS = how many GPUs to spread over.
##          Runs under $(PYTHON), which must hold CUDA torch, triton 3.6.0 and `pip install -e '.[workflow]'`.
measure:
	$(PYTHON) -m snakemake --profile profiles/gpu --resources gpu=$(GPUS) --config measure=True run=$(RUN)

clean:
	rm -rf results .pytest_cache
