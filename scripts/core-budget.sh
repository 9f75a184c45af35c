#!/usr/bin/env bash
# The protocol core's per-packet budget, independent of how busy the machine is:
# runs metaroce-bench-core (two endpoints in one process, 4 KiB WRITEs, no I/O,
# a fake clock) under `valgrind --tool=callgrind` and prints instructions per data
# packet and per ACK, both endpoints together, the payload copies excluded.
#   ./scripts/core-budget.sh [--json] [--paths N] [--bytes N] [--build DIR]
# Method: callgrind counts only inside core_bench::transfer() (--toggle-collect), so
# set-up and the final byte check are left out. The payload copies (one gather into
# the frame on send, one placement into the region on receive) are the only calls
# to libc's memcpy/memmove on that path (small header copies are inlined), so their
# self cost is subtracted; so is the harness's own (metaroce::bench::*: the pull loop
# and the lambda handing each frame over, the work a driver's I/O does). Per ACK: a
# second run counts only inside pump_acks() (the receiver building its ACKs and the
# sender taking them in), minus the harness again, divided by ACKs. Per round trip: a
# third run, `--pings 10000` (2 B SENDs echoed as send_lat does, the echoes checked),
# counts inside ping_pong(): both endpoints' posts, packets, ACKs, completions and
# timers, minus the harness, divided by round trips.
# ns per packet comes from a run without valgrind: wall time, informational.
set -euo pipefail
cd "$(dirname "$0")/.."
json=0
build=${BUILD_DIR:-build}
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --json) json=1; shift ;;
    --paths|--bytes) args+=("$1" "$2"); shift 2 ;;
    --build) build=$2; shift 2 ;;
    -h|--help) sed -n 2,16p "$0"; exit 0 ;;
    *) echo "core-budget: unknown argument '$1'" >&2; exit 1 ;;
  esac
done
bin=$build/app/metaroce-bench-core/metaroce-bench-core
[ -x "$bin" ] || ninja -C "$build" app/metaroce-bench-core/metaroce-bench-core >&2
command -v valgrind >/dev/null || { echo "core-budget: valgrind missing (scripts/install-deps.sh)" >&2; exit 1; }

dir=$(mktemp -d /tmp/metaroce-core-budget.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$bin" --json "${args[@]}" >"$dir/native.json"
cg() { # cg NAME FUNCTION [ARGS]: callgrind counting only inside FUNCTION
  local name=$1 fn=$2
  shift 2
  valgrind --tool=callgrind --callgrind-out-file="$dir/$name.out" --toggle-collect="$fn" \
    "$bin" --json "${args[@]}" "$@" >"$dir/$name.json" 2>"$dir/$name.log" ||
    { echo "core-budget: the run under callgrind failed:" >&2; tail -5 "$dir/$name.log" >&2; exit 1; }
  callgrind_annotate "$dir/$name.out" >"$dir/$name.txt" 2>/dev/null
}
cg all '*core_bench::transfer*'
cg ack '*core_bench::pump_acks*'
cg ping '*core_bench::ping_pong*' --pings 10000

python3 - "$dir" "$json" <<'PY'
import json, re, sys
d, as_json = sys.argv[1], sys.argv[2] == "1"

def table(name):
    """(total Ir, {function: self Ir}) from callgrind_annotate's function table."""
    lines = open(f"{d}/{name}.txt").read().split("\n")
    total, fns, on = 0, {}, False
    for l in lines:
        m = re.match(r"\s*([\d,]+) .*PROGRAM TOTALS", l)
        if m:
            total = int(m.group(1).replace(",", ""))
        if re.match(r"^Ir\s+file:function", l):
            on = True
            continue
        if on:
            m = re.match(r"\s*([\d,]+) (\([ \d.]+%\))?\s+(\S.*)$", l)
            if m:
                fn = re.sub(r" \[/.*\]$", "", m.group(3)).split(":", 1)[-1]
                fns[fn] = fns.get(fn, 0) + int(m.group(1).replace(",", ""))
            elif fns and l.startswith("-"):
                break
    return total, fns

native = json.load(open(f"{d}/native.json"))
run = json.load(open(f"{d}/all.json"))
total, fns = table("all")
copy = sum(v for f, v in fns.items() if re.search(r"mem(cpy|move)", f))
harness = lambda t: sum(v for f, v in t.items() if f.startswith("metaroce::bench::"))
ack_total, ack_fns = table("ack")
ack_total -= harness(ack_fns)
total -= harness(fns)
pkts, acks = run["packets"], run["acks"]
ping = json.load(open(f"{d}/ping.json"))
ping_total, ping_fns = table("ping")
ping_total -= harness(ping_fns)
out = {
    "core_ns_per_packet": native["core_ns_per_packet"],
    "core_instructions_per_packet": round((total - copy) / pkts),
    "core_instructions_per_ack": round(ack_total / acks) if acks else 0,
    "copy_instructions_per_packet": round(copy / pkts),
    "core_instructions_per_round_trip": round(ping_total / ping["round_trips"]),
    "ping_bytes": ping["ping_bytes"],
    "paths": run["paths"],
    "packets": pkts,
    "acks": acks,
    "bytes": run["bytes"],
}
if as_json:
    print(json.dumps(out))
else:
    print(f"{out['paths']} paths, {out['bytes']} bytes of 4 KiB WRITEs: {pkts} data packets, {acks} ACKs")
    print(f"  instructions per data packet, both endpoints, copies excluded: {out['core_instructions_per_packet']}")
    print(f"  instructions per ACK (built and taken in):                      {out['core_instructions_per_ack']}")
    print(f"  payload copies (excluded above), per data packet:               {out['copy_instructions_per_packet']}")
    print(f"  wall ns per data packet (this machine, copies included):        {out['core_ns_per_packet']}")
    print(f"  instructions per {out['ping_bytes']} B SEND round trip (posts, 2 data, 2 ACKs, completions):"
          f" {out['core_instructions_per_round_trip']}")
    top = sorted(((v, f) for f, v in fns.items()
                  if not re.search(r"mem(cpy|move)", f) and not f.startswith("metaroce::bench::")), reverse=True)[:8]
    print("  top functions (self instructions per data packet):")
    for v, f in top:
        print(f"    {v / pkts:7.1f}  {re.sub(r'[(].*', '', f)}")
PY
