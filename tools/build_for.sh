#!/usr/bin/env bash
# The native runner with the engine releases the named experiments' systems need beyond what
# `make setup` builds (`enginebench builds`: the posts' WiredTiger trees, PerconaFT's releases,
# WiredTiger 2.9.2): builds those not built yet (tools/build_engines.sh), then the runner
# (tools/build_native.sh), which links every release built. With no experiment named, the runner
# alone. The Makefile's NEEDS.
# Usage: tools/build_for.sh <python> [<experiment>|all ...] [--set KEY=VALUE ...]
set -euo pipefail
PY=${1:?python}; shift
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then
  builds=$("$PY" -m enginebench builds "$@")
  if [ -n "$builds" ]; then
    EB_BUILDS="$builds" bash tools/build_engines.sh "$PY"
  fi
fi
exec bash tools/build_native.sh
