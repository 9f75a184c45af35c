#!/usr/bin/env bash
# Checks the fabric's BPF impairments themselves, without DPDK: 20000 numbered UDP
# frames from host B to host A over plane 0 with 5 % loss, 10 % CE marking, 5 %
# duplicates and 5 % reordering set; the receiver must see each within tolerance,
# CE only on ECT frames and no bad IPv4 checksum (the program patches it).
#   impair_check.sh
# Skips (exit 77) only when not root or when network namespaces cannot be created.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: the kernel fabric needs root (network namespaces, veth, tc)"; exit 77
fi
if ! ip netns add "kfprobe$$" 2>/dev/null; then
  echo "SKIP: cannot create network namespaces here"; exit 77
fi
ip netns del "kfprobe$$"

prefix=kfi$$
kf() { "$root/scripts/kfabric.sh" --prefix "$prefix" "$@"; }
trap 'kf down >/dev/null 2>&1' EXIT
kf --planes 1 up || exit 1
eval "$(kf env)"
kf impair --loss 5 --ecn 10 --dup 5 --reorder 5 || exit 1
count=20000
out=$(mktemp /tmp/metaroce-kfi.XXXXXX)
ip netns exec "$KF_NS_A" python3 "$here/impair_probe.py" recv p0 15 $count > "$out" &
rpid=$!
sleep 0.5
ip netns exec "$KF_NS_B" python3 "$here/impair_probe.py" send p0 \
  "$(ip netns exec "$KF_NS_B" cat /sys/class/net/p0/address)" "${KF_GW_B%%,*}" 10.0.0.2 10.0.0.1 $count 8
wait $rpid
kf status
python3 - "$out" $count <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
u = max(1, r["unique"])
ect = max(1, sum(1 for s in range(n) if s % 2 == 0) * u / n)
m = {
    "loss %": 100.0 * r["lost"] / n,
    "duplicates %": 100.0 * r["duplicates"] / u,
    "reordered %": 100.0 * r["reordered"] / u,
    "CE on ECT frames %": 100.0 * r["ce_ect"] / ect,
}
print("received:", json.dumps(r))
fails = []
for k, (lo, hi) in {"loss %": (3.5, 6.5), "duplicates %": (3.5, 6.5),
                    "reordered %": (2.5, 6.5), "CE on ECT frames %": (7.0, 13.0)}.items():
    ok = lo <= m[k] <= hi
    print(f"  {'ok  ' if ok else 'FAIL'}  {k}: {m[k]:.2f} (set {5 if 'CE' not in k else 10}, accepted {lo}..{hi})")
    fails += [] if ok else [k]
for k in ("ce_not_ect", "bad_ip_checksum"):
    ok = r[k] == 0
    print(f"  {'ok  ' if ok else 'FAIL'}  {k}: {r[k]} (must be 0)")
    fails += [] if ok else [k]
print("=== PASS" if not fails else "=== FAIL: " + ", ".join(fails))
sys.exit(1 if fails else 0)
PY
rc=$?
rm -f "$out"
exit $rc
