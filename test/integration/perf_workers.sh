#!/usr/bin/env bash
# metaroce-perf with 2 workers per side over one net_memif link (two processes,
# --no-huge): -q 2 puts one connection on each worker, the client's worker k dialling
# the server's worker k (queue k of one side pairs with queue k of the other). Passes
# when both exit 0, the client verified the data, each side ran min(2, -q) sessions and
# every worker carried frames with no hand-off drop. With --cross-workers (client worker k
# dials the server's worker k+1) frames arrive on the other worker's queue: each side
# must then show hand-offs.
#   perf_workers.sh PERF_BINARY TEST [metaroce-perf options...]
# The lcores float over the CPUs (--lcores 0@(0,1),...): pinned 1:1 on a 2-core
# machine the two processes' spinning workers would share a CPU each.
set -u
perf=$(realpath "$1"); test_name=$2; shift 2
dir=$(mktemp -d /tmp/metaroce-it.XXXXXX)
lcores="--lcores=0@(0,1),1@(0,1)"
eal=(--no-pci --no-huge -m 512 --log-level='*:warning')
vdev="net_memif0,socket=$dir/memif.sock,bsize=8192,socket-abstract=no"
sessions=2; cross=0
args=("$@")
for i in "${!args[@]}"; do
  [ "${args[$i]}" = "-q" ] && [ "${args[$((i + 1))]}" -lt 2 ] && sessions=1
  [ "${args[$i]}" = "--cross-workers" ] && cross=1
done
opts=(--timeout 30 --counters --yield-idle --min-rto-us 20000 "$@")
timeout 60 "$perf" "$lcores" "${eal[@]}" --file-prefix="itw-s-$$" --vdev="$vdev,role=server" \
  -- "$test_name" "${opts[@]}" </dev/null >"$dir/server.log" 2>&1 &
spid=$!
for _ in $(seq 100); do [ -S "$dir/memif.sock" ] && break; sleep 0.1; done
timeout 60 "$perf" "$lcores" "${eal[@]}" --file-prefix="itw-c-$$" --vdev="$vdev,role=client" \
  -- "$test_name" "${opts[@]}" 10.0.0.1 </dev/null >"$dir/client.log" 2>&1
crc=$?
wait $spid
src=$?
echo "=== client (exit $crc)"; grep -v '^ *["{}\[]\|^ *\]' "$dir/client.log"
echo "=== server (exit $src)"; grep -v '^ *["{}\[]\|^ *\]' "$dir/server.log"
rc=0
[ $crc -eq 0 ] && [ $src -eq 0 ] || rc=1
grep -q "Data verification: ok" "$dir/client.log" || { echo "client did not verify data"; rc=1; }
for side in client server; do
  grep -q "Workers         : 2 ($sessions ran a session)" "$dir/$side.log" ||
    { echo "$side: expected 2 workers, $sessions session(s)"; rc=1; }
  # --counters: one JSON object on stderr, "workers" per worker.
  python3 - "$dir/$side.log" "$cross" <<'PY' || rc=1
import json, sys
t = open(sys.argv[1]).read()
d = json.loads(t[t.index('{'):t.rindex('}') + 1])
ws = d.get('workers', [])
ok = len(ws) == 2
handed = 0
for k, w in enumerate(ws):
    c = w['worker']
    print(f"worker {k}: rx {c['rx_frames']} tx {c['tx_frames']} hand-off in {c['handoff_in']} "
          f"out {c['handoff_out']} drops {c['handoff_drops']}")
    # rx_frames counts at the polling worker only: an owner fed by hand-off has 0 there.
    ok = ok and c['rx_frames'] + c['handoff_in'] > 0 and c['handoff_drops'] == 0
    handed += c['handoff_in']
if sys.argv[2] == '1' and handed == 0:
    print("no frame was handed off")
    ok = False
sys.exit(0 if ok else 1)
PY
done
rm -rf "$dir"
exit $rc
