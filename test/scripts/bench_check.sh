#!/usr/bin/env bash
# ./scripts/bench.sh --quick against the suite's build: every run carries data and the
# table and --out JSON have their shape (dpdk-testpmd moved frames, each transport run
# and latency run gave a figure, ratios computed). The figures are not judged: the
# machine is shared. --no-core: the core's budget has its own test (bench_core).
#   bench_check.sh BUILD_DIR
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d /tmp/metaroce-bench-check.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$src/scripts/bench.sh" --quick --no-core --build "$1" --out "$dir/b.json" >"$dir/out" 2>&1
rc=$?
fail=0
bad() { echo "FAIL: $*"; fail=1; }
[ "$rc" -eq 0 ] || bad "bench.sh --quick exited $rc"
num='[0-9]+\.[0-9]+'
for r in "raw memif Gb/s" "write_bw 4 KiB  Gb/s" "write_bw 64 KiB Gb/s" "send_bw 4 KiB   Gb/s" \
         "send_bw 64 KiB  Gb/s" "read_bw 64 KiB  Gb/s" "raw ping-pong half RTT us \(2 B\)" \
         "send_lat half RTT us \(2 B\)" "write_lat half RTT us \(2 B\)"; do
  grep -qE "^$r +$num +$num +$num\$" "$dir/out" || bad "no row with figures: '$r'"
done
grep -q "^ raw: dpdk-testpmd txonly->rxonly" "$dir/out" || bad "the raw figure is not testpmd's"
python3 - "$dir/b.json" <<'PY' || fail=1
import json, sys
j = json.load(open(sys.argv[1]))
need = ["frame_bytes", "raw_gbps", "raw_source", "write_bw_gbps", "send_bw_gbps", "read_bw_gbps",
        "raw_half_rtt_us", "send_lat_half_rtt_us", "write_lat_half_rtt_us", "workers",
        "core_ns_per_packet", "core_instructions_per_packet", "seconds_per_run", "ratios", "runs"]
bad = [k for k in need if k not in j]
nums = [j["raw_gbps"], j["write_bw_gbps"]["4k"], j["write_bw_gbps"]["64k"], j["send_bw_gbps"]["4k"],
        j["send_bw_gbps"]["64k"], j["read_bw_gbps"]["64k"], j["raw_half_rtt_us"],
        j["send_lat_half_rtt_us"], j["write_lat_half_rtt_us"]] if not bad else []
if bad or any(not isinstance(x, (int, float)) or x <= 0 for x in nums) or j["workers"] != 1:
    print("FAIL: JSON:", "missing", bad, "figures", nums)
    sys.exit(1)
PY
if [ "$fail" -ne 0 ]; then
  echo "--- bench.sh --quick output"
  cat "$dir/out"
fi
exit "$fail"
