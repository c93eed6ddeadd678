#!/usr/bin/env bash
# Exits 0 when cargo and rustc on PATH are recent enough for lib/native (Rust 1.80).
set -euo pipefail
command -v cargo >/dev/null && command -v rustc >/dev/null || exit 1
version=$(rustc --version | awk '{print $2}')
minor=$(echo "$version" | cut -d. -f2)
[ "$(echo "$version" | cut -d. -f1)" -ge 1 ] && [ "$minor" -ge 80 ]
