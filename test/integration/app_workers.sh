#!/usr/bin/env bash
# Two metaroce apps over one net_memif link (--no-huge), 2 datapath workers each
# (config lcores [1, 2]). A connects to B's worker 0 (10.0.0.2) and worker 1
# (10.1.0.2): "connect" puts each on A's least-loaded worker, so one lands on each lane;
# write_bw then runs on both and B checks the landed bytes (A prints the verdicts).
# Then the verbs commands on the worker-1 connection: B registers a region (on both its
# workers) and loads 4 KiB into it at its prompt; A READs them from the prompt into its
# own region over that connection (A's worker 1, B's worker 1: each side's worker-1
# keys) and prints them: they must be B's bytes.
#   app_workers.sh METAROCE_BINARY CONFIG_DIR
# The lcores float over the CPUs: pinned on a 2-core machine, the two processes'
# spinning workers would share a CPU each.
set -u
app=$1; cfg=$2
dir=$(mktemp -d /tmp/metaroce-appw.XXXXXX)
eal=(--no-pci --no-huge -m 256 --log-level='*:warning' "--lcores=0@(0,1),1@(0,1),2@(0,1)")
vdev=net_memif0,socket=$dir/m.sock,socket-abstract=no,bsize=8192
# Workers share 2 CPUs with the peer's: RTOs above the scheduler's time slices.
for n in a b; do
  python3 - "$cfg/node-$n.json" "$dir/$n.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["lcores"] = [1, 2]
c["transport"]["min_rto_us"] = 20000
json.dump(c, open(sys.argv[2], "w"))
PY
done
head -c 4096 /dev/urandom > "$dir/pattern.bin"
waitlog() { # file pattern: up to 10 s
  for _ in $(seq 100); do grep -q -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
fail=0
expect() { grep -qF -- "$1" "$dir/a.log" || { echo "MISSING: $1"; fail=1; }; }
{
  sleep 2
  echo "show config"
  echo "connect 10.0.0.2"
  echo "connect 10.1.0.2"
  echo "show conn"
  echo "set fwd write_bw"
  echo "start"
  sleep 1.5
  echo "show fwd stats"
  echo "stop"
  echo "show stats"
  for ep in stats conns; do
    echo "/metaroce/$ep" | timeout 10 dpdk-telemetry.py -f itw-a-$$ > "$dir/t_$ep.txt" 2>&1
  done
  echo "show planes"
  id=$(grep -o 'connection [0-9]* to 10.1.0.2' "$dir/a.log" | head -1 | awk '{print $2}')
  echo "show path ${id:-0}"
  # The verbs commands on the worker-1 connection, B's region read into A's.
  echo "mr reg 4096 local_write"
  waitlog "$dir/a.log" "mr registered: lkey" && waitlog "$dir/b.log" "mr loaded: 4096 bytes"
  lkey=$(grep -o 'mr registered: lkey 0x[0-9a-f]*' "$dir/a.log" | head -1 | awk '{print $4}')
  bva=$(grep -o 'mr registered: .* va 0x[0-9a-f]*' "$dir/b.log" | head -1 | awk '{print $NF}')
  brkey=$(grep -o 'mr worker 1: lkey 0x[0-9a-f]* rkey 0x[0-9a-f]*' "$dir/b.log" | head -1 | awk '{print $NF}')
  echo "post send ${id:-0} read 0 ${lkey:-0} 0 4096 ${bva:-0} ${brkey:-0} 0 7"
  waitlog "$dir/a.log" "post: " && sleep 1
  echo "show cq"
  echo "mr read ${lkey:-0} 0 4096"
  echo "post recv ${id:-0} 0 ${lkey:-0} 0 8 8"
  echo "close ${id:-0}"
  sleep 0.5
  echo "show conn"
  echo "quit"
} | timeout 40 "$app" --main-lcore 0 "${eal[@]}" --file-prefix=itw-a-$$ --vdev=$vdev,role=server \
      -- --config "$dir/a.json" --yield-idle -i >"$dir/a.log" 2>&1 &
apid=$!
sleep 0.7
# B at a prompt too: a region on every worker, loaded with the pattern; quits after A.
{
  sleep 3
  echo "mr reg 4096 remote_read"
  waitlog "$dir/b.log" "mr registered: lkey"
  echo "mr load $(grep -o 'mr registered: lkey 0x[0-9a-f]*' "$dir/b.log" | head -1 | awk '{print $4}') 0 $dir/pattern.bin"
  for _ in $(seq 400); do [ -e "$dir/a.done" ] && break; sleep 0.1; done
  echo "quit"
} | timeout 50 "$app" --main-lcore 0 "${eal[@]}" --file-prefix=itw-b-$$ --vdev=$vdev,role=client \
  -- --config "$dir/b.json" --yield-idle -i >"$dir/b.log" 2>&1 &
bpid=$!
wait $apid; arc=$?
touch "$dir/a.done"
wait $bpid; brc=$?
echo "=== node A (exit $arc)"; cat "$dir/a.log"
echo "=== node B (exit $brc)"; grep -v "mr data" "$dir/b.log" | tail -8
[ $arc -eq 0 ] || fail=1
[ $brc -eq 0 ] || { echo "FAIL: node B exited $brc"; fail=1; }
expect "datapath on lcores 1,2 (2 workers)"
expect "datapath 2 workers, lcores 1,2"
expect "to 10.0.0.2: established (worker 0, lcore 1)"
expect "to 10.1.0.2: established (worker 1, lcore 2)"
expect "write_bw forwarding - connections ready=2 - lcores 1,2"
expect "Data verification: ok (2 connection(s))"
grep -Eq "Engine write_bw: [1-9][0-9]* messages.*, 0 errors" "$dir/a.log" || { echo "write_bw failed or moved nothing"; fail=1; }
# show fwd stats: one row per worker, each with its connection and frames sent.
rows=$(awk '/^ +worker +lcore +conns/ {t=1; next} t && /^ +[0-9]+ +[0-9]+ +[0-9]+ / {print; if (++n == 2) exit}' "$dir/a.log")
echo "worker rows:"; echo "$rows"
[ "$(echo "$rows" | awk '$3 == 1 && $5 > 0' | wc -l)" -eq 2 ] || { echo "expected 2 workers with 1 connection and tx frames each"; fail=1; }
# show stats: summed counters and a "workers" array of 2.
python3 - "$dir/a.log" <<'PY' || fail=1
import json, sys
line = next(l for l in open(sys.argv[1]) if "stats: {" in l)
s = json.loads(line[line.index("{"):])
ws = s.get("workers", [])
ok = len(ws) == 2 and all(w["connections"] == 1 for w in ws)
ok = ok and s["datapath"]["tx_frames"] == sum(w["datapath"]["tx_frames"] for w in ws)
print(("ok   " if ok else "FAIL ") + "show stats: 2 workers, 1 connection each, tx_frames summed")
sys.exit(0 if ok else 1)
PY
id=$(grep -o 'connection [0-9]* to 10.1.0.2' "$dir/a.log" | head -1 | awk '{print $2}')
# Telemetry: the sums, each worker's counters as arrays, both lanes' connections.
python3 - "$dir" <<'PY' || fail=1
import json, sys
d = sys.argv[1]
s = json.loads(open(f"{d}/t_stats.txt").read())["/metaroce/stats"]
c = json.loads(open(f"{d}/t_conns.txt").read())["/metaroce/conns"]
ok = s.get("datapath/tx_frames", 0) > 0 and len(s.get("workers/datapath/tx_frames", [])) == 2
ok = ok and c.get("total") == 2 and len(c.get("conn/id", [])) == 2
print(("ok   " if ok else "FAIL ") + "telemetry: summed stats, 2 workers' counters, 2 connections")
sys.exit(0 if ok else 1)
PY
expect "close: conn ${id:-x}"
# The READ on worker 1's connection: posted, completed, and A's region holds B's bytes.
expect "post: ok (ok)"
grep -Eq "wc 7 conn ${id:-x} stream 0 status success op read " "$dir/a.log" || { echo "no successful READ completion on the worker-1 connection"; fail=1; }
want=$(od -An -v -tx1 "$dir/pattern.bin" | tr -d ' \n')
got=$(grep -o 'mr data: [0-9a-f]*' "$dir/a.log" | tail -1 | awk '{print $3}')
[ -n "$want" ] && [ "$got" = "$want" ] || { echo "A's region does not hold B's 4096 bytes (got ${#got} hex digits)"; fail=1; }
[ "$(grep -o 'post: ok' "$dir/a.log" | wc -l)" -eq 2 ] || { echo "expected the READ and the receive posted on worker 1"; fail=1; }
grep -q "mr worker 1: lkey 0x[0-9a-f]* rkey 0x" "$dir/a.log" || { echo "mr reg did not register on worker 1"; fail=1; }
grep -q "close: conn .* (no such connection)" "$dir/a.log" && { echo "close did not find the worker-1 connection"; fail=1; }
# After the close, the last "show conn" lists only the worker-0 connection.
last=$(awk '/^id +peer/ {n=0; last=""} /^[0-9]+ +10\./ {last=last $2 " "} END {print last}' "$dir/a.log")
echo "connections after close: $last"
[ "$last" = "10.0.0.2 " ] || { echo "expected only 10.0.0.2 left"; fail=1; }
rm -rf "$dir"
exit $fail
