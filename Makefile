# mqoe: every target builds the local virtual environment from the lock file first.
# Nothing else is needed on a fresh machine (Python >= 3.11 with venv, network to PyPI at install).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: venv demo test test-slow lint bench lock clean

venv: $(STAMP)

$(STAMP): requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --require-hashes -r requirements.lock
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

## The main job (grows with each reproduction; see README).
demo: $(STAMP)
	$(BIN)/mqoe reproduce all --quick --out demo-results/reproductions
	$(BIN)/mqoe run frame-deadlines --profile nokia-1 --set hogs=0 --out demo-results
	$(BIN)/mqoe run frame-deadlines --profile nokia-1 --set hogs=4 --out demo-results
	$(BIN)/mqoe run frame-deadlines --profile nokia-1 --set hogs=4 rt_burst_mcycles=4 --out demo-results
	$(BIN)/mqoe results query --results demo-results \
	  "select profile, params->>'hogs' as hogs, params->>'rt_burst_mcycles' as rt_burst_mcycles, \
	   round(missed_deadline_rate, 3) as missed_deadline_rate, frames_due from runs order by 2, 3"

## The test suite: unit, property and CLI tests, then lint and strict typing.
test: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/run.py

## Regenerate the lock file after editing dependencies in pyproject.toml.
lock:
	$(PYTHON) -m venv /tmp/mqoe-lockenv
	/tmp/mqoe-lockenv/bin/pip install --quiet pip-tools
	/tmp/mqoe-lockenv/bin/pip-compile -q --extra dev --generate-hashes --allow-unsafe \
	  --strip-extras -o requirements.lock pyproject.toml

clean:
	rm -rf $(VENV) demo-results .pytest_cache .mypy_cache .ruff_cache
