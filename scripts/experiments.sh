#!/usr/bin/env bash
# Runs the issue-4 experiments (loss, incast, plane scaling, plane failure,
# collectives) for metaroce and the RoCEv2 model and writes JSON, PNG plots and
# doc/results/README.md. --quick runs a smaller, faster subset.
# SIM=path/to/metaroce-sim uses that binary instead of building ./build (e.g. one
# built from a clean checkout while the core is being edited).
set -euo pipefail
cd "$(dirname "$0")/.."
# Plots use Debian's matplotlib with the system python (python3 on PATH may be a pyenv).
if ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get install -y -q python3-matplotlib
fi
sim="${SIM:-}"
if [ -z "$sim" ]; then
  if [ ! -f build/build.ninja ]; then
    meson setup build
  fi
  ninja -C build -j1 app/metaroce-sim/metaroce-sim
  sim=build/app/metaroce-sim/metaroce-sim
fi
out=doc/results
[ "${1:-}" = "--quick" ] && out=doc/results/quick
/usr/bin/python3 scripts/experiments/run.py "$sim" "$out" "$@"
