#!/usr/bin/env bash
# A real transfer between two metaroce apps over net_memif is captured with DPDK's own
# dpdk-dumpcap (the app serves rte_pdump) and decoded by tshark with our dissector; every
# MetaRoCE frame must decode with the same fields the codec itself reads from it
# (tools/wireshark/pcap_fields), and every opcode the transfer produced must appear.
# dpdk-dumpcap attaches as a secondary process, which needs hugepages: the test
# reserves them (root) and gives back exactly what it took. (A snapshot length of 65535
# crashes dpdk-dumpcap 22.11; 8192 holds our largest frame.)
#   capture_decode.sh METAROCE PCAP_FIELDS DISSECTOR.lua CONFIG_DIR
set -u
app=$1; fields_tool=$2; lua=$3; cfg=$4
dir=$(mktemp -d /tmp/metaroce-cap.XXXXXX)
pa=cap-a-$$; pb=cap-b-$$
pages_before=$(cat /proc/sys/vm/nr_hugepages)
mounted_here=0
cleanup() {
  rm -f /dev/hugepages/${pa}map_* /dev/hugepages/${pb}map_* 2>/dev/null
  [ "$mounted_here" = 1 ] && umount /dev/hugepages
  echo "$pages_before" > /proc/sys/vm/nr_hugepages
  rm -rf "$dir"
}
trap cleanup EXIT
if [ "$(id -u)" -ne 0 ]; then echo "needs root (hugepages for dpdk-dumpcap)"; exit 1; fi
command -v tshark >/dev/null || { echo "tshark missing (scripts/install-deps.sh installs it)"; exit 1; }
[ "$pages_before" -ge 400 ] || echo $((pages_before + 400)) > /proc/sys/vm/nr_hugepages
if ! grep -q ' /dev/hugepages hugetlbfs' /proc/mounts; then
  mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages && mounted_here=1
fi
vdev=net_memif0,socket=$dir/m.sock,socket-abstract=no,bsize=8192
eal=(-m 256 --no-pci --log-level='*:warning')
wait_for() { # FILE PATTERN SECONDS
  for _ in $(seq $(( $3 * 10 ))); do grep -q -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
{
  # The transfer starts once dpdk-dumpcap is capturing.
  for _ in $(seq 200); do [ -f "$dir/capturing" ] && break; sleep 0.1; done
  echo "connect 10.0.0.2"
  sleep 0.5
  for e in read_bw write_bw send_lat; do echo "set fwd $e"; echo "start"; sleep 0.4; echo "stop"; done
  echo "show conn"
  # dpdk-dumpcap is a secondary of this process: it must detach before we exit.
  for _ in $(seq 150); do [ -f "$dir/captured" ] && break; sleep 0.1; done
  echo "quit"
} | timeout 40 "$app" -l 0,1 --main-lcore 1 "${eal[@]}" --file-prefix=$pa "--vdev=$vdev,role=server" \
      -- --config "$cfg/node-a.json" -i >"$dir/a.log" 2>&1 &
apid=$!
sleep 0.7
timeout 30 "$app" -l 0,1 --main-lcore 0 "${eal[@]}" --huge-unlink --file-prefix=$pb "--vdev=$vdev,role=client" \
  -- --config "$cfg/node-b.json" </dev/null >"$dir/b.log" 2>&1 &
bpid=$!
wait_for "$dir/a.log" "metaroce: node" 15 || { echo "node A did not start"; cat "$dir/a.log"; exit 1; }
timeout 30 stdbuf -oL dpdk-dumpcap --file-prefix=$pa -i 0 -P -s 8192 -q -c 30000 -a duration:8 -w "$dir/cap.pcap" \
  >"$dir/dumpcap.log" 2>&1 &
dumpcap_pid=$!
wait_for "$dir/dumpcap.log" "Capturing on" 15
# B must be up too (its memif end connects A's port): under load it once started after A's
# CONNECTs had all timed out, and nothing was captured.
wait_for "$dir/b.log" "metaroce: node" 15 || { echo "node B did not start"; cat "$dir/b.log"; }
sleep 0.3
touch "$dir/capturing"
wait $dumpcap_pid
dumpcap_rc=$?
touch "$dir/captured"
wait $apid
kill -TERM $bpid 2>/dev/null; wait $bpid 2>/dev/null
fail=0
if [ $dumpcap_rc -ne 0 ] || [ ! -s "$dir/cap.pcap" ]; then
  echo "dpdk-dumpcap failed (rc $dumpcap_rc):"; cat "$dir/dumpcap.log"; tail -5 "$dir/a.log"; exit 1
fi
"$fields_tool" "$dir/cap.pcap" > "$dir/codec.tsv" || exit 1
tshark -X lua_script:"$lua" -r "$dir/cap.pcap" -Y metaroce -T fields -E separator=/t \
  -e metaroce.opcode -e metaroce.dst_conn -e metaroce.psn -e metaroce.path -e metaroce.msn \
  -e metaroce.offset -e metaroce.msg_len -e metaroce.rx_pkts -e metaroce.ce_pkts -e metaroce.sack_count \
  -e metaroce.nak_reason -e metaroce.src_conn -e metaroce.token > "$dir/tshark.tsv" 2>"$dir/tshark.err"
frames=$(wc -l < "$dir/codec.tsv")
echo "captured $(tshark -r "$dir/cap.pcap" 2>/dev/null | wc -l) frames, $frames MetaRoCE packets"
echo "opcodes seen: $(cut -f1 "$dir/codec.tsv" | sort | uniq -c | tr -s ' ' | tr '\n' ',')"
[ "$frames" -ge 100 ] || { echo "too few packets captured"; cat "$dir/dumpcap.log"; tail -5 "$dir/a.log"; fail=1; }
if ! diff -q "$dir/codec.tsv" "$dir/tshark.tsv" >/dev/null; then
  echo "dissector and codec disagree:"; diff "$dir/codec.tsv" "$dir/tshark.tsv" | head -10; fail=1
else
  echo "every packet decodes with the codec's fields"
fi
for op in 0x20 0x26 0x21 0x05 0x06 0x10; do # CONNECT COOKIE ACCEPT READ_REQ READ_RESP ACK
  cut -f1 "$dir/codec.tsv" | grep -qx "$op" || { echo "no $op in the capture"; fail=1; }
done
if grep -q malformed "$dir/codec.tsv" || tshark -X lua_script:"$lua" -r "$dir/cap.pcap" -Y _ws.malformed 2>/dev/null | grep -q .; then
  echo "malformed packets in the capture"; fail=1
fi
exit $fail
