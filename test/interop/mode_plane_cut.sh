# interop.sh plane_cut (sourced): write_bw each way over both planes, plane 1 cut 1 s
# into the run by taking a veth down. The run must go on over plane 0: zero errors,
# data verified, frames on plane 0 after the cut, none on plane 1 (kernel counters of
# the receiving side's veths: independent of both stacks).
rx() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/rx_packets"; }
snapshot() { # NS IF0 IF1 -> "rx0 rx1"
  echo "$(rx "$1" "$2") $(rx "$1" "$3")"
}
cut() { # NS IF: down, remembering the receiving side's counters just before
  before=$(snapshot "$cut_rx_ns" "$cut_rx0" "$cut_rx1")
  local t0 t1
  t0=$(date +%s%N); ip -n "$1" link set "$2" down; t1=$(date +%s%N)
  down=$(snapshot "$cut_rx_ns" "$cut_rx0" "$cut_rx1") # frames still flowed while ip ran
  echo "cut: $2 in ${1#io$$-} down ($(( (t1 - t0) / 1000 )) us)"
}
# The receiver's frames per plane before the cut (plane 1 must have been in use) and
# after it (plane 0 must carry the run, plane 1 nothing).
check_moved() { # WHAT
  local after b0 b1 d0 d1 a0 a1
  after=$(snapshot "$cut_rx_ns" "$cut_rx0" "$cut_rx1")
  read -r b0 b1 <<<"$before"; read -r d0 d1 <<<"$down"; read -r a0 a1 <<<"$after"
  echo "$1: receiver's frames before the cut: plane 0 $((b0 - start0)), plane 1 $((b1 - start1));" \
       "while ip ran: $((d0 - b0)), $((d1 - b1)); after it: plane 0 $((a0 - d0)), plane 1 $((a1 - d1))"
  [ $((b1 - start1)) -gt 100 ] || bad "$1: plane 1 carried little before the cut"
  [ $((a0 - d0)) -gt 1000 ] || bad "$1: plane 0 did not take the traffic"
  [ $((a1 - d1)) -eq 0 ] || bad "$1: frames arrived on the cut plane"
}
cut_u1() { cut $ns_u u1; }
cut_d1() { cut $ns_d d1; }

start_app
start_peer u.log --serve 1 --drive write_bw --seconds 4
say "connect 10.0.0.2"
wait_for "$dir/d.log" "to 10.0.0.2: established" 10 || bad "no connection"

echo "=== the app sends (write_bw, 4 s); U's end of plane 1 goes down 1 s in"
cut_rx_ns=$ns_u; cut_rx0=u0; cut_rx1=u1
read -r start0 start1 <<<"$(snapshot $ns_u u0 u1)"
app_run write_bw 4 1 cut_u1 || bad "the app-driven run did not end"
check_moved "app -> U"

# Plane 1 back (the kernel drops the static neighbour with the link), and a moment for
# both ends to re-admit it by probes.
ip -n $ns_u link set u1 up
ip -n $ns_u neigh replace 10.0.1.1 lladdr "$(mac_d 1)" dev u1 nud permanent
sleep 1

echo "=== U sends (write_bw, 4 s); D's end of plane 1 goes down 1 s in"
cut_rx_ns=$ns_d; cut_rx0=d0; cut_rx1=d1
wait_for "$dir/u.log" "udp_peer: write_bw running" 15 || bad "U's run did not start"
read -r start0 start1 <<<"$(snapshot $ns_d d0 d1)"
sleep 1
cut_d1
wait_peer u.log
check_moved "U -> app"
quit_app
check_app_runs 1
grep -qE "udp_peer: served write_bw: [1-9][0-9]* messages .* 0 errors, data check ok \(0 bad bytes\)" "$dir/u.log" ||
  bad "U's check of the app's run"
grep -qE "udp_peer: drove write_bw: [1-9][0-9]* messages, .* 0 errors; .*peer verdict ok \(0 bad bytes\)" "$dir/u.log" ||
  bad "U's run, checked by the app"
grep -q "conn_errors 0," "$dir/u.log" || bad "U counted connection errors"
