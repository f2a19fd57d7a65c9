# l4slab: two commands do everything on a fresh machine: `make demo` and `make test`.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.deps-stamp
export CARGO_TERM_COLOR ?= never

.PHONY: venv develop demo test test-rust test-py lint bench clean

# Virtualenv with the pinned dependencies (requirements.txt); reinstalled when the pins change.
$(STAMP): requirements.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements.txt
	touch $(STAMP)

venv: $(STAMP)

# Build the Rust extension (release) into the virtualenv together with the Python package.
develop: $(STAMP)
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH \
		$(VENV)/bin/maturin develop --release -q
	cargo build --release -q -p l4s-emu -p l4s-flow

demo: develop
	$(PY) -m l4slab.demo

test-rust:
	cargo test --workspace --release
	cargo clippy --workspace --all-targets --release -- -D warnings

test-py: develop
	$(VENV)/bin/ruff check python tests
	$(VENV)/bin/pytest

test: test-rust test-py

lint: $(STAMP)
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --release -- -D warnings
	$(VENV)/bin/ruff check python tests

# Speed is measured here, never in the tests: engine events/s (criterion), the 100x100-run
# validation workload, the Python path (one run, a 20-run sweep, DTW cells/s), and the emulator
# (forwarding rate, CPU per packet, lateness; root only).
bench: develop
	cargo bench -p l4s-sim
	cargo bench -p l4s-emu --bench path
	cargo run --release -q -p l4s-validate --example bench_groups -- 100 1900
	cargo run --release -q -p l4s-validate --example bench_groups -- 100 1900 190
	$(VENV)/bin/pytest tests/bench -o addopts="" --benchmark-only -s -q -p no:cacheprovider
	$(PY) crates/l4s-emu/benches/emu_bench.py

clean:
	cargo clean
	rm -rf $(VENV)
