#!/usr/bin/env bash
# Quick start: installs what is missing, builds, starts a metaroce-perf server and
# client connected by net_memif (two processes, one core each), runs write_bw for
# a few seconds and prints perftest's table. Works as root without a terminal (CI).
#   ./scripts/demo.sh [TEST] [extra metaroce-perf options]     e.g. ./scripts/demo.sh send_bw -s 4096
set -euo pipefail
cd "$(dirname "$0")/.."

test_name=${1:-write_bw}
shift || true
duration=${DEMO_SECONDS:-3}
# Two busy-polling processes on shared cores get descheduled for milliseconds:
# give the transport's retransmit timer room for that (see --help).
tuning="--min-rto-us 1000 --max-timeouts 20"

./scripts/install-deps.sh
if ! ./scripts/build.sh >/tmp/metaroce-demo-build.log 2>&1; then
  # The demo needs only metaroce-perf: build that alone before giving up.
  echo "demo: full build failed (see /tmp/metaroce-demo-build.log); building metaroce-perf only"
  [ -f build/build.ninja ] || meson setup build
  ninja -C build app/metaroce-perf/metaroce-perf
fi
perf=build/app/metaroce-perf/metaroce-perf
if [ ! -x "$perf" ]; then
  echo "demo: $perf was not built (is libdpdk-dev installed?)" >&2
  exit 1
fi

# Hugepages when we can have them (root, 2 MiB pages), else ordinary memory.
mem_opts=(--no-huge -m 512)
if [ "$(id -u)" -eq 0 ] && [ -w /proc/sys/vm/nr_hugepages ]; then
  want=512  # 1 GiB: 256 MiB per process plus headroom
  have=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
  if [ "${have:-0}" -lt "$want" ]; then
    total=$(awk '/HugePages_Total/ {print $2}' /proc/meminfo)
    echo $((total + want - have)) > /proc/sys/vm/nr_hugepages || true
  fi
  if ! mount | grep -q ' type hugetlbfs '; then
    mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null || true
  fi
  have=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
  if [ "${have:-0}" -ge "$want" ] && mount | grep -q ' type hugetlbfs '; then
    mem_opts=(-m 256)
  fi
fi
if [ "${mem_opts[0]}" = "--no-huge" ]; then
  echo "demo: no hugepages available, running with --no-huge"
else
  echo "demo: running on 2 MiB hugepages"
fi

# One core per process when there are two.
server_core=0
client_core=$(( $(nproc) > 1 ? 1 : 0 ))
run_dir=$(mktemp -d /tmp/metaroce-demo.XXXXXX)
sock=$run_dir/memif.sock
server_pid=
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$run_dir"
}
trap cleanup EXIT

eal_common=(--no-pci "${mem_opts[@]}" --log-level='*:warning')
timeout 60 "$perf" -l "$server_core" "${eal_common[@]}" --file-prefix=metaroce-demo-server \
  --vdev=net_memif0,role=server,socket="$sock",bsize=8192,socket-abstract=no \
  -- "$test_name" -D "$duration" --report_gbits $tuning "$@" </dev/null >"$run_dir/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 50); do
  [ -S "$sock" ] && break
  sleep 0.1
done
echo "demo: server (pid $server_pid, core $server_core) and client (core $client_core) over net_memif"
rc=0
timeout 60 "$perf" -l "$client_core" "${eal_common[@]}" --file-prefix=metaroce-demo-client \
  --vdev=net_memif0,role=client,socket="$sock",bsize=8192,socket-abstract=no \
  -- "$test_name" -D "$duration" --report_gbits $tuning "$@" 10.0.0.1 </dev/null 2>&1 |
  grep -v '^TELEMETRY' || rc=$?
wait "$server_pid" || rc=$?
server_pid=
if [ "$rc" -ne 0 ]; then
  echo "demo: failed (exit $rc); server log:" >&2
  cat "$run_dir/server.log" >&2
fi
exit "$rc"
