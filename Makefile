# Two commands: `make test` (the harness's own tests) and `make conformance` (the suite).
# Each creates .venv from constraints.txt when it is missing or out of date.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
CONFORMANCE_ARGS ?=

.PHONY: venv test conformance fuzz clean

venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e .
	@touch $(STAMP)

# worksteal: the fake-backend nights of tests/test_night.py sit next to each other, and xdist's
# default hands neighbouring tests to one worker.
test: $(STAMP)
	$(PY) -m pytest -n auto --dist worksteal tests $(PYTEST_ARGS)

conformance: $(STAMP)
	@mkdir -p reports
	$(PY) -m pytest -n auto conformance --junitxml=reports/conformance-junit.xml $(CONFORMANCE_ARGS)

fuzz: $(STAMP)
	$(PY) -m conformance fuzz --backend thunder --seconds 600 --workers auto --db .fuzz-db --report-dir reports/fuzz

clean:
	rm -rf reports/conformance reports/fuzz reports/*.xml .hypothesis
