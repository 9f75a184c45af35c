#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test suite. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
meson test -C build --print-errorlogs --num-processes 2 "$@"
