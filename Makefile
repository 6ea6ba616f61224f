# Two commands do all the set-up on a fresh machine:
#   make demo  - create .venv if missing, install pb-gym, run the main job
#   make test  - install pb-gym with the test extras (and Debian's chromium when missing, for the lab's browser
#                tests), run the lint and type gates and the docs build, then the test suite
#   make docs  - build the documentation site (strict) and serve it on http://127.0.0.1:8000
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --disable-pip-version-check -c constraints.txt

.PHONY: demo test test-slow lint docs bench clean chromium

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.core: pyproject.toml constraints.txt | $(PY)
	$(PIP) -e ".[studies]"
	touch $@

$(VENV)/.test: pyproject.toml constraints.txt | $(PY)
	$(PIP) -e ".[studies,rl,zoo,torchrl,dask,docs,dev,lab,notebook]"
	touch $@ $(VENV)/.core $(VENV)/.docs

$(VENV)/.docs: pyproject.toml constraints.txt | $(PY)
	$(PIP) -e ".[studies,docs]"
	touch $@

# the main job: every classic betting system against the exact house edge (report, CSV, plots in out/);
# then it says what the README's quick start needs next: .venv activated, and the rl extra for its
# `pb-gym train`
demo: $(VENV)/.core
	$(VENV)/bin/pb-gym odds --decks 8
	$(VENV)/bin/pb-gym evaluate configs/systems/classic.yaml --out out/classic
	@echo "next: . $(VENV)/bin/activate (pb-gym and python from $(VENV)), then the README's quick start;"
	@echo "      pb-gym train needs the rl extra: pip install -e '.[rl]' -c constraints.txt"

# the lab's browser tests (tests/experiments/lab/test_lab_browser.py) drive Debian's Chromium through Playwright (the dev
# extra); Playwright's own browser download is not used
chromium:
	@test -x /usr/bin/chromium || { apt-get update -qq && apt-get install -y -qq chromium; }

test: $(VENV)/.test chromium lint
	$(PY) -m pytest -m "not slow"

test-slow: $(VENV)/.test chromium
	$(PY) -m pytest

# the style and type checks: ruff (rules and formatter) on the whole repository, mypy on the core and the
# agents, the import contracts (all configured in pyproject.toml);
# the docs site built strictly (a broken link, a page missing from the nav or an unresolved API reference
# fails), into site/ (ignored by git)
lint: $(VENV)/.test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mkdocs build --strict --quiet --site-dir site

# the documentation site: built strictly, then served with live reload (Ctrl-C stops it)
docs: $(VENV)/.docs
	$(VENV)/bin/mkdocs build --strict --site-dir site
	$(VENV)/bin/mkdocs serve

bench: $(VENV)/.core
	$(VENV)/bin/pb-gym bench

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache .ruff_cache .mypy_cache .import_linter_cache
