#!/usr/bin/env bash
# Soak: one metaroce-perf pair on the kernel fabric (scripts/kfabric.sh) for a
# bounded time, under loss, ECN marks, duplicates and reordering (our BPF program on
# every middle link) and a plane flap every few seconds; data verified throughout
# and memory flat. Not part of the test suites.
#
# The client runs write_bw over every size from 2 B to 8 MiB (-a), each size for a
# slice of the run, and the server verifies the landed bytes after every size (23
# verdicts). A plane flap takes one host link down at its leaf and brings it back,
# alternating planes and sides, never two at once. RSS of both processes is sampled
# every 2 s; after the warm-up it may grow by at most RSS_BOUND_KB. The warm-up lasts
# until the 64 KiB size has run: each side first touches its data buffer (DPDK hands
# out untouched memory for rte_zmalloc) as message size x tx depth grows, up to 8 MiB.
#
# Usage: scripts/soak.sh [MINUTES] [options]     (MINUTES default 3, needs root)
#   --build DIR        build directory with app/metaroce-perf (default: build)
#   --loss PCT --ecn PCT --dup PCT --reorder PCT   impairments (0.5 1 0.2 0.5)
#   --flap-every SEC   time between flaps (5); --flap-hold SEC  time a link stays down (1.5)
#   --rss-bound-kb KB  allowed RSS growth after the warm-up (4096)
#   --keep             keep the logs (their directory is printed)
# Exits 0 when the run completed, the data verified, no connection failed and the
# memory stayed flat; prints a summary either way.
set -u
here=$(cd "$(dirname "$0")" && pwd)
minutes=3
build=$here/../build
loss=0.5; ecn=1; dup=0.2; reorder=0.5
flap_every=5; flap_hold=1.5; rss_bound=4096; keep=0
die() { echo "soak: $*" >&2; exit 2; }
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+([.][0-9]+)?$ ]]; then minutes=$1; shift; fi
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --loss) loss=$2; shift 2 ;;
    --ecn) ecn=$2; shift 2 ;;
    --dup) dup=$2; shift 2 ;;
    --reorder) reorder=$2; shift 2 ;;
    --flap-every) flap_every=$2; shift 2 ;;
    --flap-hold) flap_hold=$2; shift 2 ;;
    --rss-bound-kb) rss_bound=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces)"
perf=$build/app/metaroce-perf/metaroce-perf
[ -x "$perf" ] || die "no $perf (build first, or --build DIR)"
awk -v f="$flap_hold" -v e="$flap_every" 'BEGIN { exit !(f > 0 && e > f) }' ||
  die "--flap-hold must be positive and shorter than --flap-every"

prefix=soak$$
kf() { "$here/kfabric.sh" --prefix "$prefix" "$@"; }
dir=$(mktemp -d /tmp/metaroce-soak.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  kf down >/dev/null 2>&1
  if [ $keep -eq 1 ]; then echo "logs kept in $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

kf --planes 2 up || exit 1
eval "$(kf env)"
kf impair --loss "$loss" --ecn "$ecn" --dup "$dup" --reorder "$reorder" || exit 1

sizes=23 # -a: 2 B .. 8 MiB
# Each size also costs 1-4 s (load dependent) of control exchanges, draining under loss
# and verification: aim the total at MINUTES.
slice=$(awk -v m="$minutes" -v n=$sizes 'BEGIN { s = int(m * 60 / n - 3 + 0.5); print (s < 1 ? 1 : s) }')
common=(write_bw -a -D "$slice" --mtu 1400 --planes 2 --min-rto-us 5000 --max-timeouts 20
        --timeout 60 --plane-log --counters)
eal() { # file-prefix lcore
  echo "-l $2 --no-pci --no-huge -m 512 --file-prefix=$1 --log-level=*:warning" \
       "--vdev=net_af_packet0,iface=p0 --vdev=net_af_packet1,iface=p1"
}
cores=$(( $(nproc) > 1 ? 1 : 0 ))
echo "soak: $minutes min: write_bw, 23 sizes x $slice s, loss $loss % ecn $ecn % dup $dup %" \
     "reorder $reorder %, a plane flap every $flap_every s (down $flap_hold s)"
# `ip netns exec` and stdbuf exec the program: $! is metaroce-perf's own pid.
# shellcheck disable=SC2046
ip netns exec "$KF_NS_A" stdbuf -oL "$perf" $(eal "$prefix-s" 0) -- "${common[@]}" \
  --gateway "$KF_GW_A" </dev/null >"$dir/server.out" 2>"$dir/server.err" &
spid=$!; pids+=("$spid")
sleep 0.5
# shellcheck disable=SC2046
ip netns exec "$KF_NS_B" stdbuf -oL "$perf" $(eal "$prefix-c" $cores) -- "${common[@]}" \
  --gateway "$KF_GW_B" 10.0.0.1 </dev/null >"$dir/client.out" 2>"$dir/client.err" &
cpid=$!; pids+=("$cpid")
start=$(date +%s)

# Plane flaps: plane 0 at A, plane 1 at B, plane 0 at B, plane 1 at A, ...
(
  k=0
  sleep "$flap_every"
  while kill -0 $cpid 2>/dev/null; do
    case $((k % 4)) in 0) plane=0 s=a ;; 1) plane=1 s=b ;; 2) plane=0 s=b ;; 3) plane=1 s=a ;; esac
    kf link $plane down $s >> "$dir/flaps.txt" # "link PLANE SIDE down T0 T1"
    sleep "$flap_hold"
    kf link $plane up $s >> "$dir/flaps.txt"
    k=$((k + 1))
    sleep "$(awk -v e="$flap_every" -v h="$flap_hold" 'BEGIN { print e - h }')"
  done
) &
pids+=($!)

# RSS of both processes every 2 s.
(
  while kill -0 $cpid 2>/dev/null; do
    rs=$(awk '/^VmRSS/ {print $2}' /proc/$spid/status 2>/dev/null)
    rc=$(awk '/^VmRSS/ {print $2}' /proc/$cpid/status 2>/dev/null)
    warm=0; grep -q '^ 65536 ' "$dir/client.out" 2>/dev/null && warm=1
    [ -n "$rs" ] && [ -n "$rc" ] && echo "$(( $(date +%s) - start )) $rs $rc $warm" >> "$dir/rss.txt"
    sleep 2
  done
) &
pids+=($!)

# Watchdog: the run plus a generous margin.
limit=$(( sizes * slice + 180 ))
while kill -0 $cpid 2>/dev/null; do
  if [ $(( $(date +%s) - start )) -gt $limit ]; then
    echo "soak: client still running after $limit s: stopping it"
    kill $cpid $spid 2>/dev/null
    break
  fi
  sleep 1
done
wait $cpid; crc=$?
for _ in $(seq 50); do kill -0 $spid 2>/dev/null || break; sleep 0.1; done
kill $spid 2>/dev/null
wait $spid; src=$?
kf status > "$dir/fabric.txt"
elapsed=$(( $(date +%s) - start ))
echo "=== client (exit $crc)"; grep -v '^plane_log ' "$dir/client.out"; grep -v '^ ' "$dir/client.err" | grep -v '^[{}]'
echo "=== server (exit $src)"; grep -E 'verification|error' "$dir/server.out" "$dir/server.err"
echo "=== fabric"; cat "$dir/fabric.txt"
python3 - "$dir" "$crc" "$src" "$rss_bound" "$elapsed" <<'PY'
import json, re, sys
d, crc, src, bound, elapsed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def counters(path):
    t = open(path, errors="replace").read()
    i = t.find('{\n "')
    return json.JSONDecoder().raw_decode(t[i:])[0] if i >= 0 else None
def plane_log(path):
    for line in open(path, errors="replace"):
        if line.startswith("plane_log "):
            return json.loads(line[10:])
    return None
fails = []
out = open(f"{d}/client.out", errors="replace").read()
rows = re.findall(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)", out, re.M)
verified = "Data verification: ok" in out
cc, sc = counters(f"{d}/client.err"), counters(f"{d}/server.err")
cl, sl = plane_log(f"{d}/client.out"), plane_log(f"{d}/server.out")
flaps = [l.split() for l in open(f"{d}/flaps.txt")] if __import__("os").path.exists(f"{d}/flaps.txt") else []
rss = [tuple(map(int, l.split())) for l in open(f"{d}/rss.txt")] if __import__("os").path.exists(f"{d}/rss.txt") else []
print("=== soak summary")
print(f"  run: {elapsed} s, {len(rows)} of 23 sizes done, {sum(int(r[1]) for r in rows)} messages")
if rows:
    print(f"  bandwidth per size (MB/s avg): " + ", ".join(f"{r[0]}:{float(r[3]):.0f}" for r in rows))
print(f"  data verified after every size: {'yes' if verified else 'NO'}")
print(f"  plane flaps: {sum(1 for f in flaps if f[3] == 'down')} (a host link down for the hold time, then up)")
for name, c in (("client", cc), ("server", sc)):
    if c:
        t, w = c["transport"], c["worker"]
        print(f"  {name}: conn_errors {t['conn_errors']}, retransmits {t['retransmits']}, timeouts {t['timeouts']}, "
              f"rx CE {t['rx_ce']}, rx duplicates {t['rx_duplicates']}, longest poll gap {w['max_poll_gap_ns'] / 1e6:.1f} ms "
              f"(longest tx burst call {w['max_tx_burst_ns'] / 1e6:.1f} ms), frames dropped on a stalled port "
              f"{w['tx_port_stalled']}")
for name, l, c in (("client", cl, cc), ("server", sl, sc)):
    if l and c:
        t = c["transport"]
        print(f"  {name} plane detections: {t['plane_downs']} down, {t['plane_ups']} up; "
              f"frames per plane tx {l['plane_tx_frames'][:2]}")
if crc != 0 or src != 0:
    fails.append(f"exit codes client {crc} server {src}")
if not verified:
    fails.append("data not verified")
if len(rows) != 23:
    fails.append(f"only {len(rows)} sizes completed")
if not cc or not sc or cc["transport"]["conn_errors"] or sc["transport"]["conn_errors"]:
    fails.append("connection errors (or no counters)")
warm = next((i for i, r in enumerate(rss) if r[3] == 1), len(rss))  # first sample after 64 KiB ran
if len(rss) - warm >= 3:
    for col, name in ((1, "server"), (2, "client")):
        base = rss[warm][col]
        peak = max(r[col] for r in rss[warm:])
        growth = peak - base
        print(f"  {name} RSS: start {rss[0][col]} kB, after warm-up ({rss[warm][0]} s) {base} kB, "
              f"highest after it {peak} kB over {rss[-1][0] - rss[warm][0]} s -> growth {growth} kB "
              f"(bound {bound})")
        if growth > bound:
            fails.append(f"{name} RSS grew {growth} kB after warm-up")
else:
    fails.append(f"too few RSS samples after the warm-up ({len(rss) - warm})")
print("=== PASS" if not fails else "=== FAIL: " + "; ".join(fails))
sys.exit(1 if fails else 0)
PY
