# Two commands do all the set-up: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck pytest bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/memdir demo

test: $(STAMP) lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests bench scripts examples
	$(BIN)/ruff format --check src tests bench scripts examples

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest -q

# Benchmarks (not part of the tests): LoCoMo and RealMem retrieval beside their baselines, scale, stores,
# the dream's quality checks, then the edges (issue 12): secrets, the poisoning flagger,
# damaged databases, big files and the kill -9 campaign.
bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python bench/locomo.py
	$(BIN)/python bench/realmem.py
	$(BIN)/python bench/scale.py
	$(BIN)/python bench/bench_stores.py
	$(BIN)/python bench/dream.py
	$(BIN)/python bench/dream_pairs.py
	$(BIN)/python bench/dream_pairs.py --data bench/data/dream_pairs_fresh.json
	$(BIN)/python bench/secrets.py
	$(BIN)/python bench/poisoning.py
	$(BIN)/python bench/db_guard.py
	$(BIN)/python bench/big_files.py
	$(BIN)/python bench/crash.py

clean:
	rm -rf $(VENV) build dist .mypy_cache .pytest_cache .ruff_cache .hypothesis

# The references in docs/cli.md and docs/tools.md, and memdir/aio/surface.py (the async
# twin of Memory and its stores), generated from the code.
.PHONY: docs
docs: $(STAMP)
	$(BIN)/python scripts/cli_reference.py
	$(BIN)/python scripts/tools_reference.py
	$(BIN)/python scripts/async_surface.py
