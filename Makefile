# The README's commands. `make test` runs every test on the CPU (no GPU needed).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
JOBS ?= 2
GPU ?= nvidia-h200

.PHONY: test build verify-gpu measure aggregate clean

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

## verify-gpu: the correctness grid on the local GPU (uses the python3 that holds CUDA torch and triton)
verify-gpu:
	$(PYTHON) workflow/scripts/verify.py --out data/$(GPU)/verify

## measure: the whole GPU measurement (timings, Nsight Compute) into a new folder data/$(GPU)/run-<time>
measure:
	$(PYTHON) workflow/scripts/measure.py --gpu-dir data/$(GPU)

## aggregate: every sealed run of data/$(GPU) (checksums verified) into results/aggregate
aggregate: $(VENV)/.installed
	$(BIN)/python workflow/scripts/aggregate.py --gpu-dir data/$(GPU) --out results/aggregate

clean:
	rm -rf results .pytest_cache
