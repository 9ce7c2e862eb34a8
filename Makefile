# The README's two commands: `make demo` (install, offline refresh, offers, a recommendation)
# and `make test`. Everything installs into .venv from pyproject.toml.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
DB     ?= var/gpuscout.duckdb
EXTRAS ?= dev,flows
# The probe extra's PyTorch here and in CI: the CPU wheel the machine keeps (an unpinned
# `torch` would resolve to a multi-GB CUDA build).
TORCH  ?= torch==2.13.0

.PHONY: install install-probe demo test lint typecheck bench clean

# -qq: errors only. The editable install maps folders onto gpuscout.* through an import hook,
# which setuptools announces with a notice on every install; the data files are package data
# (pyproject.toml), so nothing else is said unless it fails.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -qq --upgrade pip
	$(BIN)/python -m pip install -qq -e '.[$(EXTRAS)]'
	touch $@

install: $(VENV)/.installed

# `gpuscout probe` and its CPU test (tests/probe): PyTorch, transformers, peft
install-probe: install
	$(BIN)/python -m pip install --quiet -e '.[probe]' '$(TORCH)'

demo: install
	$(BIN)/gpuscout refresh --offline --db $(DB)
	$(BIN)/gpuscout offers --db $(DB) --min-vram 24 --limit 15
	$(BIN)/gpuscout recommend --db $(DB) --model meta-llama/Llama-3.1-8B --method qlora \
		--tokens 1e8 --limit 5 --explain

test: install
	$(BIN)/pytest

lint: install
	$(BIN)/ruff check .

# basedpyright on the installed package: the folders become gpuscout.* only when installed,
# so a copy is staged in var/typecheck (see README, Development).
typecheck: install
	rm -rf var/typecheck build
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation --no-compile \
		--target var/typecheck .
	$(BIN)/basedpyright

bench: install
	$(BIN)/python -m bench.load

# Every benchmark side by side with gpuhunt and SkyPilot (its own venvs) -> bench/RESULTS.md
.PHONY: bench-all
bench-all:
	$(PYTHON) -m bench

clean:
	rm -rf $(VENV) var .pytest_cache
