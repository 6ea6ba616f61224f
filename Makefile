# Two commands do all the set-up on a fresh machine:
#   make demo  - create .venv if missing, install pb-gym, run the main job
#   make test  - install pb-gym with the test extras, run the lint and type gates, then the test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --disable-pip-version-check -c constraints.txt

.PHONY: demo test test-slow lint bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.core: pyproject.toml constraints.txt | $(PY)
	$(PIP) -e ".[studies]"
	touch $@

$(VENV)/.test: pyproject.toml constraints.txt | $(PY)
	$(PIP) -e ".[studies,rl,zoo,dask,dev]"
	touch $@ $(VENV)/.core

# the main job: every classic betting system against the exact house edge (report, CSV, plots in out/)
demo: $(VENV)/.core
	$(VENV)/bin/pb-gym odds --decks 8
	$(VENV)/bin/pb-gym evaluate configs/systems/classic.yaml --out out/classic

test: $(VENV)/.test lint
	$(PY) -m pytest -m "not slow"

test-slow: $(VENV)/.test
	$(PY) -m pytest

# the style and type checks: ruff on the whole repository, mypy on the core (configured in pyproject.toml)
lint: $(VENV)/.test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

bench: $(VENV)/.core
	$(VENV)/bin/pb-gym bench

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .mypy_cache .import_linter_cache
