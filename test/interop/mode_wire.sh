# interop.sh wire (sourced): the same operations sent by each stack, captured on the
# wire (both veths, U's ends, both directions) and compared field by field.
#   phase 1: the app connects, drives write_bw, send_bw, read_bw (U serves), closes
#   phase 2: U connects, drives the same (the app serves), closes
# So each side sends, in some phase, every opcode of the handshake, the operations,
# their ACKs and the close. Shapes, not volume: the capture keeps every packet of one
# message in 8 (by MSN; all of stream 0, the control messages), one ACK in 8 (by PSN)
# and every other opcode, which the dissector reads in seconds.
msg_ops="udp[9] >= 0x01 and udp[9] <= 0x06"  # UDP payload: BTH opcode at 1, PSN at 8..11,
sample="(($msg_ops) and (udp[28:2] = 0 or udp[35] & 7 = 0))"  # stream at 20, MSN at 24..27
sample="$sample or (udp[9] = 0x10 and udp[19] & 7 = 0) or udp[9] > 0x10"
start_app
# (dumpcap applies -f to the interfaces after it)
ip netns exec $ns_u dumpcap -B 32 -f "udp dst port 4796 and ($sample)" -i u0 -i u1 -w "$dir/cap.pcapng" \
  >"$dir/dumpcap.log" 2>&1 &
cap_pid=$!
wait_for "$dir/dumpcap.log" "Capturing on" 10 || { cat "$dir/dumpcap.log"; exit 1; }
# "Capturing on" comes before the filter is on both interfaces: a handshake sent at once
# was missed once in CI (no CONNECT/COOKIE/ACCEPT of phase 1 in the capture).
sleep 1

start_peer u.log --serve 3 --await-close 1
say "connect 10.0.0.2"
wait_for "$dir/d.log" "to 10.0.0.2: established" 10 || bad "no connection"
k=0
for t in write_bw send_bw read_bw; do
  k=$((k + 1))
  app_run $t 0.5 $k || bad "app-driven $t did not end"
done
say "close $(conn_of)"
wait_peer u.log
start_peer u2.log --connect 10.0.0.1 --drive write_bw,send_bw,read_bw --seconds 0.5
wait_peer u2.log
sleep 0.2
kill -INT $cap_pid; wait $cap_pid; cap_pid=
tail -2 "$dir/dumpcap.log"
quit_app
check_app_runs 3
# Both receivers' own checksum checks: the app's datapath and U's kernel.
grep -qE "bad_(udp|ip)_checksum: +[1-9]" "$dir/d.log" && bad "the app dropped frames for their checksum"
csum_err=$(ip netns exec $ns_u awk '/^Udp:/ {n++} /^Udp:/ && n == 2 {print $7}' /proc/net/snmp)
echo "U's kernel: UDP InCsumErrors $csum_err"
[ "$csum_err" = 0 ] || bad "U's kernel dropped datagrams for their checksum"

echo "=== capture"
editcap -F pcap "$dir/cap.pcapng" "$dir/cap.pcap" || bad "editcap failed"
"$fields_tool" "$dir/cap.pcap" >"$dir/codec.tsv" || bad "pcap_fields failed"
fields=()
for f in $(python3 -c "import sys; sys.path.insert(0, '$here'); import wire_compare; print(' '.join(wire_compare.ALL_FIELDS))"); do
  fields+=(-e "$f")
done
tshark -X lua_script:"$lua" -r "$dir/cap.pcap" -Y metaroce -T fields -E separator=/t -E occurrence=f \
  "${fields[@]}" >"$dir/fields.tsv" 2>"$dir/tshark.err" || { cat "$dir/tshark.err"; bad "tshark failed"; }
echo "$(wc -l <"$dir/fields.tsv") MetaRoCE frames captured"
python3 "$here/wire_compare.py" "$dir/fields.tsv" 1 2 "$dir/codec.tsv" || bad "the two stacks' frames differ"
