#!/usr/bin/env bash
# Make .venv-legacy: the environment whose Python runs the client workers for MongoDB 3.0-4.2.
# pymongo 4 refuses servers older than 4.4 (wire version 9); pymongo 3.x speaks to 2.6-5.0. The
# project is installed without its own dependency list (which asks for pymongo 4), plus the
# packages the runner process imports. LEGACY_PYMONGO overrides the pin.
# Usage: tools/setup_legacy.sh [ENV_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
ENV_DIR=${1:-.venv-legacy}
PYMONGO=${LEGACY_PYMONGO:-"pymongo>=3.12,<4"}
# What enginebench.runner.child imports (workloads, stores, recorder; polars for the flashback
# workload's scans table), nothing for reports.
RUNNER_PACKAGES=("hdrhistogram>=0.10" "numpy>=1.26" "polars>=1.0" "psutil>=5.9" "pydantic>=2.6" "pyyaml>=6" "tqdm>=4.66")

if [ ! -x "$ENV_DIR/bin/python" ]; then
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "setup-legacy: Python 3.11 or newer is needed (found $(python3 --version))" >&2; exit 1; }
  echo "setup-legacy: creating $ENV_DIR"
  python3 -m venv "$ENV_DIR"
fi
PY="$ENV_DIR/bin/python"
"$PY" -m pip install -q --upgrade pip
echo "setup-legacy: installing $PYMONGO and the runner's packages"
"$PY" -m pip install -q "$PYMONGO" "${RUNNER_PACKAGES[@]}"
"$PY" -m pip install -q --no-deps -e lib
"$PY" - <<'PYCHECK'
import pymongo
import enginebench.runner.child  # the runner imports cleanly here
import enginebench.flashback.workload  # and so does every workload
from pymongo import common
print(f"setup-legacy: pymongo {pymongo.version} (wire versions {common.MIN_SUPPORTED_WIRE_VERSION}-"
      f"{common.MAX_SUPPORTED_WIRE_VERSION}) in {__import__('sys').prefix}")
PYCHECK
