# l4slab: two commands do everything on a fresh machine: `make demo` and `make test`.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.deps-stamp
export CARGO_TERM_COLOR ?= never

.PHONY: venv develop demo test test-rust test-py lint bench bench-scale bench-ns3 bench-ns3-wifi clean crosscheck-grid mutants

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

# The kernel-against-model agreement grid of FIDELITY.md (root; not in CI: ~40 min at n = 2).
# GRID_ARGS narrows it, e.g. GRID_ARGS="--regime 12M20ms -n 3".
GRID_OUT ?= results/crosscheck-grid
crosscheck-grid: develop
	$(PY) tools/crosscheck_grid.py $(GRID_OUT) $(GRID_ARGS)

# Speed is measured here, never in the tests: engine events/s (criterion), the 100x100-run
# validation workload, the Python path (one run, a 20-run sweep, DTW cells/s), and the emulator
# (forwarding rate, CPU per packet, lateness; root only).
bench: develop
	cargo bench -p l4s-sim
	cargo bench -p l4s-emu --bench path
	cargo test --release -q -p l4s-flow --test dualpi2_relay -- --ignored
	cargo run --release -q -p l4s-validate --example bench_groups -- 100 1900
	cargo run --release -q -p l4s-validate --example bench_groups -- 100 1900 190
	$(VENV)/bin/pytest tests/bench -o addopts="" --benchmark-only -s -q -p no:cacheprovider
	$(PY) crates/l4s-emu/benches/emu_bench.py
	$(MAKE) bench-scale
	cargo run --release -q -p l4s-sim --example bench_workload
	$(PY) tests/bench/front_memory.py
	$(PY) tests/bench/sweep_memory.py

# Scale table for BENCHMARKS.md: ns per bottleneck packet and peak RSS, 1..10 000 flows and
# 10 Mb/s..10 Gb/s, then the 900-run study (each configuration in its own process).
bench-scale:
	cargo run --release -q -p l4s-sim --example bench_scale

# l4slab against ns-3 on the same dumbbell; not part of `make test`. Default: Debian's ns-3 3.37
# (installed if missing). NS3_BUILD=/path/to/ns-3/build: a source-built ns-3 instead (its include/
# and lib/libns3.VERSION-MODULE-PROFILE.so, the `optimized` profile preferred), linked with an rpath;
# BENCHMARKS.md says how the optimized 3.48 there was configured.
NS3_REPS ?= 3
NS3_MODULES := core network internet point-to-point applications traffic-control
ifdef NS3_BUILD
NS3_CORE_LIB := $(notdir $(firstword $(wildcard $(NS3_BUILD)/lib/libns3.*-core-optimized.so) \
	$(wildcard $(NS3_BUILD)/lib/libns3.*-core*.so)))
# Named after the ns-3 tree and its version-profile, so builds of several trees sit side by side.
NS3_DUMBBELL := target/ns3/dumbbell-$(notdir $(patsubst %/,%,$(dir $(abspath $(NS3_BUILD)))))-3.$(basename \
	$(subst libns3.,,$(subst -core,,$(NS3_CORE_LIB))))
NS3_FLAGS := -O3 -march=native -std=c++23 -DNDEBUG -I$(NS3_BUILD)/include -L$(NS3_BUILD)/lib \
	$(foreach m,$(NS3_MODULES),-l:$(subst -core,-$(m),$(NS3_CORE_LIB))) -Wl,-rpath,$(NS3_BUILD)/lib
else
NS3_DUMBBELL := target/ns3/dumbbell
NS3_FLAGS = -O2 -std=c++17 $$(pkg-config --cflags ns3-core) $(addprefix -lns3-,$(NS3_MODULES))
endif
# NS3_BUILD's core library is there, or Debian's ns-3 (with its wifi module) is installed.
ifdef NS3_BUILD
ns3_check = @test -n "$(NS3_CORE_LIB)" || \
	(echo "NS3_BUILD=$(NS3_BUILD): no lib/libns3.*-core*.so there (give ns-3's build/ directory)" >&2; exit 1)
else
ns3_check = test -e /usr/include/ns3/wifi-module.h || \
	(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q ns3 libns3-dev)
endif
bench-ns3:
	$(ns3_check)
	cargo build --release -q -p l4s-sim --bin l4s-sim
	mkdir -p target/ns3
	g++ -o $(NS3_DUMBBELL) crates/l4s-sim/benches/ns3/dumbbell.cc $(NS3_FLAGS)
	python3 crates/l4s-sim/benches/ns3/compare.py target/release/l4s-sim $(NS3_DUMBBELL) $(NS3_REPS)

# l4slab's Wi-Fi hop against ns-3's wifi module (docs/WIFI.md, "Against ns-3's wifi module"); not
# part of `make test`. Same ns-3 choice as bench-ns3 (Debian's 3.37 or NS3_BUILD); NS3_WIFI_SEEDS
# seeds per configuration (16 configurations, ~10 s of CPU each per seed for ns-3).
NS3_WIFI_SEEDS ?= 1
NS3_WIFI_MODULES := $(NS3_MODULES) wifi mobility
ifdef NS3_BUILD
NS3_WIFI := $(subst dumbbell-,wifi-,$(NS3_DUMBBELL))
NS3_WIFI_FLAGS := -O3 -march=native -std=c++23 -DNDEBUG -I$(NS3_BUILD)/include -L$(NS3_BUILD)/lib \
	$(foreach m,$(NS3_WIFI_MODULES),-l:$(subst -core,-$(m),$(NS3_CORE_LIB))) -Wl,-rpath,$(NS3_BUILD)/lib
else
NS3_WIFI := target/ns3/wifi
NS3_WIFI_FLAGS = -O2 -std=c++17 $$(pkg-config --cflags ns3-core) $(addprefix -lns3-,$(NS3_WIFI_MODULES))
endif
bench-ns3-wifi:
	$(ns3_check)
	cargo build --release -q -p l4s-sim --bin l4s-sim
	mkdir -p target/ns3
	g++ -o $(NS3_WIFI) crates/l4s-sim/benches/ns3/wifi.cc $(NS3_WIFI_FLAGS)
	python3 crates/l4s-sim/benches/ns3/compare_wifi.py target/release/l4s-sim $(NS3_WIFI) $(NS3_WIFI_SEEDS)

clean:
	cargo clean
	rm -rf $(VENV)

# Mutation testing (outside CI; the full scope is days on 2 cores): cargo-mutants 27.1.0 over
# MUTANTS_FILES, in a copy of the tree, built with the `mutants` cargo profile into
# target/mutants-tree (kept between runs, so only the first run builds the dependencies); the
# per-module table goes to mutants.out/table.md (docs/mutants.md). MUTANTS_SHARD=k/n tests a
# systematic 1-in-n sample (round-robin: mutant i is in shard i mod n), e.g. MUTANTS_SHARD=0/20;
# unset, the whole scope. One file: MUTANTS_FILES=crates/l4s-core/src/wifi/edca.rs.
MUTANTS_FILES ?= crates/l4s-core/src/wifi/**/*.rs crates/l4s-core/src/rt/**/*.rs \
	crates/l4s-core/src/aqm/**/*.rs crates/l4s-core/src/cc/**/*.rs \
	crates/l4s-sim/src/workloads.rs crates/l4s-sim/src/bdp.rs crates/l4s-sim/src/hops.rs \
	crates/l4s-sim/src/start_jitter.rs crates/l4s-sim/src/pcap.rs crates/l4s-sim/src/app_results.rs
MUTANTS_SHARD ?=
mutants:
	cargo mutants --version 2>/dev/null | grep -qx 'cargo-mutants 27.1.0' || cargo install --locked cargo-mutants --version 27.1.0
	-CARGO_TARGET_DIR=$(CURDIR)/target/mutants-tree cargo mutants -j 1 \
		$(foreach f,$(MUTANTS_FILES),--file '$(f)') \
		$(if $(MUTANTS_SHARD),--shard $(MUTANTS_SHARD) --sharding round-robin) $(MUTANTS_ARGS)
	python3 tools/mutants_table.py mutants.out/outcomes.json | tee mutants.out/table.md
