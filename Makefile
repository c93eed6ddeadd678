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

# An active conda environment made from environment.yml is used as it is; otherwise .venv.
ifdef CONDA_PREFIX
  ENV_DIR := $(CONDA_PREFIX)
else
  ENV_DIR := $(CURDIR)/.venv
endif
PY := $(ENV_DIR)/bin/python
STAMP := $(ENV_DIR)/.enginebench-setup
SETUP_INPUTS := lib/pyproject.toml tools/build_wiredtiger.sh tools/setup.sh tools/build_native.sh tools/rust_ok.sh
# The engines the native runner links (RocksDB, LMDB; WiredTiger 3.2.1 beside the 11.3.1 built;
# tcmalloc, as mongod), perf for `make bench`'s CPU attribution, Chromium for the report checks.
DEBIAN_PACKAGES := libsnappy-dev libzstd-dev librocksdb-dev liblmdb-dev libwiredtiger-dev libgoogle-perftools-dev \
                   linux-perf chromium

.PHONY: setup native setup-legacy experiment test reports compare bench clean notebooks help

help:
	@echo "make experiment EXP=<name> [SCALE=smoke|default|paper] [TARGET=auto|embedded|mongod|uri] [REPEAT=n]"
	@echo "make test | reports | compare A=<run> B=<run> | bench | clean | setup"
	@echo "experiments: $$(ls params | sed 's/\.yaml//' | tr '\n' ' ')"

setup: $(STAMP)

$(STAMP): $(SETUP_INPUTS)
	@bash tools/setup.sh "$(ENV_DIR)" "$(DEBIAN_PACKAGES)"
	@touch $(STAMP)

# The native runner (lib/native), rebuilt whenever its sources changed (cargo is incremental).
native: $(STAMP)
	@bash tools/build_native.sh

# The client environment for MongoDB 3.0-4.2 servers (pymongo 3.x); see README "The mongod target".
setup-legacy: $(STAMP)
	@bash tools/setup_legacy.sh "$(CURDIR)/.venv-legacy"

experiment: native
	@if [ -z "$(EXP)" ]; then echo "make experiment: EXP= is required; one of: $$(ls params | sed 's/\.yaml//' | tr '\n' ' ')" >&2; exit 2; fi
	$(PY) -m enginebench experiment "$(EXP)" --scale "$(SCALE)" --target "$(TARGET)" --repeat "$(REPEAT)" $(if $(RUN),--run-dir "$(RUN)")

test: native
	CARGO_TARGET_DIR=$(CURDIR)/.build/native EB_WIREDTIGER_BUILD=$(CURDIR)/.build/wiredtiger/out \
	    cargo test --release --quiet --manifest-path lib/native/Cargo.toml
	$(PY) -m pytest -q lib/tests
	$(PY) -m pytest -q --nbval-lax --nbval-current-env --nbval-cell-timeout=600 \
	    --nbval-sanitize-with tools/nbval-sanitize.cfg notebooks/

reports: $(STAMP)
	$(PY) -m enginebench reports

compare: $(STAMP)
	@if [ -z "$(A)" ] || [ -z "$(B)" ]; then echo "make compare: A=<results folder> B=<results folder> are required" >&2; exit 2; fi
	$(PY) -m enginebench compare "$(A)" "$(B)"

bench: native
	$(PY) -m enginebench bench

# Regenerate the notebooks and their stored reference outputs (smoke scale).
# NB=<name> limits it to one notebook.
NB ?=
notebooks: $(STAMP)
	$(PY) tools/make_notebooks.py $(NB)
	cd notebooks && $(ENV_DIR)/bin/jupyter nbconvert --to notebook --execute --inplace \
	    --ExecutePreprocessor.kernel_name=enginebench $(if $(NB),$(NB).ipynb,*.ipynb)
	$(PY) tools/make_notebooks.py --strip $(NB)

clean:
	rm -rf reports/*.html reports/*.ipynb .build/data .pytest_cache
	find lib -name __pycache__ -type d -prune -exec rm -rf {} +
