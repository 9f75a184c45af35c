#!/usr/bin/env bash
# metaroce-perf across the kernel fabric (scripts/kfabric.sh): server in host
# namespace A (10.0.0.1), client in B (10.0.0.2), both on net_af_packet with one
# port per plane and the leaf router's MAC as next hop; write_bw, data verified.
#   perf_fabric.sh PERF_BINARY MODE
# MODE loss:    1 % iid loss on every middle link (our BPF program): the transfer
#               completes, data verified, no connection error.
# MODE cut:     mid-transfer, host B's (the data sender's) plane-1 link goes down at
#               leaf B: the transfer completes, data verified, no connection error; the
#               client's plane log gives the detection time and the first frame on
#               plane 0 after it (asserted <= 1 ms).
# MODE restore: host A's plane-1 link goes down at leaf A and comes back 1.5 s later:
#               the same checks, and plane 1 is detected usable again and carries
#               frames again.
# Skips (exit 77) only when not root or when network namespaces cannot be created.
set -u
perf=$1; mode=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
case $mode in loss|cut|restore) ;; *) echo "unknown mode '$mode' (loss, cut, restore)"; exit 2 ;; esac
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: the kernel fabric needs root (network namespaces, veth, tc)"; exit 77
fi
if ! ip netns add "kfprobe$$" 2>/dev/null; then
  echo "SKIP: cannot create network namespaces here"; exit 77
fi
ip netns del "kfprobe$$"

prefix=kf$$
kf() { "$root/scripts/kfabric.sh" --prefix "$prefix" "$@"; }
dir=$(mktemp -d /tmp/metaroce-kf.XXXXXX)
# KFABRIC_KEEP=1 keeps the logs (the directory is printed) for a closer look.
cleanup() { kf down >/dev/null 2>&1; if [ "${KFABRIC_KEEP:-0}" = 1 ]; then echo "logs kept in $dir"; else rm -rf "$dir"; fi; }
trap cleanup EXIT
kf --planes 2 up || exit 1
eval "$(kf env)"

# Transport timers for software links on shared cores: a busy-polling process that
# is descheduled for a few ms must not look like loss.
common=(--mtu 1400 --planes 2 --min-rto-us 5000 --max-timeouts 20 --timeout 40 --plane-log --counters)
case $mode in
  loss) kf impair --loss 1 || exit 1; run=(-n 1200) ;;
  cut) run=(-D 4) ;;
  restore) run=(-D 6) ;;
esac
eal() { # file-prefix lcore
  echo "-l $2 --no-pci --no-huge -m 256 --file-prefix=$1 --log-level=*:warning" \
       "--vdev=net_af_packet0,iface=p0 --vdev=net_af_packet1,iface=p1"
}
cores=$(( $(nproc) > 1 ? 1 : 0 ))
# shellcheck disable=SC2046
ip netns exec "$KF_NS_A" timeout 60 "$perf" $(eal "$prefix-s" 0) -- write_bw "${common[@]}" \
  "${run[@]}" --gateway "$KF_GW_A" </dev/null >"$dir/server.out" 2>"$dir/server.err" &
spid=$!
sleep 0.5
# shellcheck disable=SC2046
ip netns exec "$KF_NS_B" timeout 60 stdbuf -oL "$perf" $(eal "$prefix-c" $cores) -- write_bw "${common[@]}" \
  "${run[@]}" --gateway "$KF_GW_B" 10.0.0.1 </dev/null >"$dir/client.out" 2>"$dir/client.err" &
cpid=$!

cut_ns=0; restore_ns=0; t0=0
# Whose plane-1 link is cut: cut takes the data sender's (B, the client: its own port
# then refuses frames), restore the receiver's (A); KFABRIC_CUT_SIDE=a|b overrides.
side=${KFABRIC_CUT_SIDE:-$([ "$mode" = cut ] && echo b || echo a)}
if [ "$mode" != loss ]; then
  # The client prints the result header (line-buffered) just before it starts sending.
  for _ in $(seq 200); do grep -q '#bytes' "$dir/client.out" 2>/dev/null && break; sleep 0.05; done
  sleep 1.5
  # kfabric.sh prints "link PLANE SIDE down|up T0 T1" around the `ip link set`.
  read -r _ _ _ _ cut_ns t1 < <(kf link 1 down "$side")
  echo "plane 1 cut (host ${side^^}'s link at its leaf) at $cut_ns ns (ip link took $(( (t1 - cut_ns) / 1000 )) us)"
  if [ "$mode" = restore ]; then
    sleep 1.5
    # Re-admission counts from when the link, its route and neighbour are all back.
    read -r _ _ _ _ t0 restore_ns < <(kf link 1 up "$side")
    echo "plane 1 restored at $restore_ns ns (link up, route and neighbour took $(( (restore_ns - t0) / 1000 )) us)"
  fi
fi
wait $cpid; crc=$?
wait $spid; src=$?
kf status > "$dir/fabric.txt"
for side in client server; do
  echo "=== $side"; grep -v '^plane_log ' "$dir/$side.out"; cat "$dir/$side.err"
done
echo "=== fabric"; cat "$dir/fabric.txt"
python3 "$here/analyze.py" --mode "$mode" --dir "$dir" --client-rc "$crc" --server-rc "$src" \
  --cut-ns "$cut_ns" --restore-ns "$restore_ns" --restore-start-ns "$t0"
