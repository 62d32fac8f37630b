# Two commands: `make test` (the harness's own tests) and `make conformance` (the suite).
# Each creates .venv from constraints.txt when it is missing or out of date.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
# THUNDER=<what pip installs>: run against that thunder instead of the pinned release, in a venv
# of its own (.venv-thunder, torch still from constraints.txt): a checkout, a tarball
# (../shared/upstream/lightning-thunder-1e22aac.tar.gz, thunder main of 2026-01-29) or
# git+https://github.com/Lightning-AI/lightning-thunder. Another THUNDER reinstalls thunder.
THUNDER ?=
ifeq ($(THUNDER),)
VENV := .venv
STAMP := $(VENV)/.installed
else
VENV := .venv-thunder
STAMP := $(VENV)/.installed-$(shell printf '%s' '$(THUNDER)' | sha1sum | cut -c1-12)
endif
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
CONFORMANCE_ARGS ?=

.PHONY: venv test conformance fuzz clean

venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e .
ifneq ($(THUNDER),)
	grep -v '^lightning-thunder' constraints.txt > $(VENV)/constraints-without-thunder.txt
	$(PY) -m pip install --quiet --force-reinstall --no-deps '$(THUNDER)'
	$(PY) -m pip install --quiet -c $(VENV)/constraints-without-thunder.txt '$(THUNDER)'
	@rm -f $(VENV)/.installed-*
endif
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
