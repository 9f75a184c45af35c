#!/usr/bin/env bash
# Measures, over one net_memif link between two processes (one core each):
#   raw wire   : dpdk-testpmd txonly -> rxonly at the transport's full frame size
#   transport  : metaroce-perf write_bw and send_bw at 4 KiB and 64 KiB messages
#   latency    : metaroce-perf --raw send_lat (bare frames ping-pong) vs send_lat
# and prints each with its ratio to the raw figure.
#   ./scripts/bench.sh [--out FILE] [--seconds N]
set -euo pipefail
cd "$(dirname "$0")/.."
out=
secs=4
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --seconds) secs=$2; shift 2 ;;
    -h|--help) sed -n 2,8p "$0"; exit 0 ;;
    *) echo "bench: unknown argument '$1'" >&2; exit 1 ;;
  esac
done
perf=build/app/metaroce-perf/metaroce-perf
[ -x "$perf" ] || ninja -C build app/metaroce-perf/metaroce-perf
command -v dpdk-testpmd >/dev/null || { echo "bench: dpdk-testpmd missing (apt-get install dpdk-dev)" >&2; exit 1; }

dir=$(mktemp -d /tmp/metaroce-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
eal=(--no-pci --no-huge -m 512 --log-level='*:warning')
mtu=4096
frame=$((42 + 20 + 24 + 16 + 4 + mtu))   # Eth/IPv4/UDP + largest transport headers + payload
vdev() { echo "net_memif0,role=$1,socket=$dir/m.sock,socket-abstract=no,bsize=8192"; }
wait_sock() { for _ in $(seq 100); do [ -S "$dir/m.sock" ] && return; sleep 0.1; done; }

# --- raw wire: testpmd needs a main lcore plus a forwarding lcore per process.
rm -f "$dir/m.sock"
timeout $((secs + 20)) dpdk-testpmd -l 0,1 --main-lcore 0 "${eal[@]}" --file-prefix=bench-rx \
  --vdev="$(vdev server)" -- --forward-mode=rxonly -a --stats-period 1 --mbuf-size=9000 \
  --total-num-mbufs=16384 --txd=1024 --rxd=1024 </dev/null >"$dir/rx.log" 2>&1 &
rxpid=$!
wait_sock
timeout $((secs + 3)) dpdk-testpmd -l 0,1 --main-lcore 1 "${eal[@]}" --file-prefix=bench-tx \
  --vdev="$(vdev client)" -- --forward-mode=txonly --mbuf-size=9000 --txpkts=$frame -a \
  --total-num-mbufs=16384 --txd=1024 --rxd=1024 </dev/null >"$dir/tx.log" 2>&1 || true
kill -INT $rxpid 2>/dev/null || true; wait $rxpid 2>/dev/null || true
raw_gbps=$(grep -o 'Rx-bps: *[0-9]*' "$dir/rx.log" | awk '{print $2}' | sort -n | tail -3 | head -1 |
  awk '{printf "%.3f", $1 / 1e9}')

# --- metaroce-perf pairs: server on core 0, client on core 1.
pair() { # pair NAME TEST [options]; writes $dir/NAME.json from the client
  local name=$1; shift
  rm -f "$dir/m.sock"
  timeout $((secs + 40)) "$perf" -l 0 "${eal[@]}" --file-prefix=bench-s --vdev="$(vdev server)" \
    -- "$@" --timeout 20 --min-rto-us 1000 --max-timeouts 20 </dev/null >"$dir/$name.server.log" 2>&1 &
  local spid=$!
  wait_sock
  timeout $((secs + 40)) "$perf" -l 1 "${eal[@]}" --file-prefix=bench-c --vdev="$(vdev client)" \
    -- "$@" --timeout 20 --min-rto-us 1000 --max-timeouts 20 --out_json_file="$dir/$name.json" 10.0.0.1 </dev/null >"$dir/$name.log" 2>&1 || true
  wait $spid 2>/dev/null || true
  [ -s "$dir/$name.json" ] || { echo "bench: $name failed:" >&2; tail -3 "$dir/$name.log" >&2; }
}
field() { # field NAME KEY
  python3 -c 'import json,sys
try:
    r = json.load(open(sys.argv[1]))["results"]; print("%.3f" % r[sys.argv[2]])
except Exception: print("null")' "$dir/$1.json" "$2"
}
raw_source="dpdk-testpmd txonly->rxonly"
if [ -z "$raw_gbps" ] || [ "$(echo "$raw_gbps" | tr -d '0.')" = "" ]; then
  # testpmd did not carry frames here: fall back to metaroce-perf --raw, bare
  # frames of the same size streamed without the transport (what the server got).
  raw_source="metaroce-perf --raw write_bw (testpmd failed)"
  pair rawbw write_bw --raw -D "$secs" --report_gbits
  raw_gbps=$(awk '/#bytes/ {getline; printf "%.3f", $4; exit}' "$dir/rawbw.server.log")
fi
pair wr4k write_bw -s 4096 -D "$secs" --report_gbits
pair wr64k write_bw -s 65536 -D "$secs" --report_gbits
pair sd4k send_bw -s 4096 -D "$secs" --report_gbits
pair sd64k send_bw -s 65536 -D "$secs" --report_gbits
pair rawlat send_lat --raw -s 2 -n 10000
pair lat send_lat -s 2 -n 10000

bw=BW_average # Gb/s with --report_gbits
wr4k=$(field wr4k "$bw"); wr64k=$(field wr64k "$bw")
sd4k=$(field sd4k "$bw"); sd64k=$(field sd64k "$bw")
rawlat=$(field rawlat "t_typical"); lat=$(field lat "t_typical")

ratio() { python3 -c 'import sys
a, b = sys.argv[1], sys.argv[2]
print("n/a" if "null" in (a, b) or float(b) == 0 else "%.2f" % (float(a) / float(b)))' "$1" "$2"; }
printf '\nmetaroce bench: one net_memif link, one core per side, frame %d bytes (MTU %d)\n' "$frame" "$mtu"
printf '%-40s %12s %10s\n' "measurement" "value" "ratio"
printf '%-40s %12s %10s\n' "raw memif Gb/s ($raw_source)" "$raw_gbps" "1.00"
printf '%-40s %12s %10s\n' "write_bw 4 KiB  Gb/s" "$wr4k" "$(ratio "$wr4k" "$raw_gbps")"
printf '%-40s %12s %10s\n' "write_bw 64 KiB Gb/s" "$wr64k" "$(ratio "$wr64k" "$raw_gbps")"
printf '%-40s %12s %10s\n' "send_bw 4 KiB   Gb/s" "$sd4k" "$(ratio "$sd4k" "$raw_gbps")"
printf '%-40s %12s %10s\n' "send_bw 64 KiB  Gb/s" "$sd64k" "$(ratio "$sd64k" "$raw_gbps")"
printf '%-40s %12s %10s\n' "raw ping-pong half RTT us (2 B)" "$rawlat" "1.00"
printf '%-40s %12s %10s\n' "send_lat half RTT us (2 B)" "$lat" "$(ratio "$lat" "$rawlat")"
if [ -n "$out" ]; then
  python3 - "$out" "$frame" "$raw_gbps" "$wr4k" "$wr64k" "$sd4k" "$sd64k" "$rawlat" "$lat" "$secs" "$raw_source" <<'PY'
import json, sys
def num(s):
    return None if s in ("null", "") else float(s)
o, frame, raw, w4, w64, s4, s64, rl, l = sys.argv[1:10]
json.dump({"frame_bytes": int(frame), "raw_gbps": num(raw), "raw_source": sys.argv[11],
           "write_bw_gbps": {"4k": num(w4), "64k": num(w64)},
           "send_bw_gbps": {"4k": num(s4), "64k": num(s64)},
           "raw_half_rtt_us": num(rl), "send_lat_half_rtt_us": num(l),
           "seconds_per_run": int(sys.argv[10])}, open(o, "w"), indent=2)
PY
  echo "wrote $out"
fi
