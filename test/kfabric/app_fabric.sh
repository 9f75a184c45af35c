#!/usr/bin/env bash
# The metaroce app across the kernel fabric, configured with per-port gateways:
#   "ports": [{"port": 0, "gateway": "<leaf MAC>"}, ...]
# First the config is refused with a precise message for bad gateway values; then
# node A (prompt, host namespace A) connects to node B (host namespace B), runs
# write_bw over both planes and `show planes` must show frames sent on each.
#   app_fabric.sh METAROCE_BINARY
# Skips (exit 77) only when not root or when network namespaces cannot be created.
set -u
app=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: the kernel fabric needs root (network namespaces, veth, tc)"; exit 77
fi
if ! ip netns add "kfprobe$$" 2>/dev/null; then
  echo "SKIP: cannot create network namespaces here"; exit 77
fi
ip netns del "kfprobe$$"

prefix=kfa$$
kf() { "$root/scripts/kfabric.sh" --prefix "$prefix" "$@"; }
dir=$(mktemp -d /tmp/metaroce-kfa.XXXXXX)
cleanup() { kf down >/dev/null 2>&1; rm -rf "$dir"; }
trap cleanup EXIT
fail=0
eal=(--no-pci --no-huge -m 256 --log-level='*:warning')

# write_config FILE ADDRESS GATEWAY0 GATEWAY1
write_config() {
  cat > "$1" <<EOF
{
  "address": "$2",
  "ports": [{"port": 0, "gateway": "$3"}, {"port": 1, "gateway": "$4"}],
  "transport": { "mtu": 1400, "paths": 16, "min_rto_us": 5000, "max_timeouts": 20 },
  "engine": { "message_size": 65536, "tx_depth": 64 }
}
EOF
}

echo "=== config errors"
bad_config() { # gateway0 expected-message
  write_config "$dir/bad.json" 10.0.0.1 "$1" 02:6b:1a:00:01:fe
  local out
  out=$("$app" -l 0 "${eal[@]}" --file-prefix="$prefix-bad" -- --config "$dir/bad.json" 2>&1 </dev/null)
  local rc=$?
  echo "gateway \"$1\": exit $rc: $(echo "$out" | grep 'metaroce:')"
  if [ $rc -eq 0 ] || ! echo "$out" | grep -qF -- "$2"; then
    echo "FAIL: expected exit 1 and \"$2\""; fail=1
  fi
}
bad_config "02:6b:1a:00:00" "bad.json: ports[0].gateway: expected a MAC \"aa:bb:cc:dd:ee:ff\", got \"02:6b:1a:00:00\""
bad_config "01:00:5e:00:00:01" "ports[0].gateway: expected a unicast MAC (not zero, broadcast or multicast), got \"01:00:5e:00:00:01\""
bad_config "ff:ff:ff:ff:ff:ff" "ports[0].gateway: expected a unicast MAC"
sed 's/"gateway"/"gw"/' "$dir/bad.json" > "$dir/bad2.json"
out=$("$app" -l 0 "${eal[@]}" --file-prefix="$prefix-bad" -- --config "$dir/bad2.json" 2>&1 </dev/null)
echo "key \"gw\": $(echo "$out" | grep 'metaroce:')"
echo "$out" | grep -qF 'ports[0]: unknown key "gw" (known: port, gateway)' || { echo "FAIL: unknown key not named"; fail=1; }

echo "=== app pair over the fabric"
kf --planes 2 up || exit 1
eval "$(kf env)"
IFS=, read -r gw_a0 gw_a1 <<<"$KF_GW_A"
IFS=, read -r gw_b0 gw_b1 <<<"$KF_GW_B"
write_config "$dir/a.json" 10.0.0.1 "$gw_a0" "$gw_a1"
write_config "$dir/b.json" 10.0.0.2 "$gw_b0" "$gw_b1"
vdevs=("--vdev=net_af_packet0,iface=p0" "--vdev=net_af_packet1,iface=p1")
{
  sleep 2
  echo "connect 10.0.0.2"
  echo "set fwd write_bw"
  echo "start"
  sleep 2
  echo "stop"
  echo "show planes"
  echo "quit"
} | ip netns exec "$KF_NS_A" timeout 40 "$app" -l 0,1 --main-lcore 1 "${eal[@]}" \
      --file-prefix="$prefix-a" "${vdevs[@]}" -- --config "$dir/a.json" -i >"$dir/a.log" 2>&1 &
apid=$!
ip netns exec "$KF_NS_B" timeout 40 "$app" -l 0,1 --main-lcore 0 "${eal[@]}" \
  --file-prefix="$prefix-b" "${vdevs[@]}" -- --config "$dir/b.json" </dev/null >"$dir/b.log" 2>&1 &
bpid=$!
wait $apid; arc=$?
kill -TERM $bpid 2>/dev/null; wait $bpid
echo "--- node A (exit $arc)"; cat "$dir/a.log"
[ $arc -eq 0 ] || fail=1
grep -qF "to 10.0.0.2: established" "$dir/a.log" || { echo "FAIL: not established"; fail=1; }
grep -Eq "Engine write_bw: [1-9][0-9]* messages.*, 0 errors" "$dir/a.log" ||
  { echo "FAIL: write_bw moved nothing or had errors"; fail=1; }
# show planes rows: plane port name mac address link admin used detected paths tx rx
mapfile -t tx < <(awk '/^plane +port/ {t=1; next} t && /^[0-9]+ +[0-9]+ / {print $11}' "$dir/a.log")
echo "frames sent per plane (show planes): ${tx[*]:-none}"
[ "${#tx[@]}" -eq 2 ] && [ "${tx[0]}" -gt 0 ] && [ "${tx[1]}" -gt 0 ] ||
  { echo "FAIL: both planes should have carried frames"; fail=1; }
kf status
[ $fail -eq 0 ] && echo "=== PASS" || echo "=== FAIL"
exit $fail
