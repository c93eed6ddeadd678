#!/usr/bin/env bash
# Install everything enginebench needs into ENV_DIR (a conda env, or a venv created here):
# Debian build packages, the Python dependencies, the engine libraries (tools/build_engines.sh:
# WiredTiger 11.3.1 built with snappy and zstd, RocksDB from Debian's source as a release build,
# LMDB from Debian's source with frame pointers; WiredTiger 2.9.2 too with EB_OLDER_WIREDTIGER=1),
# the native runner (lib/native, built with Rust), and a Jupyter kernel named "enginebench".
# Usage: tools/setup.sh ENV_DIR "DEBIAN PACKAGES"
set -euo pipefail
ENV_DIR=$1; PACKAGES=$2
cd "$(dirname "$0")/.."

missing=()
for pkg in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: missing Debian packages: ${missing[*]}; run: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

if [ ! -x "$ENV_DIR/bin/python" ]; then
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "setup: Python 3.11 or newer is needed (found $(python3 --version))" >&2; exit 1; }
  echo "setup: creating $ENV_DIR"
  python3 -m venv "$ENV_DIR"
fi
PY="$ENV_DIR/bin/python"
"$PY" -m pip install -q --upgrade pip
# CMake and Ninja first: the engines' builds need them, and start while the rest installs.
"$PY" -m pip install -q cmake ninja

# Rust for the native runner: a cargo on PATH that is recent enough, else Debian's current
# toolchain (cargo-web / rustc-web, bookworm's updates).
if ! bash tools/rust_ok.sh; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing Debian's Rust toolchain (cargo-web)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cargo-web >/dev/null
  fi
  bash tools/rust_ok.sh || { echo "setup: the native runner needs Rust 1.80 or newer (Debian: apt-get install cargo-web)" >&2; exit 1; }
fi

# Side by side, as two cores are kept busy by the compilers: the engine libraries
# (tools/build_engines.sh), the Rust crates the runner depends on (which need none of them: the
# driver's alone is close to a minute of one core) and the Python packages (mostly downloads).
# Each in a process group of its own, so that a failed step or an interrupt stops the others'
# compilers too.
side=()
trap 'for group in "${side[@]}"; do kill -- "-$group" 2>/dev/null || true; done' EXIT
setsid bash tools/build_engines.sh "$PY" & engines=$!; side+=("$engines")
echo "setup: compiling the native runner's dependencies (Rust)"
setsid bash tools/build_native.sh deps & crates=$!; side+=("$crates")
echo "setup: installing the enginebench package and its dependencies"
"$PY" -m pip install -q -e lib
wait "$crates" || { echo "setup: compiling the native runner's dependencies failed" >&2; exit 1; }
wait "$engines" || exit 1
echo "setup: building the native runner (lib/native)"
bash tools/build_native.sh

"$PY" -m ipykernel install --sys-prefix --name enginebench --display-name "Python (enginebench)" >/dev/null
echo "setup: done ($ENV_DIR)"
