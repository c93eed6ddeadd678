# enginebench: re-run the 2013-2015 MongoDB storage-engine studies.
#   make experiment EXP=linkbench_cached [SCALE=default] [TARGET=auto]
#   make test
# Everything installs from Python 3.11+, a C toolchain and Debian packages; `setup` is idempotent.

SHELL := /bin/bash
EXP ?=
SCALE ?= default
TARGET ?= auto
RUN ?=
REPEAT ?= 1
SYSTEMS ?=
SET ?=
# make explain: only these factors (comma-separated names), with the base
FACTORS ?=

# An active conda environment made from environment.yml is used as it is; otherwise .venv.
ifdef CONDA_PREFIX
  ENV_DIR := $(CONDA_PREFIX)
else
  ENV_DIR := $(CURDIR)/.venv
endif
PY := $(ENV_DIR)/bin/python
STAMP := $(ENV_DIR)/.enginebench-setup
SETUP_INPUTS := lib/pyproject.toml tools/build_engines.sh tools/build_wiredtiger.sh tools/build_rocksdb.sh tools/build_lmdb.sh tools/debian_source.sh tools/setup.sh tools/build_native.sh tools/rust_ok.sh \
                tools/build_perconaft.sh tools/vendor_source.sh tools/perconaft.sources $(wildcard tools/patches/fractal/*.patch) \
                tools/build_wiredtiger_tag.sh tools/wiredtiger.sources tools/compiler_cache.sh
# The engines the native runner links (LMDB; WiredTiger 3.2.1 beside the 11.3.1 and 2.9.2 built,
# 2.9.2 with autotools; RocksDB's compressors, its source unpacked by dpkg-dev; tcmalloc, as
# mongod), PerconaFT's build (Debian's cmake: the registry's 4.x refuses its 2013-2015 CMake files;
# liblzma), perf for `make bench`'s CPU attribution, Chromium for the report checks, ccache for
# compiles another clone on this machine already made (tools/compiler_cache.sh).
DEBIAN_PACKAGES := libsnappy-dev libzstd-dev liblz4-dev libbz2-dev zlib1g-dev libwiredtiger-dev \
                   libgoogle-perftools-dev dpkg-dev autoconf automake libtool linux-perf chromium \
                   cmake liblzma-dev patch ccache

# The legacy client environment (pymongo 3.x) and the stand-in wire-protocol server the TARGET=uri
# tests run against (tools/standin); both are built by `make test`.
LEGACY_DIR := $(CURDIR)/.venv-legacy
LEGACY_STAMP := $(LEGACY_DIR)/.enginebench-setup
STANDIN_JAR := tools/standin/target/enginebench-standin.jar
STANDIN_INPUTS := tools/build_standin.sh tools/standin/pom.xml $(shell find tools/standin/src -type f 2>/dev/null)
# The second stand-in, FerretDB (Go, on SQLite), built from the Go module proxy by `make test` too.
FERRETDB_BIN := .build/ferretdb/ferretdb

.PHONY: all setup native engines-all server-cost wiredtiger-2.9.2 setup-legacy standin ferretdb experiment test test-builds test-uri reports compare explain explain-differing bench clean notebooks help

# Each experiment's question and timed phases come from its params (lib/enginebench/helptext.py);
# before `make setup` only the names can be listed.
help:
	@if [ -x "$(PY)" ]; then $(PY) -m enginebench help; else \
	  echo "make setup first for the full help; experiments: $$(ls params | sed 's/\.yaml//' | tr '\n' ' ')"; fi

setup: $(STAMP)

$(STAMP): $(SETUP_INPUTS)
	@bash tools/setup.sh "$(ENV_DIR)" "$(DEBIAN_PACKAGES)"
	@touch $(STAMP)

# The native runner (lib/native), rebuilt whenever its sources changed (cargo is incremental),
# with the engine releases that the experiments NEEDS names (or `all`) run beyond what setup builds:
# the posts' WiredTiger trees, PerconaFT's releases, WiredTiger 2.9.2, each built once, the first
# time a system names it (tools/build_for.sh; about half a minute of CPU each, 2.9.2 a minute and
# a half, then the runner is linked again). `make experiment`, `explain`, `all` and `bench` set it.
NEEDS ?=
comma := ,
native: $(STAMP)
	@bash tools/build_for.sh "$(PY)" $(NEEDS)
experiment explain: NEEDS = $(EXP) $(foreach s,$(SET),--set "$(s)")
all: NEEDS = $(or $(subst $(comma), ,$(EXPERIMENTS)),all)
bench: NEEDS = all

# WiredTiger 2.9.2 (MongoDB 3.4's release) for systems that set `options: {version: 2.9.2}`: no
# experiment's params run it; this builds it and links it into the runner (about a minute on two
# cores). `make test` builds it with the rest.
wiredtiger-2.9.2: $(STAMP)
	@EB_BUILDS=wiredtiger-2.9.2 bash tools/build_engines.sh "$(PY)"
	@bash tools/build_native.sh

# The client environment for MongoDB 3.0-4.2 servers (pymongo 3.x); see README "The mongod target".
setup-legacy: $(LEGACY_STAMP)

$(LEGACY_STAMP): $(STAMP) tools/setup_legacy.sh lib/pyproject.toml
	@bash tools/setup_legacy.sh "$(LEGACY_DIR)"
	@touch $(LEGACY_STAMP)

# The stand-in server for TARGET=uri tests: Java 17 and Maven (Debian packages), then Maven Central.
standin: $(STANDIN_JAR)

$(STANDIN_JAR): $(STANDIN_INPUTS)
	@bash tools/build_standin.sh >/dev/null

# The second stand-in: FerretDB from the Go module proxy, built with the installed Go toolchain.
ferretdb: $(FERRETDB_BIN)

$(FERRETDB_BIN): tools/build_ferretdb.sh
	@bash tools/build_ferretdb.sh >/dev/null
	@touch $@

# A server older than 4.2 is spoken to through the legacy client (lib/enginebench/mongod/legacy.py),
# so it is made first (once: its stamp keeps it) wherever a server may be measured: TARGET=mongod or
# uri, or TARGET=auto with a mongod in MONGOD or on PATH. Embedded runs never need it.
experiment: native $(if $(or $(filter mongod uri,$(TARGET)),$(and $(filter auto,$(TARGET)),$(or $(MONGOD),$(shell command -v mongod 2>/dev/null)))),$(LEGACY_STAMP))
	@if [ -z "$(EXP)" ]; then echo "make experiment: EXP= is required; one of: $$(ls params | sed 's/\.yaml//' | tr '\n' ' ')" >&2; exit 2; fi
	$(PY) -m enginebench experiment "$(EXP)" --scale "$(SCALE)" --target "$(TARGET)" --repeat "$(REPEAT)" $(if $(RUN),--run-dir "$(RUN)") $(if $(SYSTEMS),--systems "$(SYSTEMS)") $(foreach s,$(SET),--set "$(s)")

# What `make test` needs, built side by side: the Maven and Go downloads overlap the Python
# setup and the WiredTiger and Rust compiles, whatever -j the caller gave.
# Every engine release offered (the tests open each) is built inside setup when setup runs here.
test-builds:
	@EB_BUILDS=all $(MAKE) --no-print-directory -j4 engines-all $(LEGACY_STAMP) $(STANDIN_JAR) $(FERRETDB_BIN)

# Every engine release any system can name, linked into the runner.
engines-all: $(STAMP)
	@EB_BUILDS=all bash tools/build_engines.sh "$(PY)"
	@bash tools/build_native.sh

# lib/tests includes one experiment of each family on the stand-in through TARGET=uri. The Python
# tests and the notebooks (nbval) run in one session on TEST_WORKERS processes, each test file on
# one of them (its module's smoke run is made once); run ids and cgroups are unique per machine,
# so concurrent runs never meet (lib/enginebench/results/rundir.py).
TEST_WORKERS ?= 2
test: test-builds
	bash tools/build_native.sh test
	$(PY) -m pytest -q --durations=15 -n $(TEST_WORKERS) --dist loadfile \
	    --nbval-lax --nbval-current-env --nbval-cell-timeout=600 \
	    --nbval-sanitize-with tools/nbval-sanitize.cfg lib/tests notebooks/

# All ten experiments at smoke scale on the stand-in through TARGET=uri.
test-uri: $(STAMP) $(LEGACY_STAMP) $(STANDIN_JAR) $(FERRETDB_BIN)
	ENGINEBENCH_URI_EXPERIMENTS=all $(PY) -m pytest -q lib/tests/test_uri_standin.py

reports: $(STAMP)
	$(PY) -m enginebench reports

compare: $(STAMP)
	@if [ -z "$(A)" ] || [ -z "$(B)" ]; then echo "make compare: A=<run> B=<run> are required (a results folder, <exp>/<run id> or a run id)" >&2; exit 2; fi
	@$(PY) -m enginebench compare "$(A)" "$(B)"

# The whole collection: every experiment in turn at SCALE, skipping those already run from this
# code and params (FORCE=1 re-runs them), then reports/index.html with every claim.
# EXPERIMENTS=a,b runs only those. CLUSTER=tcp://<head>:8786 sends each experiment to a host of a
# Dask cluster (docs/cluster.md), REPEAT=n times on different hosts; SHARED=<folder>, the same on
# every host, takes the run folders there instead of back over the network.
FORCE ?=
EXPERIMENTS ?=
CLUSTER ?=
SHARED ?=
all: native
	$(PY) -m enginebench all --scale "$(SCALE)" --target "$(TARGET)" $(if $(FORCE),--force) \
	    $(if $(EXPERIMENTS),--experiments "$(EXPERIMENTS)") $(if $(CLUSTER),--cluster "$(CLUSTER)" --repeat "$(REPEAT)") \
	    $(if $(SHARED),--shared "$(SHARED)")

# Why a claim's verdict differs from the post: its systems once per named factor (lib/enginebench/explain.py).
explain: native
	@if [ -z "$(EXP)" ] || [ -z "$(CLAIM)" ]; then echo "make explain: EXP=<experiment> CLAIM=<claim id>[,<claim id>...] are required" >&2; exit 2; fi
	$(PY) -m enginebench explain "$(EXP)" "$(CLAIM)" --scale "$(SCALE)" --repeat "$(REPEAT)" --factors "$(FACTORS)"

# `make explain` for every claim the collection page lists as "not explained yet" at SCALE (EXPERIMENTS=a,b
# only those); PLAN=1 prints the runs and the time they should take here, and runs nothing.
PLAN ?=
explain-differing: NEEDS = $(if $(PLAN),,$(or $(subst $(comma), ,$(EXPERIMENTS)),all))
explain-differing: native
	$(PY) -m enginebench explain-differing --scale "$(SCALE)" --repeat "$(REPEAT)" \
	    $(if $(EXPERIMENTS),--experiments "$(EXPERIMENTS)") $(if $(PLAN),--plan)

# LINKBENCH_RUN=<a complete linkbench_cached default run> takes the headline figures from that run
# (every experiment run records the perf attribution) instead of making a new one.
LINKBENCH_RUN ?=
bench: native
	$(PY) -m enginebench bench $(if $(LINKBENCH_RUN),--linkbench-run "$(LINKBENCH_RUN)")

# The stand-in server's CPU per operation of each experiment through the same client (a few
# minutes): the upper bound on a server's own layer that embedded reports add to their ratios.
server-cost: native $(STANDIN_JAR)
	$(PY) -m enginebench server-cost

# Re-execute the notebooks at the smoke scale and store their nbval reference outputs; the
# notebooks themselves are the source (edit them directly). NB=<family> limits it to one.
NB ?=
notebooks: $(STAMP)
	cd notebooks && $(ENV_DIR)/bin/jupyter nbconvert --to notebook --execute --inplace \
	    --ExecutePreprocessor.kernel_name=enginebench $(if $(NB),$(NB).ipynb,*.ipynb)
	$(PY) -m enginebench.notebooks strip $(NB)

clean:
	rm -rf reports/*.html reports/*.ipynb .build/data .pytest_cache
	find lib -name __pycache__ -type d -prune -exec rm -rf {} +
