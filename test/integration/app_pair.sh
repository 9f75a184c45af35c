#!/usr/bin/env bash
# Two metaroce apps over net_memif (--no-huge). Node A runs the prompt from a
# script; node B only serves. MODE prompt: commands in, expected lines out.
# MODE telemetry: dpdk-telemetry.py reads our /metaroce/... endpoints from A.
# MODE failover: two planes; `set plane 1 down` during a running write_bw moves every
# path to plane 0 and the engine keeps moving data; `set plane 1 up` brings them back.
#   app_pair.sh METAROCE_BINARY CONFIG_DIR prompt|telemetry|failover
set -u
app=$1; cfg=$2; mode=$3
dir=$(mktemp -d /tmp/metaroce-app.XXXXXX)
eal=(--no-pci --no-huge -m 256 --log-level='*:warning')
pa=it-app-a-$$; pb=it-app-b-$$
vdev=net_memif0,socket=$dir/m.sock,socket-abstract=no,bsize=8192
vdevs=(--vdev=$vdev)
cfg_a=$cfg/node-a.json; cfg_b=$cfg/node-b.json
if [ "$mode" = failover ]; then
  vdevs+=(--vdev=net_memif1,socket=$dir/m1.sock,socket-abstract=no,bsize=8192)
  # The example configs with a second port: one memif link per plane.
  sed 's/"ports": \[0\]/"ports": [0, 1]/' "$cfg/node-a.json" > "$dir/a.json"
  sed 's/"ports": \[0\]/"ports": [0, 1]/' "$cfg/node-b.json" > "$dir/b.json"
  cfg_a=$dir/a.json; cfg_b=$dir/b.json
fi
fail=0
expect() { grep -qF -- "$1" "$dir/a.log" || { echo "MISSING: $1"; fail=1; }; }

telemetry() {
  echo "$1" | timeout 10 dpdk-telemetry.py -f "$pa" 2>&1
}

failover_script() {
  sleep 2
  echo "connect 10.0.0.2"
  echo "set fwd write_bw"
  echo "start"
  sleep 1
  echo "show planes"
  echo "show port stats all"
  echo "set plane 1 down"
  sleep 1.5
  local id
  id=$(grep -o 'connection [0-9]* to' "$dir/a.log" | head -1 | awk '{print $2}')
  echo "show path ${id:-0}"
  echo "show port stats all"
  echo "set plane 1 up"
  sleep 2 # the control thread publishes the plane; generous for loaded CI hosts
  echo "show path ${id:-0}"
  echo "stop"
  echo "quit"
}

{
  if [ "$mode" = failover ]; then failover_script; exit 0; fi
  sleep 2
  echo "help"
  echo "help show"
  echo "show config"
  echo "show port info all"
  echo "show planes"
  echo "connect 10.0.0.2"
  echo "show conn"
  echo "set fwd write_bw"
  echo "start"
  echo "show port stats 0"
  sleep 1.5
  echo "show port stats all"
  echo "show fwd stats"
  if [ "$mode" = telemetry ]; then
    telemetry /metaroce/stats > "$dir/t_stats.txt"
    telemetry /metaroce/planes > "$dir/t_planes.txt"
    telemetry /metaroce/conns > "$dir/t_conns.txt"
    conn=$(python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["/metaroce/conns"]["conn/id"][0])' \
           < "$dir/t_conns.txt" 2>/dev/null)
    telemetry "/metaroce/paths,${conn:-0}" > "$dir/t_paths.txt"
    telemetry "/metaroce/conn,${conn:-0}" > "$dir/t_conn.txt"
    telemetry "/metaroce/conns,5" > "$dir/t_conns_page.txt"
  fi
  echo "stop"
  echo "set fwd send_bw"
  echo "start"
  sleep 1
  echo "stop"
  echo "show conn 999"
  echo "bogus command"
  echo "set plane 7 down"
  echo "set fwd warp_speed"
  echo "connect 10.0.0"
  echo "set plane 0 down"
  echo "show planes"
  echo "set plane 0 up"
  echo "clear stats"
  echo "clear port stats all"
  echo "show port stats 0"
  echo "show port"
  echo "clear port stats 5"
  echo "quit"
} | timeout 40 "$app" -l 0,1 --main-lcore 1 "${eal[@]}" --file-prefix=$pa \
      $(printf -- '%s,role=server ' "${vdevs[@]}") -- --config "$cfg_a" -i >"$dir/a.log" 2>&1 &
apid=$!
sleep 0.7
timeout 30 "$app" -l 0,1 --main-lcore 0 "${eal[@]}" --file-prefix=$pb \
  $(printf -- '%s,role=client ' "${vdevs[@]}") -- --config "$cfg_b" </dev/null >"$dir/b.log" 2>&1 &
bpid=$!
wait $apid; arc=$?
kill -TERM $bpid 2>/dev/null; wait $bpid; brc=$?
echo "=== node A (exit $arc)"; cat "$dir/a.log"
echo "=== node B (exit $brc)"; tail -5 "$dir/b.log"
[ $arc -eq 0 ] || fail=1
# B leaves on SIGTERM after A quit; it must exit cleanly, not die (its memif peer left first).
[ $brc -eq 0 ] || { echo "FAIL: node B exited $brc"; fail=1; }
case $mode in
prompt)
  expect "to 10.0.0.2: established"
  expect "Set write_bw packet forwarding mode"
  expect "write_bw forwarding - connections ready=1"
  expect "Accumulated forward statistics for all ports"
  expect "Engine write_bw:"
  expect "Engine send_bw:"
  expect "Bad arguments: no connection 999 (see 'show conn')"
  expect "Unknown command 'bogus'; type 'help' for the list"
  expect "Bad arguments: no plane 7 (planes 0..0)"
  expect "Bad arguments: unknown engine 'warp_speed'"
  expect "Bad arguments: '10.0.0' is not an IPv4 address (usage: connect <addr>)"
  expect "plane 0 is now administratively down"
  expect "Statistics cleared"
  # testpmd's commands, with testpmd's labels.
  expect "Commands of 'show':"
  if sed -n "/Commands of 'show':/,/metaroce> /p" "$dir/a.log" | grep -qE '^  (connect|set|mr|post) '; then
    echo "'help show' listed other verbs"; fail=1
  fi
  expect "  node address: 10.0.0.1"
  expect "********************* Infos for port 0  *********************"
  expect "Driver name: net_memif"
  expect "######################## NIC statistics for port 0  ########################"
  expect "Throughput (since last show)"
  expect "Accumulated forward statistics for all ports"
  expect "Engine write_bw: running"
  expect "NIC statistics for port 0 cleared"
  expect "Bad arguments: show port what? (usage: show port info|stats ...)"
  expect "Bad arguments: port 5 is not one of ours (planes use 1 port(s))"
  # The second show, during write_bw, saw traffic: Tx-pps and Tx-bps above zero.
  rates=$(awk '/Tx-pps:/ {print $2, $4}' "$dir/a.log" | sed -n 2p)
  echo "Tx-pps, Tx-bps during write_bw: ${rates:-none}"
  set -- $rates
  [ "${1:-0}" -gt 0 ] && [ "${2:-0}" -gt 0 ] || { echo "no Tx rate during write_bw"; fail=1; }
  # After "clear port stats all" the counters restart from zero.
  last_tx=$(awk '/NIC statistics for port 0 cleared/ {c=1} c && /TX-packets:/ {print $2; exit}' "$dir/a.log")
  [ "${last_tx:-x}" -lt 100 ] 2>/dev/null || { echo "TX-packets after clear: ${last_tx:-none}"; fail=1; }
  if grep -q "Engine write_bw: 0 messages" "$dir/a.log"; then echo "write_bw moved nothing"; fail=1; fi
  ;;
failover)
  expect "plane 1 is now administratively down"
  expect "plane 1 is now administratively up"
  # Path tables (rows: path plane sport state ...) after down, then after up.
  awk '/^path +plane/ {t++; next} t && /^[0-9]+ +[0-9]+ / {print t, $2}' "$dir/a.log" > "$dir/paths.txt"
  down_rows=$(awk '$1 == 1' "$dir/paths.txt" | wc -l)
  down_on1=$(awk '$1 == 1 && $2 == 1' "$dir/paths.txt" | wc -l)
  up_on1=$(awk '$1 == 2 && $2 == 1' "$dir/paths.txt" | wc -l)
  echo "paths listed while plane 1 down: $down_rows, on plane 1: $down_on1; after up on plane 1: $up_on1"
  [ "$down_rows" -gt 0 ] && [ "$down_on1" -eq 0 ] || { echo "paths stayed on the downed plane"; fail=1; }
  [ "$up_on1" -gt 0 ] || { echo "no path came back to plane 1"; fail=1; }
  # Port 0 kept sending while plane 1 was down (TX-packets grew between the snapshots).
  tx=($(awk '/NIC statistics for port 0/ {p=1} p && /TX-packets:/ {print $2; p=0}' "$dir/a.log"))
  echo "port 0 TX-packets before/after the failover: ${tx[*]:-none}"
  [ "${#tx[@]}" -ge 2 ] && [ "${tx[1]}" -gt "${tx[0]}" ] || { echo "no traffic after plane 1 went down"; fail=1; }
  grep -Eq "Engine write_bw: [1-9][0-9]* messages.*, 0 errors" "$dir/a.log" || { echo "write_bw failed or moved nothing"; fail=1; }
  ;;
telemetry)
  for f in stats planes conns paths conn conns_page; do echo "=== $f"; cat "$dir/t_$f.txt"; done
  # Nested replies, numbers as numbers, nothing cut (every path of the connection).
  python3 - "$dir" "$(python3 -c 'import json; print(json.load(open("'"$cfg_a"'"))["transport"]["paths"])')" <<'PY' || fail=1
import json, sys
d, paths = sys.argv[1], int(sys.argv[2])
def load(name, ep):
    return json.loads(open(f"{d}/t_{name}.txt").read())[ep]
ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    ok = ok and cond
s = load("stats", "/metaroce/stats")
check(isinstance(s.get("datapath/rx_frames"), int) and s["datapath/rx_frames"] > 0, "stats: datapath/rx_frames is a number > 0")
check(isinstance(s.get("transport/tx_packets"), int), "stats: transport/tx_packets is a number")
pl = load("planes", "/metaroce/planes")
check(pl.get("plane/link_up") == [1], "planes: plane/link_up is an array, one per plane")
c = load("conns", "/metaroce/conns")
check(c.get("total", 0) >= 1 and len(c.get("conn/id", [])) == c["total"] and c["conn/state"][0] == "established", "conns: total and one array per field")
p = load("paths", "/metaroce/paths")
check(len(p.get("path/udp_sport", [])) == paths, f"paths: all {paths} paths, none cut")
check(all(isinstance(x, int) for x in p.get("path/cwnd", [None])), "paths: cwnd as numbers")
one = load("conn", "/metaroce/conn")
check(one.get("state") == "established" and len(one.get("path/plane", [])) == paths, "conn: the connection and its paths")
pg = load("conns_page", "/metaroce/conns")
check(pg.get("start") == 5 and pg.get("total") == c["total"] and "conn/id" not in pg and pg.get("next") == 0, "conns,5: an empty last page")
sys.exit(0 if ok else 1)
PY
  ;;
esac
rm -rf "$dir"
exit $fail
