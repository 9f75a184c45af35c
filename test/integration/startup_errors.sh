#!/usr/bin/env bash
# The errors a user meets first name the cause and what to do (issue 8), not DPDK's
# raw errno: a --file-prefix already in use, no hugepages, a memif client with no
# server, a wrong server address, a memif socket another server holds, ports the
# configuration does not use. All --no-huge but the hugepage case, which points
# --huge-dir at a plain directory (no change to the machine's hugepage settings).
#   startup_errors.sh METAROCE METAROCE_PERF CONFIG_DIR
set -u
app=$1; perf=$2; cfg=$3
dir=$(mktemp -d /tmp/metaroce-errs.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
eal=(--no-pci -m 256 --log-level='*:warning')
fail=0
# NAME RC OUTPUT-FILE WANTED-SUBSTRING [UNWANTED-SUBSTRING]: the command failed (rc != 0)
# or, with RC "any", ran; its output has WANTED and not UNWANTED.
check() {
  local name=$1 rc=$2 out=$3 want=$4 unwanted=${5:-}
  if [ "$rc" = 0 ]; then
    echo "FAIL $name: exit 0, expected a failure"; fail=1
  elif ! grep -qF -- "$want" "$out"; then
    echo "FAIL $name: no line with: $want"; sed 's/^/     | /' "$out" | tail -8; fail=1
  elif [ -n "$unwanted" ] && grep -qF -- "$unwanted" "$out"; then
    echo "FAIL $name: still says: $unwanted"; fail=1
  else
    echo "ok   $name: $(grep -F -- "$want" "$out" | head -1)"
  fi
}
wait_for() { # FILE TEXT: up to 10 s
  for _ in $(seq 100); do grep -qF -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

# 1. A second process on a --file-prefix a running one holds.
"$app" -l 0,1 --no-huge "${eal[@]}" --file-prefix="err-$$-a" --vdev=net_null0 -- \
  --config "$cfg/node-a.json" </dev/null >"$dir/first.log" 2>&1 &
pids+=($!)
wait_for "$dir/first.log" "Press Ctrl-C to quit." || { echo "FAIL: the first instance did not start"; cat "$dir/first.log"; fail=1; }
"$app" -l 0,1 --no-huge "${eal[@]}" --file-prefix="err-$$-a" --vdev=net_null0 -- \
  --config "$cfg/node-a.json" </dev/null >"$dir/1.log" 2>&1
check file_prefix $? "$dir/1.log" \
  "metaroce: cannot initialise the EAL: another DPDK process (pid ${pids[0]}) uses --file-prefix err-$$-a; give each process its own --file-prefix" \
  "EAL: Success"
kill -INT "${pids[0]}"

# 2. No hugepages where the EAL looks for them.
mkdir "$dir/plain"
"$app" -l 0,1 "${eal[@]}" --huge-dir "$dir/plain" --file-prefix="err-$$-b" --vdev=net_null0 -- \
  --config "$cfg/node-a.json" </dev/null >"$dir/2.log" 2>&1
check no_hugepages $? "$dir/2.log" \
  "metaroce: cannot initialise the EAL: no hugepages are available (--huge-dir $dir/plain is not a hugetlbfs mount); run with --no-huge, or reserve and mount some: echo" \
  "Permission denied"

# 3a. A memif client with no server: waits --timeout, then says so.
mc() { echo "--vdev=net_memif0,role=client,socket=$dir/$1,socket-abstract=no,bsize=8192"; }
ms() { echo "--vdev=net_memif0,role=server,socket=$dir/$1,socket-abstract=no,bsize=8192"; }
"$perf" -l 0 --no-huge "${eal[@]}" --file-prefix="err-$$-c" "$(mc nobody.sock)" -- write_bw --timeout 1 \
  10.0.0.1 </dev/null >"$dir/3.log" 2>&1
check memif_no_server $? "$dir/3.log" \
  "metaroce-perf: error: port 0 (net_memif0): the memif server at socket $dir/nobody.sock is not listening after 1.0 s; start the server (its --vdev with role=server) first" \
  "Operation not permitted"
grep -qF "metaroce-perf: port 0 (net_memif0): waiting up to 1.0 s for the memif server" "$dir/3.log" ||
  { echo "FAIL memif_no_server: no 'waiting' line"; fail=1; }

# 3b. Client first, server a second later: the client waits and the run passes. The
# client has a second port it does not use (8: warned about).
"$perf" -l 0 --no-huge "${eal[@]}" --file-prefix="err-$$-d" "$(mc late.sock)" --vdev=net_null0 -- \
  write_bw -n 200 --timeout 10 10.0.0.1 </dev/null >"$dir/3b-client.log" 2>&1 &
cpid=$!
sleep 1
"$perf" -l 0 --no-huge "${eal[@]}" --file-prefix="err-$$-e" "$(ms late.sock)" -- \
  write_bw -n 200 --timeout 10 </dev/null >"$dir/3b-server.log" 2>&1
src=$?
wait $cpid; crc=$?
if [ $src -ne 0 ] || [ $crc -ne 0 ] || ! grep -q "Data verification: ok" "$dir/3b-client.log"; then
  echo "FAIL client_before_server: client $crc, server $src"; tail -n 5 "$dir/3b-client.log" "$dir/3b-server.log"; fail=1
else
  echo "ok   client_before_server: $(grep -F 'waiting up to' "$dir/3b-client.log")"
fi
check perf_unused_port any "$dir/3b-client.log" \
  "metaroce-perf: warning: port(s) 1 (net_null0) unused: --planes 1 uses ports 0..0"

# 4. A server that runs, a client that names the wrong address.
"$perf" -l 0 --no-huge "${eal[@]}" --file-prefix="err-$$-f" "$(ms wrong.sock)" -- write_bw --timeout 5 \
  </dev/null >"$dir/4-server.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -S "$dir/wrong.sock" ] && break; sleep 0.1; done
"$perf" -l 0 --no-huge "${eal[@]}" --file-prefix="err-$$-g" "$(mc wrong.sock)" -- write_bw --timeout 2 \
  10.0.0.9 </dev/null >"$dir/4.log" 2>&1
check wrong_server $? "$dir/4.log" \
  "metaroce-perf: error: cannot connect to the server at 10.0.0.9: connection setup timed out (no answer to " \
  "work request flushed"
grep -qF "metaroce-perf: no answer from the server at 10.0.0.9 yet; retrying for up to 2 s (--timeout)" "$dir/4.log" ||
  { echo "FAIL wrong_server: no 'retrying' line"; fail=1; }

# 7. A second server on the memif socket the first (still running) listens on.
"$perf" -l 0 --no-huge "${eal[@]}" --file-prefix="err-$$-h" "$(ms wrong.sock)" -- write_bw --timeout 1 \
  </dev/null >"$dir/7p.log" 2>&1
check perf_socket_in_use $? "$dir/7p.log" \
  "net_memif0 did not probe: the memif socket $dir/wrong.sock is in use by another process" \
  "add --vdev"
"$app" -l 0,1 --no-huge "${eal[@]}" --file-prefix="err-$$-i" "$(ms wrong.sock)" -- \
  --config "$cfg/node-a.json" </dev/null >"$dir/7a.log" 2>&1
check app_socket_in_use $? "$dir/7a.log" \
  "metaroce: $cfg/node-a.json: ports[0]: port 0 does not exist: net_memif0 did not probe: the memif socket $dir/wrong.sock is in use by another process (a second role=server on it?); give this one its own socket=PATH in --vdev" \
  "add --vdev or -a)"

# 6. A port the EAL does not have.
sed 's/"ports": \[0\]/"ports": [0, 3]/' "$cfg/node-a.json" > "$dir/beyond.json"
"$app" -l 0,1 --no-huge "${eal[@]}" --file-prefix="err-$$-j" --vdev=net_null0 --vdev=net_null1 -- \
  --config "$dir/beyond.json" </dev/null >"$dir/6.log" 2>&1
check port_beyond $? "$dir/6.log" \
  "metaroce: $dir/beyond.json: ports[1]: port 3 does not exist; the EAL has port(s) 0 (net_null0), 1 (net_null1) (add a --vdev or -a for each plane)"

# 8. Two vdevs, a configuration with one port: the second is named, not ignored.
echo quit | "$app" -l 0,1 --no-huge "${eal[@]}" --file-prefix="err-$$-k" --vdev=net_null0 --vdev=net_null1 -- \
  --config "$cfg/node-a.json" -i --no-pdump >"$dir/8.log" 2>&1
check app_unused_port any "$dir/8.log" \
  "metaroce: warning: port(s) 1 (net_null1) unused: $cfg/node-a.json uses \"ports\": [0]; add them there (one per plane) or drop their --vdev/-a"
exit $fail
