#!/usr/bin/env bash
# Measures, over one net_memif link between two processes (one core each by default):
#   raw wire   : dpdk-testpmd txonly -> rxonly at the transport's full frame size
#   transport  : metaroce-perf write_bw and send_bw at 4 KiB and 64 KiB, read_bw at 64 KiB
#   latency    : metaroce-perf --raw send_lat (bare frames ping-pong) vs send_lat, write_lat
#   core       : scripts/core-budget.sh (instructions per data packet, no I/O), if present
# Raw and transport runs alternate (raw, ours, raw, ours, ...) for --rounds rounds, so a
# noisy neighbour hurts both alike; it prints the medians and the ratio of the medians.
#   ./scripts/bench.sh [--out FILE] [--seconds N] [--rounds N] [--workers N] [--quick]
#                      [--build DIR] [--no-core] [--hugepages | --memif-zero-copy]
# --workers N: lcores (transport workers) per metaroce-perf process, and -q N (more
#   workers than cores: they float over all cores with --yield-idle).
# --quick: one round of 1-second runs, for the test suite (checks the mechanics).
# --hugepages: both sides on hugepages instead of --no-huge (as root it reserves 512
#   2 MiB pages when fewer are free, and gives back what it took); --memif-zero-copy:
#   that and memif's zero-copy=yes on the client side (--single-file-segments), raw
#   testpmd included.
set -euo pipefail
cd "$(dirname "$0")/.."
out=
secs=2
rounds=3
workers=1
core=1
memory=no-huge
build=${BUILD_DIR:-build}
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --seconds) secs=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --quick) secs=1; rounds=1; shift ;;
    --build) build=$2; shift 2 ;;
    --no-core) core=0; shift ;;
    --hugepages) memory=hugepages; shift ;;
    --memif-zero-copy) memory=memif-zero-copy; shift ;;
    -h|--help) sed -n 2,17p "$0"; exit 0 ;;
    *) echo "bench: unknown argument '$1'" >&2; exit 1 ;;
  esac
done
perf=$build/app/metaroce-perf/metaroce-perf
[ -x "$perf" ] || ninja -C "$build" app/metaroce-perf/metaroce-perf

dir=$(mktemp -d /tmp/metaroce-bench.XXXXXX)
pages_before=$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo 0)
pages_set=0
cleanup() {
  [ "$pages_set" = 1 ] && echo "$pages_before" >/proc/sys/vm/nr_hugepages
  rm -rf "$dir"
}
trap cleanup EXIT
tag=$$ # file prefixes of our own, so two benches (or a bench and a test) never collide
eal=(--no-pci -m 512 --log-level='*:warning')
zc_arg=
if [ "$memory" = no-huge ]; then
  eal+=(--no-huge)
else
  # Two processes of -m 512 each: 1 GiB of 2 MiB pages.
  free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
  if [ "${free:-0}" -lt 512 ]; then
    [ "$(id -u)" -eq 0 ] || { echo "bench: --$memory needs 512 free hugepages (or root to reserve them)" >&2; exit 1; }
    echo $((pages_before + 512 - ${free:-0})) >/proc/sys/vm/nr_hugepages && pages_set=1
  fi
  grep -q ' /dev/hugepages hugetlbfs' /proc/mounts ||
    { echo "bench: hugetlbfs is not mounted on /dev/hugepages" >&2; exit 1; }
  if [ "$memory" = memif-zero-copy ]; then
    eal+=(--single-file-segments) # memif shares DPDK's memory as one file
    zc_arg=,zero-copy=yes
  fi
fi
mtu=4096
frame=$((42 + 20 + 24 + 16 + 4 + mtu))   # Eth/IPv4/UDP + largest transport headers + payload
vdev() { # vdev ROLE: the client's side carries memif's zero copy, when asked
  echo "net_memif0,role=$1,socket=$dir/m.sock,socket-abstract=no,bsize=8192$([ "$1" = client ] && echo "$zc_arg")"
}
wait_sock() { for _ in $(seq 100); do [ -S "$dir/m.sock" ] && return; sleep 0.1; done; }
ncpu=$(nproc)
all_cpus="0-$((ncpu - 1))"
share=() # both processes' workers fit on their own cores, or they float and yield
[ $((2 * workers)) -gt "$ncpu" ] && [ "$workers" -gt 1 ] && share=(--yield-idle)
lcores() { # lcores FIRST_CPU: --lcores mapping worker lcores 0..workers-1 onto cpus
  local m= i
  for ((i = 0; i < workers; i++)); do
    if [ ${#share[@]} -gt 0 ]; then m+="${m:+,}$i@($all_cpus)"; else m+="${m:+,}$i@$(((i + $1) % ncpu))"; fi
  done
  echo "--lcores=$m"
}
qps=()
[ "$workers" -gt 1 ] && qps=(-q "$workers")

# --- raw wire. testpmd runs until a signal only with --stats-period (otherwise it
# waits for Enter, reads EOF from stdin and stops at once). The receiver prints
# Rx-bps every second; the steady samples are those between the first and the last
# interval that carried anything (both partial), and their median is the figure.
testpmd=$(command -v dpdk-testpmd || true)
raw_source="dpdk-testpmd txonly->rxonly, median of steady 1 s Rx-bps samples"
raw_once() { # raw_once N: one testpmd run; appends "gbps mpps" to $dir/raw.txt
  rm -f "$dir/m.sock"
  # In a subshell that keeps the exit status: testpmd's rxonly side often crashes while
  # it shuts down after its memif peer has gone (DPDK 22.11), after it printed every
  # sample; the shell's own "Segmentation fault" report then goes to the log, not the
  # console, and one line below says what happened.
  ( timeout -s INT $((secs + 20)) "$testpmd" -l 0,1 --main-lcore 0 "${eal[@]}" --file-prefix=bench-rx$tag \
      --vdev="$(vdev server)" -- --forward-mode=rxonly -a --stats-period 1 --mbuf-size=9000 \
      --total-num-mbufs=16384 --txd=1024 --rxd=1024 </dev/null; echo $? >"$dir/rx$1.rc" ) >"$dir/rx$1.log" 2>&1 &
  local rxpid=$!
  wait_sock
  # --mbuf-size before --txpkts: testpmd checks the frame against it while parsing.
  timeout -s INT $((secs + 5)) "$testpmd" -l 0,1 --main-lcore 1 "${eal[@]}" --file-prefix=bench-tx$tag \
    --vdev="$(vdev client)" -- --forward-mode=txonly --mbuf-size=9000 --txpkts=$frame -a \
    --stats-period 1 --total-num-mbufs=16384 --txd=1024 --rxd=1024 </dev/null >"$dir/tx$1.log" 2>&1 || true
  pkill -INT -f -- "^timeout .*--file-prefix=bench-rx$tag " 2>/dev/null || true # timeout passes it on
  wait $rxpid 2>/dev/null || true
  if [ "$(cat "$dir/rx$1.rc" 2>/dev/null)" = 139 ]; then
    echo "bench: round $1: testpmd rxonly crashed while exiting (after its last sample; the figure stands)" >&2
  fi
  python3 - "$dir/rx$1.log" >>"$dir/raw.txt" <<'PY'
import re, statistics, sys
t = open(sys.argv[1], errors="replace").read()
s = [(int(p), int(b)) for p, b in re.findall(r"Rx-pps:\s*(\d+)\s+Rx-bps:\s*(\d+)", t)]
on = [i for i, (p, b) in enumerate(s) if b > 0]
steady = s[on[0] + 1:on[-1]] if len(on) > 2 else [s[i] for i in on]
steady = [x for x in steady if x[1] > 0] or [(0, 0)]
print("%.3f %.4f" % (statistics.median(b for _, b in steady) / 1e9,
                     statistics.median(p for p, _ in steady) / 1e6))
PY
}

# --- metaroce-perf pairs: server's workers from cpu 0, client's from cpu `workers`.
pair() { # pair NAME TEST [options]: one try, and a second if the first gave no result
  pair_once "$@"
  [ -s "$dir/$1.json" ] || { echo "bench: $1: trying once more" >&2; pair_once "$@"; }
}
pair_once() { # pair_once NAME TEST [options]; writes $dir/NAME.json from the client
  local name=$1; shift
  rm -f "$dir/m.sock" "$dir/$name.json"
  timeout $((secs + 40)) "$perf" "$(lcores 0)" "${eal[@]}" --file-prefix=bench-s$tag --vdev="$(vdev server)" \
    -- "$@" "${share[@]}" --timeout 20 --min-rto-us 1000 --max-timeouts 20 </dev/null >"$dir/$name.server.log" 2>&1 &
  local spid=$!
  wait_sock
  timeout $((secs + 40)) "$perf" "$(lcores "$workers")" "${eal[@]}" --file-prefix=bench-c$tag \
    --vdev="$(vdev client)" -- "$@" "${share[@]}" --timeout 20 --min-rto-us 1000 --max-timeouts 20 \
    --out_json_file="$dir/$name.json" 10.0.0.1 </dev/null >"$dir/$name.log" 2>&1 || true
  wait $spid 2>/dev/null || true
  [ -s "$dir/$name.json" ] || { echo "bench: $name failed:" >&2; tail -3 "$dir/$name.log" >&2; }
}
field() { # field NAME KEY: one number from a client's JSON, or null
  python3 -c 'import json,sys
try:
    r = json.load(open(sys.argv[1]))["results"]; print("%.3f" % r[sys.argv[2]])
except Exception: print("null")' "$dir/$1.json" "$2"
}
keep() { echo "$2" >>"$dir/$1.txt"; } # keep NAME VALUE: one round's figure

: >"$dir/raw.txt"
for ((r = 1; r <= rounds; r++)); do
  echo "bench: round $r of $rounds" >&2
  if [ -n "$testpmd" ]; then
    raw_once "$r"
    if [ "$(tail -1 "$dir/raw.txt" | cut -d' ' -f1)" = "0.000" ]; then
      # A loaded machine can take longer to start testpmd than the run lasts.
      echo "bench: testpmd carried nothing in round $r; trying once more" >&2
      sed -i '$d' "$dir/raw.txt"
      raw_once "$r"
    fi
  else
    # No testpmd: bare frames of the same size streamed by metaroce-perf --raw, without
    # the transport (what the server got).
    raw_source="metaroce-perf --raw write_bw (dpdk-testpmd missing)"
    pair rawbw write_bw --raw -D "$secs" --report_gbits
    awk '/#bytes/ {getline; printf "%.3f null\n", $4; exit}' "$dir/rawbw.server.log" >>"$dir/raw.txt"
  fi
  bw=(-D "$secs" --report_gbits "${qps[@]}")
  pair wr4k write_bw -s 4096 "${bw[@]}";   keep wr4k "$(field wr4k BW_average)"
  pair wr64k write_bw -s 65536 "${bw[@]}"; keep wr64k "$(field wr64k BW_average)"
  pair sd4k send_bw -s 4096 "${bw[@]}";    keep sd4k "$(field sd4k BW_average)"
  pair sd64k send_bw -s 65536 "${bw[@]}";  keep sd64k "$(field sd64k BW_average)"
  pair rd64k read_bw -s 65536 "${bw[@]}";  keep rd64k "$(field rd64k BW_average)"
  pair rawlat send_lat --raw -s 2 -n 10000; keep rawlat "$(field rawlat t_typical)"
  pair slat send_lat -s 2 -n 10000;         keep slat "$(field slat t_typical)"
  pair wlat write_lat -s 2 -n 10000;        keep wlat "$(field wlat t_typical)"
done

# --- the core's budget (no I/O): scripts/core-budget.sh, when there and valgrind is.
core_note="scripts/core-budget.sh --json"
echo '{}' >"$dir/core.json"
if [ "$core" -eq 0 ]; then
  core_note="skipped (--no-core)"
elif [ ! -x scripts/core-budget.sh ]; then
  core_note="scripts/core-budget.sh missing"
elif ! BUILD_DIR=$build scripts/core-budget.sh --json --build "$build" >"$dir/core.json" 2>"$dir/core.log"; then
  core_note="scripts/core-budget.sh failed: $(tail -1 "$dir/core.log")"
  echo '{}' >"$dir/core.json"
fi

python3 - "$dir" "$out" "$frame" "$mtu" "$secs" "$rounds" "$workers" "$raw_source" "$core_note" "$memory" <<'PY'
import json, statistics, sys
d, out, frame, mtu, secs, rounds, workers, raw_source, core_note, memory = sys.argv[1:11]

def runs(name):
    try:
        v = [l.split()[0] for l in open(f"{d}/{name}.txt") if l.strip()]
    except OSError:
        return []
    return [None if x == "null" else float(x) for x in v]

def med(v):
    v = [x for x in v if x is not None]
    return round(statistics.median(v), 3) if v else None

def ratio(a, b):
    return None if a is None or not b else round(a / b, 2)

raw_runs = runs("raw")
raw_mpps = [float(l.split()[1]) for l in open(f"{d}/raw.txt") if l.split()[1:] and l.split()[1] != "null"]
R = {k: runs(k) for k in ("wr4k", "wr64k", "sd4k", "sd64k", "rd64k", "rawlat", "slat", "wlat")}
M = {k: med(v) for k, v in R.items()}
raw = med(raw_runs)
core = json.load(open(f"{d}/core.json"))

def fmt(x):
    return "null" if x is None else "%.3f" % x

print(f"\nmetaroce bench: one net_memif link, {workers} worker(s) per side, frame {frame} bytes "
      f"(MTU {mtu}), {rounds} alternating round(s) of {secs} s runs, memory {memory}; medians")
print("%-44s %12s %8s  %s" % ("measurement", "median", "ratio", "runs"))
def row(label, v, base, rs):
    r = ratio(v, base)
    print("%-44s %12s %8s  %s" % (label, fmt(v), "n/a" if r is None else "%.2f" % r,
                                   " ".join(fmt(x) for x in rs)))
row(f"raw memif Gb/s", raw, raw, raw_runs)
row("write_bw 4 KiB  Gb/s", M["wr4k"], raw, R["wr4k"])
row("write_bw 64 KiB Gb/s", M["wr64k"], raw, R["wr64k"])
row("send_bw 4 KiB   Gb/s", M["sd4k"], raw, R["sd4k"])
row("send_bw 64 KiB  Gb/s", M["sd64k"], raw, R["sd64k"])
row("read_bw 64 KiB  Gb/s", M["rd64k"], raw, R["rd64k"])
row("raw ping-pong half RTT us (2 B)", M["rawlat"], M["rawlat"], R["rawlat"])
row("send_lat half RTT us (2 B)", M["slat"], M["rawlat"], R["slat"])
row("write_lat half RTT us (2 B)", M["wlat"], M["rawlat"], R["wlat"])
print(f" raw: {raw_source}")
print(" core instructions per data packet (both endpoints, copies excluded): %s; ns per packet: %s (%s)"
      % (core.get("core_instructions_per_packet", "null"), core.get("core_ns_per_packet", "null"), core_note))
print(" core instructions per 2 B SEND round trip (both endpoints, send_lat's work): %s"
      % core.get("core_instructions_per_round_trip", "null"))
if out:
    json.dump({
        "frame_bytes": int(frame), "raw_gbps": raw, "raw_source": raw_source,
        "raw_mpps": med(raw_mpps),
        "write_bw_gbps": {"4k": M["wr4k"], "64k": M["wr64k"]},
        "send_bw_gbps": {"4k": M["sd4k"], "64k": M["sd64k"]},
        "read_bw_gbps": {"64k": M["rd64k"]},
        "raw_half_rtt_us": M["rawlat"], "send_lat_half_rtt_us": M["slat"],
        "write_lat_half_rtt_us": M["wlat"],
        "ratios": {"write_bw_64k": ratio(M["wr64k"], raw), "send_bw_64k": ratio(M["sd64k"], raw),
                   "read_bw_64k": ratio(M["rd64k"], raw), "send_lat": ratio(M["slat"], M["rawlat"]),
                   "write_lat": ratio(M["wlat"], M["rawlat"])},
        "runs": {"raw_gbps": raw_runs, **R},
        "workers": int(workers), "rounds": int(rounds), "seconds_per_run": int(secs),
        "memory": memory,
        "core_ns_per_packet": core.get("core_ns_per_packet"),
        "core_instructions_per_packet": core.get("core_instructions_per_packet"),
        "core_instructions_per_round_trip": core.get("core_instructions_per_round_trip"),
        "core_source": core_note,
    }, open(out, "w"), indent=2)
    print(f"wrote {out}")
PY
