#!/usr/bin/env bash
# One wire (issue 10, doc/spec.md section 2): the DPDK `metaroce` app on net_af_packet
# at one end of two veth pairs (two planes), a node on the kernel-UDP backend (udp_peer:
# the app's test engines on udp::node) at the other, each in its own network namespace:
#
#   namespace D (DPDK, node 10.0.0.1)        namespace U (kernel UDP, node 10.0.0.2)
#   d0 (no kernel address) ------------------ u0 10.0.0.2/24
#   d1 (no kernel address) ------------------ u1 10.0.1.2/24
#
# The app knows U's MACs from its config ("peers"); U's kernel knows D's MACs from
# static neighbour entries (net_af_packet answers no ARP). U's veths compute checksums
# and segment in software (ethtool tx off): with offloads on, a veth hands its peer's
# packet socket the kernel's unfinished skb (a partial UDP checksum, a 64 KB GSO
# super-frame), which no wire carries and the DPDK side rightly drops.
#
#   interop.sh ops|plane_cut|wire|perftest METAROCE UDP_PEER PCAP_FIELDS DISSECTOR.lua [METAROCE_RUN]
#   ops        WRITE, SEND and READ (write_bw, send_bw, read_bw) driven by the app with
#              U serving, then driven by U with the app serving; every run verified
#   plane_cut  write_bw each way over both planes; 1 s in, plane 1's veth goes down
#              (U's end while the app sends, D's end while U sends): the run goes on
#              over plane 0 with zero errors and verified data
#   wire       the three tests each way, both veths captured on U's side; what D sends
#              and what U sends compare equal field by field (opcodes, flags, header
#              and payload sizes, msg_len, offsets; IPv4/UDP header fields), ids,
#              PSNs and timestamps aside; tshark's dissector and our codec agree
#   perftest   unmodified ib_write_bw, server on the DPDK Verbs backend in D, client on
#              the kernel-UDP Verbs backend in U (metaroce-run), over both planes
# Needs root; skips (exit 77) when not root or when namespaces cannot be created.
# INTEROP_KEEP=1 keeps the work directory (logs, capture).
set -u
mode=${1:?usage: interop.sh ops|plane_cut|wire|perftest METAROCE UDP_PEER PCAP_FIELDS DISSECTOR.lua}
app=$2; peer=$3; fields_tool=$4; lua=$5; run=${6:-}
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: needs root (network namespaces, veth)"; exit 77
fi
if ! ip netns add "ioprobe$$" 2>/dev/null; then
  echo "SKIP: cannot create network namespaces here"; exit 77
fi
ip netns del "ioprobe$$"
command -v ethtool >/dev/null || { echo "ethtool missing (scripts/install-deps.sh installs it)"; exit 1; }
if [ "$mode" = wire ]; then
  command -v tshark >/dev/null || { echo "tshark missing (scripts/install-deps.sh installs it)"; exit 1; }
fi

ns_d=io$$-d; ns_u=io$$-u
dir=$(mktemp -d /tmp/metaroce-interop.XXXXXX)
app_pid=; peer_pid=; cap_pid=
cleanup() {
  exec 3>&- 2>/dev/null
  for p in $cap_pid $peer_pid $app_pid; do kill -TERM "$p" 2>/dev/null; done
  for p in $cap_pid $peer_pid $app_pid; do wait "$p" 2>/dev/null; done
  for ns in $ns_d $ns_u; do
    local pids
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "/var/run/dpdk/io$$" # the app's runtime files (--file-prefix)
  if [ "${INTEROP_KEEP:-0}" = 1 ]; then echo "kept $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail=0
bad() { echo "FAIL: $*"; fail=1; }

mac_d() { printf '02:6d:0d:00:%02x:01' "$1"; }
mac_u() { printf '02:6d:0e:00:%02x:02' "$1"; }

# --- the two planes
for ns in $ns_d $ns_u; do
  ip netns add "$ns" || exit 1
  ip -n "$ns" link set lo up
  # No IPv6: no router solicitations or ND noise on the DPDK ports.
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
for i in 0 1; do
  ip -n $ns_d link add d$i mtu 9000 address "$(mac_d $i)" type veth \
    peer name u$i netns $ns_u mtu 9000 address "$(mac_u $i)" || exit 1
  ip netns exec $ns_u ethtool -K u$i tx off >/dev/null || exit 1
  ip -n $ns_u addr add 10.0.$i.2/24 dev u$i
  ip -n $ns_d link set d$i up
  ip -n $ns_u link set u$i up
  ip -n $ns_u neigh replace 10.0.$i.1 lladdr "$(mac_d $i)" dev u$i nud permanent
done

# A connection fails after 40 timeouts of a path in a row (the core's default is 12):
# a loaded 2-core host starves a busy-polling process for half a second at times.
# The engines' message size and depth, the same on both sides (a mode may change them
# before start_app).
engine_msg=65536; engine_depth=64
write_config() {
  cat > "$dir/d.json" <<EOF
{
  "address": "10.0.0.1",
  "ports": [0, 1],
  "peers": [{"address": "10.0.0.2", "plane": 0, "mac": "$(mac_u 0)"},
            {"address": "10.0.0.2", "plane": 1, "mac": "$(mac_u 1)"}],
  "udp_checksum_software": true,
  "transport": { "mtu": 1400, "paths": 16, "min_rto_us": 5000, "max_timeouts": 40 },
  "engine": { "message_size": $engine_msg, "tx_depth": $engine_depth }
}
EOF
}

wait_for() { # FILE PATTERN SECONDS [COUNT]
  local n=${4:-1}
  for _ in $(seq $(( $3 * 20 ))); do
    [ "$(grep -c -- "$2" "$1" 2>/dev/null)" -ge "$n" ] && return 0
    sleep 0.05
  done
  echo "timed out waiting for \"$2\" in $(basename "$1")"; return 1
}

# The app in D with its prompt on a fifo (fd 3), so the script types as it goes.
start_app() {
  write_config
  mkfifo "$dir/d.in"
  ip netns exec $ns_d timeout 50 "$app" -l 0,1 --main-lcore 1 --no-pci --no-huge -m 256 \
    --log-level='*:warning' --file-prefix=io$$ \
    --vdev=net_af_packet0,iface=d0 --vdev=net_af_packet1,iface=d1 \
    -- --config "$dir/d.json" -i <"$dir/d.in" >"$dir/d.log" 2>&1 &
  app_pid=$!
  exec 3>"$dir/d.in"
  wait_for "$dir/d.log" "datapath on lcore" 15 || { cat "$dir/d.log"; exit 1; }
}
say() { echo "$*" >&3; }
start_peer() { # LOG ARGS...
  local log=$1; shift
  # The app's transport (the kernel backend's own default min RTO is 5 ms too).
  ip netns exec $ns_u timeout 45 "$peer" --local 10.0.0.2,10.0.1.2 --mtu 1400 --paths 16 \
    --min-rto-us 5000 --max-timeouts 40 --msg $engine_msg --depth $engine_depth --timeout 40 \
    "$@" >"$dir/$log" 2>&1 &
  peer_pid=$!
  wait_for "$dir/$log" "udp_peer: ready" 10 || { cat "$dir/$log"; exit 1; }
}
wait_peer() { # LOG: its exit status must be 0
  wait "$peer_pid"; local rc=$?; peer_pid=
  echo "--- udp_peer (exit $rc)"; cat "$dir/$1"
  [ $rc -eq 0 ] || bad "udp_peer exited with $rc"
}
# One app-driven run: set fwd, start, SECONDS, stop; waits for the app's verification
# line and for U to have sent its verdict (the app waits 2 s for it, which a loaded host
# can exceed: the next run must not start before this one ended on both sides).
# The run's time counts from U's ready: a starved datapath may take the start late.
app_run() { # ENGINE SECONDS RUN_NUMBER [HOOK: run 1 s in; SECONDS whole then]
  local serving
  serving=$(grep -c "udp_peer: serving $1" "$dir/u.log")
  say "set fwd $1"; say "start"
  wait_for "$dir/u.log" "udp_peer: serving $1" 10 $((serving + 1)) || return 1
  if [ -n "${4:-}" ]; then sleep 1; $4; sleep $(( $2 - 1 )); else sleep "$2"; fi
  say "stop"
  wait_for "$dir/u.log" "udp_peer: served" 10 "$3" && wait_for "$dir/d.log" "Data verification" 10 "$3"
}
quit_app() {
  say "show xstats"; say "quit"; exec 3>&-
  wait "$app_pid"; local rc=$?; app_pid=
  echo "--- metaroce app in D (exit $rc)"
  grep -v -E '^ +[a-z_.0-9]+: +0$' "$dir/d.log"
  [ $rc -eq 0 ] || bad "the app exited with $rc"
}
# Every app-driven run: messages moved without an error, and the bytes checked: by U
# (its verdict) for write_bw and send_bw, by the app for read_bw. The app waits 2 s for
# U's verdict; if a starved host makes it give up ("no verdict from the peer"), U's own
# line for the run still says what it found (udp_peer exits 1 on any mismatch).
check_app_runs() { # COUNT
  local n ok late
  n=$(grep -cE "Engine [a-z_]+: [1-9][0-9]* messages, .* 0 errors" "$dir/d.log")
  [ "$n" -eq "$1" ] || bad "$n of $1 app-driven runs moved data without errors"
  grep -q "Data verification: FAILED" "$dir/d.log" && bad "the app found bad bytes"
  ok=$(grep -c "Data verification: ok" "$dir/d.log")
  late=$(grep -c "Data verification: not checked on 1 of 1 connection(s) (no verdict from the peer)" "$dir/d.log")
  [ $((ok + late)) -eq "$1" ] || bad "$ok of $1 app-driven runs verified"
  [ "$late" -eq 0 ] || echo "note: the app stopped waiting for $late verdict(s) of U's; U's lines give them"
  n=$(grep -cE "udp_peer: served [a-z_]+: [1-9][0-9]* messages .* 0 errors, data check (ok|not checked) \(0 bad bytes\)" "$dir/u.log")
  [ "$n" -eq "$1" ] || bad "U served $n of $1 runs cleanly"
  grep -qE "^ +conn_errors: +[1-9]" "$dir/d.log" && bad "the app counted connection errors"
  return 0
}
conn_of() { sed -n 's/^.*connection \([0-9]*\) to 10.0.0.2: established.*$/\1/p' "$dir/d.log" | head -1; }

case $mode in
ops) . "$here/mode_ops.sh" ;;
plane_cut) . "$here/mode_plane_cut.sh" ;;
wire) . "$here/mode_wire.sh" ;;
perftest) . "$here/mode_perftest.sh" ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac
[ $fail -eq 0 ] && echo "=== PASS" || echo "=== FAIL"
exit $fail
