#!/usr/bin/env bash
# Receiver rate hints on DPDK ports (spec 6.4), end to end over net_memif:
#  1. app: node B's config sets "inbound_capacity_mbps"; node A opens two connections
#     to B and runs write_bw over both (hints are sent only while two or more senders
#     share the receiver); A's `show conn` must show a non-zero hint_rx on both, at
#     most B's capacity, and `show conn <id>` the same hint.
#  2. metaroce-perf --counters: memif left on auto keeps hints off and says why;
#     --inbound-capacity sets them.
#   rate_hints.sh METAROCE_BINARY METAROCE_PERF_BINARY CONFIG_DIR
set -u
app=$1; perf=$2; cfg=$3
dir=$(mktemp -d /tmp/metaroce-hints.XXXXXX)
trap 'rm -rf "$dir"' EXIT
eal=(--no-pci --no-huge -m 256 --log-level='*:warning')
vdev=net_memif0,socket=$dir/m.sock,socket-abstract=no,bsize=8192
cap=${CAP:-2000}
fail=0
bad() { echo "FAIL: $*"; fail=1; }
python3 - "$cfg/node-b.json" "$dir/b.json" "$cap" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["inbound_capacity_mbps"] = int(sys.argv[3])
json.dump(c, open(sys.argv[2], "w"))
PY

{
  sleep 2
  echo "connect 10.0.0.2"
  echo "connect 10.0.0.2"
  echo "set fwd write_bw"
  echo "start"
  sleep 2
  echo "show conn"
  sleep 0.5
  id=$(grep -o 'connection [0-9]* to' "$dir/a.log" | head -1 | awk '{print $2}')
  echo "show conn ${id:-0}"
  echo "stop"
  echo "quit"
} | timeout 40 "$app" -l 0,1 --main-lcore 1 "${eal[@]}" --file-prefix=hint-a-$$ \
      --vdev=$vdev,role=server -- --config "$cfg/node-a.json" -i >"$dir/a.log" 2>&1 &
apid=$!
sleep 0.7
timeout 30 "$app" -l 0,1 --main-lcore 0 "${eal[@]}" --file-prefix=hint-b-$$ \
  --vdev=$vdev,role=client -- --config "$dir/b.json" </dev/null >"$dir/b.log" 2>&1 &
bpid=$!
wait $apid; arc=$?
kill -TERM $bpid 2>/dev/null; wait $bpid
[ $arc -eq 0 ] || bad "node A exited $arc"
# The table's rows to 10.0.0.2: the last column is hint_rx.
grep -qE '^id +peer +state +incoming +paths +inflight +tx_msgs +hint_tx +hint_rx *$' "$dir/a.log" || bad "no hint_rx column"
hints=$(awk '$2 == "10.0.0.2" && $3 == "established" {print $NF}' "$dir/a.log")
[ "$(echo "$hints" | grep -c .)" -eq 2 ] || bad "expected two established connections, got: $hints"
for h in $hints; do
  [ "$h" -gt 0 ] && [ "$h" -le $cap ] || bad "hint_rx $h not in 1..$cap"
done
grep -qE '^conn [0-9]+ -> 10\.0\.0\.2 .*rate hint received [1-9][0-9]* Mb/s$' "$dir/a.log" ||
  bad "show conn <id> shows no hint"

# metaroce-perf: what --counters says about the capacity.
perf_caps() { # perf_caps NAME [server options]: server's rate_hints JSON line
  rm -f "$dir/m.sock"
  timeout 30 "$perf" -l 0 "${eal[@]}" --file-prefix=hint-s-$$ --vdev=$vdev,role=server -- \
    write_bw -n 200 --counters "${@:2}" >"$dir/$1.s.log" 2>&1 &
  local spid=$!
  timeout 30 "$perf" -l 1 "${eal[@]}" --file-prefix=hint-c-$$ --vdev=$vdev,role=client -- \
    write_bw -n 200 10.0.0.1 >"$dir/$1.c.log" 2>&1 || bad "$1: client failed: $(tail -2 "$dir/$1.c.log")"
  wait $spid || bad "$1: server failed: $(tail -2 "$dir/$1.s.log")"
  python3 -c 'import json,re,sys
t = open(sys.argv[1]).read(); j = json.loads(t[t.index("{\n"):])
print(json.dumps(j["rate_hints"]))' "$dir/$1.s.log" 2>/dev/null
}
auto=$(perf_caps auto)
echo "auto: $auto"
echo "$auto" | grep -q '"inbound_capacity_mbps": 0, "source": "off (net_memif' || bad "memif on auto: $auto"
set_=$(perf_caps set --inbound-capacity 5000)
echo "set: $set_"
echo "$set_" | grep -q '"inbound_capacity_mbps": 5000, "source": "configured"' || bad "--inbound-capacity 5000: $set_"

if [ $fail -ne 0 ]; then
  echo "=== node A"; cat "$dir/a.log"; echo "=== node B"; tail -5 "$dir/b.log"
fi
exit $fail
