#!/usr/bin/env bash
# Runs the issue-4 experiments (loss, incast, plane scaling, plane failure, collectives)
# on the fabric model for metaroce and the RoCEv2 model: the JSON of every run, a
# README.md with the tables and targets, and SVG figures (no plotting package needed).
#   ./scripts/experiments.sh [--quick] [--sweep] [--seeds] [--update] [--out DIR]
#   --quick   a smaller, faster set (about a tenth of the time; no 256:1 incast)
#   --sweep   also runs the loss and incast targets over a family of fabrics and reports
#             the worst value of each (scripts/experiments/sweep.py; with --quick, a
#             family of 6 fabrics that takes a few minutes)
#   --seeds   also runs the noisiest targets (10 % loss, plane scaling) on seeds 2-4 and
#             judges them by the worst seed (scripts/experiments/seeds.py; --quick: seed 2)
#   --out DIR where the run goes (default build/experiments, or build/experiments/quick);
#             tracked files are left alone
#   --update  then publishes the run: replaces doc/results/ with it and rewrites the
#             figures block of README.md (between its experiments markers)
# SIM=path/to/metaroce-sim uses that binary instead of building it in ./build.
# The model suite's experiments_results_match test checks that doc/results/ and README.md
# follow from the JSON in doc/results/ (without re-running anything).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=()
sweep=()
seeds=()
update=0
out=
while [ $# -gt 0 ]; do
  case $1 in
  --quick) quick=(--quick) ;;
  --sweep) sweep=(--sweep) ;;
  --seeds) seeds=(--seeds) ;;
  --update) update=1 ;;
  --out)
    [ $# -ge 2 ] || { echo "experiments: --out needs a directory" >&2; exit 2; }
    out=$2
    shift
    ;;
  -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "experiments: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$out" ] || out=build/experiments${quick:+/quick}

sim="${SIM:-}"
if [ -z "$sim" ]; then
  ./scripts/install-deps.sh
  [ -f build/build.ninja ] || meson setup build
  ninja -C build -j1 app/metaroce-sim/metaroce-sim
  sim=build/app/metaroce-sim/metaroce-sim
fi

# A fresh directory, so nothing of an earlier run is mistaken for this one.
rm -rf "$out"
mkdir -p "$out"
echo "experiments: running the ${quick:+quick }set into $out/"
family=()
if [ ${#sweep[@]} -gt 0 ]; then
  family=(--sweep "$([ ${#quick[@]} -gt 0 ] && echo quick || echo full)")
fi
if [ ${#seeds[@]} -gt 0 ]; then
  family+=(--seeds "$([ ${#quick[@]} -gt 0 ] && echo quick || echo full)")
fi
nice python3 scripts/experiments/run.py "$sim" "$out" "${quick[@]}" "${family[@]}"

if [ "$update" -eq 1 ]; then
  rm -rf doc/results
  mkdir -p doc/results
  cp -r "$out"/. doc/results/
  python3 scripts/experiments/report.py doc/results --readme README.md
  python3 scripts/experiments/report.py doc/results --readme README.md --check
  echo "experiments: published to doc/results/ and README.md's figures block"
else
  echo "experiments: tracked files untouched; --update publishes a run to doc/results/ and README.md"
fi
