#!/usr/bin/env bash
# Quick start: installs what is missing, builds, starts a metaroce-perf server and
# client connected by net_memif (two processes, one core each), runs write_bw for
# a few seconds and prints perftest's table. Works as root without a terminal (CI).
#   ./scripts/demo.sh [TEST] [extra metaroce-perf options]     e.g. ./scripts/demo.sh send_bw -s 4096
# Every step says what it does; the build shows ninja's progress; a change to the
# system (hugepage reservation, hugetlbfs mount) is announced with how to undo it.
#   DEMO_SECONDS=N     run time (default 3)
#   DEMO_HUGEPAGES=0   leave hugepages alone and run with --no-huge
#   DEMO_BUILD_DIR=D   meson build directory (default build)
set -euo pipefail
cd "$(dirname "$0")/.."

test_name=${1:-write_bw}
shift || true
duration=${DEMO_SECONDS:-3}
build=${DEMO_BUILD_DIR:-build}
# Two busy-polling processes on shared cores get descheduled for milliseconds:
# give the transport's retransmit timer room for that (see --help).
tuning="--min-rto-us 1000 --max-timeouts 20"

say() { echo "demo: $*"; }

say "[1/4] Debian packages: installing any that are missing (scripts/install-deps.sh)"
./scripts/install-deps.sh

say "[2/4] building in $build/ (the first build takes about 4 minutes on 2 cores)"
if [ ! -f "$build/build.ninja" ]; then
  setup_log=$(mktemp /tmp/metaroce-demo-setup.XXXXXX)
  if ! meson setup "$build" >"$setup_log" 2>&1; then
    cat "$setup_log" >&2
    exit 1
  fi
  say "configured $build/ (meson's output: $setup_log)"
fi
# ninja shows its own progress: one updating line on a terminal, a line per step in a log.
if ! ninja -C "$build"; then
  # The demo needs only metaroce-perf: build that alone before giving up.
  say "the full build failed (errors above); building metaroce-perf only"
  ninja -C "$build" app/metaroce-perf/metaroce-perf
fi
perf=$build/app/metaroce-perf/metaroce-perf
if [ ! -x "$perf" ]; then
  echo "demo: $perf was not built (is libdpdk-dev installed?)" >&2
  exit 1
fi

# Hugepages when we can have them (root, 2 MiB pages), else ordinary memory. What this
# changes is system-wide and outlives the demo, so each change is said before it is made,
# and undone when it did not give us the pages.
free_pages() { awk '/HugePages_Free/ {print $2}' /proc/meminfo; }
# grep without -q: under pipefail, -q stopping early would fail the pipe's writer.
hugetlbfs_mounted() { mount | grep ' type hugetlbfs ' >/dev/null; }
mem_opts=(--no-huge -m 512)
nr=/proc/sys/vm/nr_hugepages
want=512  # 1 GiB: 256 MiB per process plus headroom
if [ "${DEMO_HUGEPAGES:-1}" = 0 ]; then
  say "[3/4] memory: leaving hugepages alone (DEMO_HUGEPAGES=0)"
elif [ "$(id -u)" -ne 0 ] || [ ! -w "$nr" ]; then
  say "[3/4] memory: hugepages need root, so none"
else
  say "[3/4] memory: looking for $want free 2 MiB hugepages (DEMO_HUGEPAGES=0 skips this)"
  old_total=$(cat "$nr")
  raised=0
  mounted=0
  have=$(free_pages)
  if [ "${have:-0}" -lt "$want" ]; then
    new_total=$((old_total + want - ${have:-0}))
    say "system change: vm.nr_hugepages $old_total -> $new_total, reserving up to $(((new_total - old_total) * 2)) MiB (undo: echo $old_total > $nr)"
    echo "$new_total" >"$nr" 2>/dev/null || true
    raised=1
  fi
  if ! hugetlbfs_mounted; then
    say "system change: mounting hugetlbfs on /dev/hugepages (undo: umount /dev/hugepages)"
    mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null && mounted=1 || true
  fi
  have=$(free_pages)
  if [ "${have:-0}" -ge "$want" ] && hugetlbfs_mounted; then
    # Unlinked once mapped, so no hugepage files (and pages) outlive the processes.
    mem_opts=(-m 256 --huge-unlink)
  else
    say "got ${have:-0} free hugepages of $want; undoing the changes above"
    [ "$raised" -eq 0 ] || echo "$old_total" >"$nr" 2>/dev/null || true
    [ "$mounted" -eq 0 ] || umount /dev/hugepages 2>/dev/null || true
  fi
fi
if [ "${mem_opts[0]}" = "--no-huge" ]; then
  say "no hugepages available, running with --no-huge"
else
  say "running on 2 MiB hugepages"
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

say "[4/4] $test_name for $duration s between two metaroce-perf processes"
eal_common=(--no-pci "${mem_opts[@]}" --log-level='*:warning')
timeout 60 "$perf" -l "$server_core" "${eal_common[@]}" --file-prefix=metaroce-demo-server \
  --vdev=net_memif0,role=server,socket="$sock",bsize=8192,socket-abstract=no \
  -- "$test_name" -D "$duration" --report_gbits $tuning "$@" </dev/null >"$run_dir/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 50); do
  [ -S "$sock" ] && break
  sleep 0.1
done
say "server (pid $server_pid, core $server_core) and client (core $client_core) over net_memif"
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
