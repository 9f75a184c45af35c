#!/usr/bin/env bash
# Debian's unmodified ib_write_bw (perftest) over metaroce: installs what is missing,
# builds the Verbs front end, then runs an ib_write_bw server and client as two
# processes and prints perftest's table. Works as root without a terminal (CI).
#   ./scripts/verbs-demo.sh [--backend udp|dpdk] [extra ib_write_bw options]
#                                          e.g. ./scripts/verbs-demo.sh -a
#   --backend udp   (default) kernel UDP on loopback, node addresses chosen
#                   automatically (the GIDs show them)
#   --backend dpdk  each process starts DPDK in-process (--no-huge) on one net_memif
#                   link between them (nodes 10.0.0.1 and 10.0.0.2); then, over the
#                   same link set-up, metaroce-perf write_bw with the same options, and
#                   both averages side by side (the cost of the Verbs front end)
#   DEMO_BUILD_DIR=D   meson build directory (default build)
#   DEMO_PORT=P        perftest's TCP port for its out-of-band exchange (default 18515)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${DEMO_BUILD_DIR:-build}
port=${DEMO_PORT:-18515}
backend=udp
if [ "${1:-}" = "--backend" ]; then
  backend=${2:-}
  shift 2 || true
fi
case $backend in
  udp|dpdk) ;;
  *) echo "verbs-demo: --backend udp or dpdk, not '$backend'" >&2; exit 1 ;;
esac
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n 2,16p "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi

say() { echo "verbs-demo: $*"; }
steps=3
[ "$backend" = dpdk ] && steps=4

# The client's average bandwidth (the last table row's 4th column) from a log.
average() { grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+' "$1" | tail -1 | awk '{print $4}'; }

# Server and client of one program over a fresh memif link: "pair LABEL SERVER_CMD..
# -- CLIENT_CMD..", each side's command after its role's environment. Logs in $dir.
dpdk_demo() {
  dir=$(mktemp -d /tmp/metaroce-verbs-demo.XXXXXX)
  trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
  local vdev="socket=$dir/memif0.sock,socket-abstract=no,bsize=8192"
  local eal="--no-pci --no-huge -m 256 --log-level=*:warning"
  local perf rc=0 s
  perf=$(realpath "$build/app/metaroce-perf/metaroce-perf")

  say "[3/4] $run ib_write_bw -x 0 $* over net_memif (METAROCE_BACKEND=dpdk; server 10.0.0.1, then client 10.0.0.2)"
  export METAROCE_BACKEND=dpdk
  METAROCE_ADDR=10.0.0.1 METAROCE_EAL="-l 0 $eal --vdev=net_memif0,role=server,$vdev" \
    timeout 120 "$run" ib_write_bw -x 0 -p "$port" "$@" >"$dir/verbs-server.log" 2>&1 &
  s=$!
  for _ in $(seq 100); do [ -S "$dir/memif0.sock" ] && break; sleep 0.1; done
  sleep 0.5 # perftest listens on its TCP port once the device is open
  METAROCE_ADDR=10.0.0.2 METAROCE_EAL="-l 0 $eal --vdev=net_memif0,role=client,$vdev" \
    timeout 120 "$run" ib_write_bw -x 0 -p "$port" "$@" 127.0.0.1 2>&1 | tee "$dir/verbs-client.log" || rc=1
  wait $s || rc=1
  unset METAROCE_BACKEND
  say "server's output (also in $dir/verbs-server.log):"
  cat "$dir/verbs-server.log"
  [ $rc -eq 0 ] || { say "ib_write_bw failed"; exit 1; }
  rm -f "$dir/memif0.sock"

  say "[4/4] $perf write_bw $* over the same kind of link (metaroce's own perftest, no Verbs)"
  (cd "$dir" && exec timeout 120 "$perf" -l 0 $eal --file-prefix="vdemo-s-$$" \
    --vdev=net_memif0,role=server,$vdev -- write_bw "$@" >"$dir/perf-server.log" 2>&1) &
  s=$!
  for _ in $(seq 100); do [ -S "$dir/memif0.sock" ] && break; sleep 0.1; done
  (cd "$dir" && exec timeout 120 "$perf" -l 1 $eal --file-prefix="vdemo-c-$$" \
    --vdev=net_memif0,role=client,$vdev -- write_bw "$@" 10.0.0.1 2>&1) | tee "$dir/perf-client.log" || rc=1
  wait $s || rc=1
  trap - EXIT
  [ $rc -eq 0 ] || { cat "$dir/perf-server.log"; say "metaroce-perf failed"; exit 1; }
  local v p
  v=$(average "$dir/verbs-client.log")
  p=$(average "$dir/perf-client.log")
  say "ib_write_bw over the Verbs front end on DPDK: $v MB/s average; metaroce-perf write_bw: $p MB/s"
  awk -v v="$v" -v p="$p" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN { if (p > 0)
    printf "verbs-demo: the Verbs front end ran at %.0f%% of metaroce-perf (load average %s)\n", 100 * v / p, load }' 
  say "done: Debian's ib_write_bw ran over metaroce on DPDK ports (logs in $dir)"
}

say "[1/$steps] Debian packages: installing any that are missing (scripts/install-deps.sh)"
./scripts/install-deps.sh

say "[2/$steps] building the Verbs front end in $build/"
if [ ! -f "$build/build.ninja" ]; then
  setup_log=$(mktemp /tmp/metaroce-verbs-demo-setup.XXXXXX)
  if ! meson setup "$build" >"$setup_log" 2>&1; then
    cat "$setup_log" >&2
    exit 1
  fi
  say "configured $build/ (meson's output: $setup_log)"
fi
targets=(drivers/verbs/libibverbs.so.1 drivers/verbs/libmetaroce_verbs_preload.so)
[ "$backend" = dpdk ] && targets+=(drivers/verbs/libmetaroce_verbs_dpdk.so app/metaroce-perf/metaroce-perf)
ninja -C "$build" "${targets[@]}"
run=$build/drivers/verbs/metaroce-run
if [ ! -x "$run" ]; then
  echo "verbs-demo: $run is missing (are libibverbs-dev and rdma-core installed?)" >&2
  exit 1
fi
if [ "$backend" = dpdk ]; then
  dpdk_demo "$@"
  exit
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
