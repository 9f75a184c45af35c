#!/usr/bin/env bash
# Two metaroce apps on the udp backend (kernel sockets on loopback, no DPDK port, the
# EAL with --no-huge and no devices), two planes each: A 127.9.60.1/127.9.61.1 with
# "backend": "udp" in its config, B 127.9.60.2/127.9.61.2 with --backend udp. A runs
# the prompt: connect, a write_bw whose data the peer verifies, plane 1 down and up
# during it, the DPDK-only commands refused. Passes when both exit 0, the run moved
# data with 0 errors and "Data verification: ok".
#   app_udp_pair.sh METAROCE_BINARY
set -u
app=$1
dir=$(mktemp -d /tmp/metaroce-app-udp.XXXXXX)
# The EAL leaves its runtime directory behind: drop ours.
trap 'rm -rf "$dir" /var/run/dpdk/au-a-$$ /var/run/dpdk/au-b-$$' EXIT
eal=(--no-pci --no-huge -m 256 --no-telemetry --log-level='*:warning')
cat > "$dir/a.json" <<'JSON'
{ "backend": "udp", "address": "127.9.60.1", "ports": [0, 1],
  "transport": { "mtu": 4096, "paths": 16, "max_timeouts": 20 },
  "engine": { "message_size": 65536, "tx_depth": 64 } }
JSON
sed -e 's/"backend": "udp", //' -e 's/127.9.60.1/127.9.60.2/' "$dir/a.json" > "$dir/b.json"
fail=0
expect() { grep -qF -- "$1" "$dir/a.log" || { echo "MISSING: $1"; fail=1; }; }

timeout 25 "$app" -l 0,1 --main-lcore 0 "${eal[@]}" --file-prefix="au-b-$$" -- \
  --config "$dir/b.json" --backend udp </dev/null >"$dir/b.log" 2>&1 &
bpid=$!
{
  sleep 1 # B binds its sockets ("connect" also retries a silent peer)
  echo "show config"
  echo "connect 127.9.60.2"
  echo "show conn"
  echo "set fwd write_bw"
  echo "start"
  sleep 1
  echo "set plane 1 down"
  sleep 1
  echo "show planes"
  echo "set plane 1 up"
  echo "show port info all"
  echo "show port stats all"
  echo "clear port stats all"
  echo "stop"
  echo "quit"
} | timeout 25 "$app" -l 0,1 --main-lcore 1 "${eal[@]}" --file-prefix="au-a-$$" -- \
      --config "$dir/a.json" -i >"$dir/a.log" 2>&1
arc=$?
kill -TERM $bpid 2>/dev/null
wait $bpid; brc=$?
echo "=== node A (exit $arc)"; cat "$dir/a.log"
echo "=== node B (exit $brc)"; cat "$dir/b.log"
[ $arc -eq 0 ] && [ $brc -eq 0 ] || { echo "exit codes A $arc, B $brc (want 0, 0)"; fail=1; }
expect "node 127.9.60.1, 2 plane(s)"
expect "backend: udp (kernel sockets, port 4796)"
expect "plane 1: port 1, address 127.9.61.1"
expect "to 127.9.60.2: established"
expect "write_bw forwarding - connections ready=1"
expect "plane 1 is now administratively down"
expect "plane 1 is now administratively up"
expect "show port info: not on the udp backend"
expect "show port stats: not on the udp backend"
expect "clear port stats: not on the udp backend"
expect "Data verification: ok (1 connection(s))"
grep -q "node 127.9.60.2, 2 plane(s), .*udp backend" "$dir/b.log" || { echo "B not on the udp backend"; fail=1; }
grep -Eq "Engine write_bw: [1-9][0-9]* messages.*, 0 errors" "$dir/a.log" || { echo "write_bw failed or moved nothing"; fail=1; }
# "show planes" while plane 1 was down: both planes udp sockets, plane 1 unused.
grep -Eq '^1 +1 +udp:127\.9\.61\.1 .* up +down +no ' "$dir/a.log" || { echo "show planes: plane 1 not shown down"; fail=1; }
exit $fail
