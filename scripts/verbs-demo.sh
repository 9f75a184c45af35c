#!/usr/bin/env bash
# Debian's unmodified ib_write_bw (perftest) over metaroce: installs what is missing,
# builds the Verbs front end, then runs an ib_write_bw server and client as two
# processes on loopback (UDP backend, node addresses chosen automatically: the GIDs
# show them) and prints perftest's table. Works as root without a terminal (CI).
#   ./scripts/verbs-demo.sh [extra ib_write_bw options]     e.g. ./scripts/verbs-demo.sh -a
#   DEMO_BUILD_DIR=D   meson build directory (default build)
#   DEMO_PORT=P        perftest's TCP port for its out-of-band exchange (default 18515)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${DEMO_BUILD_DIR:-build}
port=${DEMO_PORT:-18515}

say() { echo "verbs-demo: $*"; }

say "[1/3] Debian packages: installing any that are missing (scripts/install-deps.sh)"
./scripts/install-deps.sh

say "[2/3] building the Verbs front end in $build/"
if [ ! -f "$build/build.ninja" ]; then
  setup_log=$(mktemp /tmp/metaroce-verbs-demo-setup.XXXXXX)
  if ! meson setup "$build" >"$setup_log" 2>&1; then
    cat "$setup_log" >&2
    exit 1
  fi
  say "configured $build/ (meson's output: $setup_log)"
fi
ninja -C "$build" drivers/verbs/libibverbs.so.1 drivers/verbs/libmetaroce_verbs_preload.so
run=$build/drivers/verbs/metaroce-run
if [ ! -x "$run" ]; then
  echo "verbs-demo: $run is missing (are libibverbs-dev and rdma-core installed?)" >&2
  exit 1
fi

say "[3/3] $run ib_write_bw -x 0 $* (server), then the same with 127.0.0.1 (client)"
log=$(mktemp /tmp/metaroce-verbs-demo-server.XXXXXX)
timeout 120 "$run" ib_write_bw -x 0 -p "$port" "$@" >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
sleep 0.5
rc=0
timeout 120 "$run" ib_write_bw -x 0 -p "$port" "$@" 127.0.0.1 || rc=$?
wait $server || rc=$?
trap - EXIT
say "server's output (also in $log):"
cat "$log"
if [ $rc -ne 0 ]; then
  say "failed (exit $rc)"
  exit $rc
fi
say "done: Debian's ib_write_bw ran over metaroce (see the GIDs: two nodes on loopback)"
