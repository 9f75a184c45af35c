# interop.sh perftest (sourced): Debian's unmodified ib_write_bw through the Verbs front
# end on both backends, over the two planes: the server in D on the DPDK backend
# (net_af_packet on d0, d1), the client in U on the kernel-UDP backend. perftest
# exchanges its QP attributes over TCP: the veths of plane 0 also carry 192.168.77.0/24
# for it (the kernel in D drops the MetaRoCE frames to 10.0.x.1, not its address).
# ib_write_bw checks no data (the ops test does); this is the user-visible form.
[ -n "$run" ] || { echo "perftest needs METAROCE_RUN"; exit 2; }
ip -n $ns_d addr add 192.168.77.1/24 dev d0
ip -n $ns_u addr add 192.168.77.2/24 dev u0
read -r u0_start u1_start <<<"$(ip netns exec $ns_u cat /sys/class/net/u0/statistics/rx_packets /sys/class/net/u1/statistics/rx_packets | tr '\n' ' ')"
common=(METAROCE_MTU=1024 METAROCE_MIN_RTO_US=5000 METAROCE_LOG=1)
. "$(dirname "${BASH_SOURCE[0]}")/../verbs/pair_lib.sh" # run_attempts
start_server() { # app_pid: interop.sh's cleanup stops it
  ip netns exec $ns_d env "${common[@]}" METAROCE_BACKEND=dpdk METAROCE_ADDR=10.0.0.1,10.0.1.1 \
    METAROCE_EAL="-l 0 --no-pci --no-huge -m 256 --vdev=net_af_packet0,iface=d0 --vdev=net_af_packet1,iface=d1" \
    timeout 40 "$run" ib_write_bw -x 0 -D 2 >"$dir/server.log" 2>&1 &
  app_pid=$!
}
# Its output is block-buffered in a file: wait for perftest's TCP port in D instead.
wait_server() {
  local _
  for _ in $(seq 300); do
    ip netns exec $ns_d ss -ltn 2>/dev/null | grep -q ':18515 ' && break
    sleep 0.05
  done
}
run_client() {
  ip netns exec $ns_u env "${common[@]}" METAROCE_ADDR=10.0.0.2,10.0.1.2 \
    timeout 30 "$run" ib_write_bw -x 0 -D 2 192.168.77.1 >"$dir/client.log" 2>&1
}
run_attempts "$dir/client.log" "$dir/server.log"
app_pid=
read -r u0_end u1_end <<<"$(ip netns exec $ns_u cat /sys/class/net/u0/statistics/rx_packets /sys/class/net/u1/statistics/rx_packets | tr '\n' ' ')"
echo "--- server: ib_write_bw on the DPDK backend (exit $src)"; cat "$dir/server.log"
echo "--- client: ib_write_bw on the kernel-UDP backend (exit $crc)"; cat "$dir/client.log"
[ $src -eq 0 ] && [ $crc -eq 0 ] || bad "ib_write_bw exited with $src (server), $crc (client)"
# The result row: bytes, iterations, peak and average MB/s, Mpps.
row() { awk '$1 == 65536 && NF >= 5 {print $2, $4}' "$1" | head -1; }
read -r s_iters s_bw <<<"$(row "$dir/server.log")"
read -r c_iters c_bw <<<"$(row "$dir/client.log")"
echo "ib_write_bw 64 KiB: client ${c_iters:-?} iterations at ${c_bw:-?} MB/s, server ${s_iters:-?} iterations"
[ -n "${c_iters:-}" ] && [ "${c_iters:-0}" -gt 0 ] && [ "${c_iters}" = "${s_iters:-}" ] ||
  bad "no result row, or the sides disagree"
echo "frames U received per plane: $((u0_end - u0_start)) $((u1_end - u1_start))"
[ $((u0_end - u0_start)) -gt 100 ] && [ $((u1_end - u1_start)) -gt 100 ] || bad "both planes should carry frames"
