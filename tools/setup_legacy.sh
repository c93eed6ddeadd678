#!/usr/bin/env bash
# Make .venv-legacy: the environment whose Python runs the companion (server statistics, setup)
# and the legacy executor (the runner's commands) for servers older than MongoDB 4.2.
# pymongo 4 and the Rust driver refuse servers older than 4.4 / 4.2; pymongo 3.x speaks to
# 2.6-5.0. The project is installed without its own dependency list (which asks for pymongo 4):
# the companion and the executor import only pymongo and bson. LEGACY_PYMONGO overrides the pin.
# Usage: tools/setup_legacy.sh [ENV_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
ENV_DIR=${1:-.venv-legacy}
PYMONGO=${LEGACY_PYMONGO:-"pymongo>=3.12,<4"}

if [ ! -x "$ENV_DIR/bin/python" ]; then
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "setup-legacy: Python 3.11 or newer is needed (found $(python3 --version))" >&2; exit 1; }
  echo "setup-legacy: creating $ENV_DIR"
  python3 -m venv "$ENV_DIR"
fi
PY="$ENV_DIR/bin/python"
"$PY" -m pip install -q --upgrade pip
echo "setup-legacy: installing $PYMONGO"
"$PY" -m pip install -q "$PYMONGO"
"$PY" -m pip install -q --no-deps -e lib
"$PY" - <<'PYCHECK'
import pymongo
import enginebench.mongod.companion  # the companion imports cleanly here
import enginebench.mongod.legacy_executor  # and so does the executor
from pymongo import common
print(f"setup-legacy: pymongo {pymongo.version} (wire versions {common.MIN_SUPPORTED_WIRE_VERSION}-"
      f"{common.MAX_SUPPORTED_WIRE_VERSION}) in {__import__('sys').prefix}")
PYCHECK
