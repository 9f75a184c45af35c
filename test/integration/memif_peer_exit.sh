#!/usr/bin/env bash
# A process whose net_memif peer leaves while it polls hard must not crash (issue 8,
# "Server exit crashes": SIGSEGV in memif's rx when the peer's disconnect unmapped the
# rings under the lcore). memif_flap is the peer that leaves: FLAPS times it fills
# the link, stops its port while the other side is still draining, and comes back;
# then it leaves for good. Each round, for both programs:
#   metaroce (node B, memif server) survives the flaps, then Ctrl-C: exit 0;
#   metaroce-perf server survives them, then serves a real write_bw client that
#   verifies its data and quits first: both exit 0.
# Any exit by signal (or non-zero) fails; the summary counts crashes.
#   memif_peer_exit.sh METAROCE PERF FLAP CONFIG_DIR [ROUNDS] [FLAPS]
set -u
app=$(realpath "$1"); perf=$(realpath "$2"); flap=$(realpath "$3"); cfg=$(realpath "$4"); rounds=${5:-3}; flaps=${6:-20}
eal=(--no-pci --no-huge -m 256 --log-level='*:warning')
cores=$(( $(nproc) > 1 ? 1 : 0 ))
# The survivor polls on CPU 0; its interrupt thread (EAL control threads: the CPUs
# left over, else the main lcore's) and the flapper share CPU 1. The flapper's 8000-byte
# frames span two of the survivor's mbufs (its data room is sized for MTU 4096), so
# the survivor drains slower than the flapper fills: when the peer leaves, the lcore is
# in the middle of a long burst and the disconnect runs at once on the other CPU.
crashes=0; fails=0; start=$(date +%s)

# Waits (bounded) for a memif server's socket.
wait_sock() { for _ in $(seq 100); do [ -S "$1" ] && return 0; sleep 0.05; done; return 1; }
# rc of a process that must have exited on its own, or 124 after killing it.
reap() {
  local pid=$1 t=$2
  for _ in $(seq $((t * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && { kill -9 "$pid"; wait "$pid"; return 124; }
  wait "$pid"
}
# Counts one result: rc 0 passes, >128 (but not a timeout's) is a crash.
check() {
  local what=$1 rc=$2 log=$3
  [ "$rc" -eq 0 ] && return 0
  if [ "$rc" -gt 128 ] && [ "$rc" -ne 124 ]; then
    crashes=$((crashes + 1)); echo "CRASH: $what exited $rc (signal $((rc - 128)))"
  else
    fails=$((fails + 1)); echo "FAIL: $what exited $rc"
  fi
  grep -v "memif_connect_client\|^TELEMETRY" "$log" | tail -n 12
}

for r in $(seq "$rounds"); do
  dir=$(mktemp -d /tmp/metaroce-peerexit.XXXXXX)
  vdev=socket=$dir/m.sock,socket-abstract=no,bsize=8192
  # metaroce: node B as the memif server; the flapper is its peer.
  "$app" -l 0,1 --main-lcore "$cores" "${eal[@]}" --file-prefix="pe-b-$$" \
    --vdev=net_memif0,role=server,$vdev -- --config "$cfg/node-b.json" \
    </dev/null >"$dir/b.log" 2>&1 &
  bpid=$!
  wait_sock "$dir/m.sock"
  "$flap" -l "$cores" "${eal[@]}" --file-prefix="pe-f-$$" \
    --vdev=net_memif0,role=client,$vdev -- "$flaps" 8000 2 >"$dir/f.log" 2>&1 &
  fpid=$!
  reap $fpid 30; frc=$?
  sleep 0.2
  kill -INT $bpid 2>/dev/null
  reap $bpid 10; brc=$?
  echo "round $r metaroce: peer (memif_flap) exit $frc, metaroce exit $brc; $(tail -n 1 "$dir/f.log")"
  check "metaroce (B)" $brc "$dir/b.log"
  check "memif_flap (against metaroce)" $frc "$dir/f.log"
  rm -rf "$dir"

  dir=$(mktemp -d /tmp/metaroce-peerexit.XXXXXX)
  vdev=socket=$dir/m.sock,socket-abstract=no,bsize=8192
  # metaroce-perf server: the flapper, then a real client that quits first.
  (cd "$dir" && exec "$perf" -l 0 "${eal[@]}" --file-prefix="pe-s-$$" \
    --vdev=net_memif0,role=server,$vdev -- write_bw -n 200 --timeout 20 \
    </dev/null >"$dir/s.log" 2>&1) &
  spid=$!
  wait_sock "$dir/m.sock"
  "$flap" -l "$cores" "${eal[@]}" --file-prefix="pe-f-$$" \
    --vdev=net_memif0,role=client,$vdev -- "$flaps" 8000 2 >"$dir/f.log" 2>&1 &
  fpid=$!
  reap $fpid 30; frc=$?
  crc=125; echo "(not run: the server is gone)" >"$dir/c.log"
  if kill -0 $spid 2>/dev/null; then
    (cd "$dir" && exec timeout 30 "$perf" -l "$cores" "${eal[@]}" --file-prefix="pe-c-$$" \
      --vdev=net_memif0,role=client,$vdev -- write_bw -n 200 --timeout 20 10.0.0.1 \
      </dev/null >"$dir/c.log" 2>&1)
    crc=$?
  fi
  reap $spid 10; src=$?
  grep -q "Data verification: ok" "$dir/c.log" || { [ $crc -eq 0 ] && crc=1; }
  echo "round $r metaroce-perf: peer (memif_flap) exit $frc, client exit $crc, server exit $src"
  check "metaroce-perf server" $src "$dir/s.log"
  check "metaroce-perf client" $crc "$dir/c.log"
  check "memif_flap (against metaroce-perf)" $frc "$dir/f.log"
  rm -rf "$dir"
done
echo "$rounds rounds of $flaps peer exits per program in $(( $(date +%s) - start )) s:" \
  "$crashes crashed, $fails other failures"
[ $crashes -eq 0 ] && [ $fails -eq 0 ]
