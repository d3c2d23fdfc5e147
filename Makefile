# mqoe: every target builds the local virtual environment from the lock file first.
# Nothing else is needed on a fresh machine (Python >= 3.11 with venv, network to PyPI at install).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: venv demo test test-slow lint bench bench-env lock clean chromium docs goldens

venv: $(STAMP)

# setup.py compiles the hot kernel (src/mqoe/native.py lists it) with mypyc: a change to
# one of those sources rebuilds it (the tests refuse to run a stale build).
NATIVE_SOURCES := $(shell sed -n 's/^    "\(mqoe[a-z_.]*\)",$$/src\/\1.py/p' src/mqoe/native.py | sed 's/\./\//g; s/\/py$$/.py/')

$(STAMP): requirements.lock pyproject.toml setup.py src/mqoe/native.py $(NATIVE_SOURCES) \
  src/mqoe/engine/_draws.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --require-hashes -r requirements.lock
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

## The main job (see docs/reproductions/index.md): every reproduction (quick),
## then the HTML report demo-results/report.html (and, where Chromium is installed, its
## screenshot demo-results/report.png), then a few runs and a query.
demo: $(STAMP)
	$(BIN)/mqoe reproduce all --quick --out demo-results/reproductions
	$(BIN)/mqoe report demo-results/reproductions --output demo-results/report.html \
	  $(if $(CHROMIUM),--screenshot demo-results/report.png)
	$(BIN)/mqoe run frame-deadlines --profile nokia-1 --set hogs=0 --out demo-results
	$(BIN)/mqoe run frame-deadlines --profile nokia-1 --set hogs=4 --out demo-results
	$(BIN)/mqoe run frame-deadlines --profile nokia-1 --set hogs=4 rt_burst_mcycles=4 --out demo-results
	$(BIN)/mqoe results query --results demo-results \
	  "select profile, params->>'hogs' as hogs, params->>'rt_burst_mcycles' as rt_burst_mcycles, \
	   round(missed_deadline_rate, 3) as missed_deadline_rate, frames_due from runs order by 2, 3"
	@echo
	@echo "Open demo-results/report.html (every reproduction beside its published figures)."
	@echo "Try next: .venv/bin/mqoe analyze examples samples/   (then analyse each sample as it says)"
	@echo "          .venv/bin/mqoe run --list                   (scenarios and their parameters)"

## The test suite: unit, property and CLI tests, then lint, strict typing and the
## documentation site's strict build (a broken link or API reference fails it). The
## report's browser test screenshots its page into demo-results/ (kept by CI).
test: $(STAMP) chromium
	MQOE_REPORT_SCREENSHOT=demo-results/report-test-screenshot.png \
	  $(BIN)/python -m pytest -q -m "not slow"
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir $(DOCS_SITE)

## Regenerate every reproduction's golden --quick metrics (tests/golden/*.metrics.csv),
## deliberately: after a change meant to move results; say in the commit what moved and
## why. `make test` compares against them. `make goldens WORKS="netpis"` redoes some.
goldens: $(STAMP)
	$(BIN)/python tests/golden/regenerate.py $(WORKS)

## The documentation site (docs/, mkdocs.yml), served at http://127.0.0.1:8000 while you
## edit; `make test` builds it with --strict.
DOCS_SITE ?= /tmp/mqoe-site
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

## Debian's chromium for the report's browser test: in CI (CI=true) it is installed when
## missing (needs root); elsewhere the test skips without it.
CHROMIUM = $(shell command -v chromium 2>/dev/null)
chromium:
	@if [ "$${CI:-}" = "true" ] && ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" != 0 ]; then \
	    echo "make: CI needs Debian's chromium for the report test; run as root" >&2; exit 1; \
	  fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	fi

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

## The speed figures and the speed issue's goals (docs/development.md#make-bench). The
## ns-3 comparison runs when `make bench-env` has built .venv-bench; otherwise it is skipped.
bench: $(STAMP)
	$(BIN)/python bench/run.py

## The optional bench environment .venv-bench: the main venv's packages plus ns-3 from
## PyPI (bench/requirements-ns3.lock, hashed; its cppyy bindings build from source, so
## this needs a C++ compiler and takes a few minutes).
BENCH_VENV  := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed-stamp
bench-env: $(BENCH_STAMP)

$(BENCH_STAMP): requirements.lock bench/requirements-ns3.lock pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install --quiet --disable-pip-version-check --require-hashes \
	  -r requirements.lock -r bench/requirements-ns3.lock
	$(BENCH_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(BENCH_STAMP)

## Regenerate the lock file after editing dependencies in pyproject.toml.
lock:
	$(PYTHON) -m venv /tmp/mqoe-lockenv
	/tmp/mqoe-lockenv/bin/pip install --quiet pip-tools
	/tmp/mqoe-lockenv/bin/pip-compile -q --extra dev --generate-hashes --allow-unsafe \
	  --strip-extras -o requirements.lock pyproject.toml

clean:
	rm -rf $(VENV) demo-results .pytest_cache .mypy_cache .ruff_cache build .mypyc
	find src -name '*.so' -delete  # the compiled kernel (setup.py)
