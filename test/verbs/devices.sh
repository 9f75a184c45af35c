#!/bin/bash
# Discovery: ibv_devices and ibv_devinfo -v see metaroce0 through metaroce-run (both
# builds) with an active Ethernet port and a RoCE v2 GID of the node address; without
# the launcher the machine's own libibverbs is untouched (no metaroce0).
set -u
run=$1
fail() { echo "FAIL: $*"; exit 1; }
out=$(METAROCE_ADDR=127.9.1.1 "$run" ibv_devices 2>&1) || fail "ibv_devices: $out"
echo "$out"
grep -Eq '^\s+metaroce0\s+02007ffffe090101' <<<"$out" || fail "ibv_devices lacks metaroce0"
out=$(METAROCE_ADDR=127.9.1.1 "$run" --preload ibv_devices 2>&1) || fail "preload ibv_devices: $out"
grep -q metaroce0 <<<"$out" || fail "preload: ibv_devices lacks metaroce0"
out=$(METAROCE_ADDR=127.9.1.1 "$run" ibv_devinfo -v 2>&1) || fail "ibv_devinfo: $out"
echo "$out"
for p in 'hca_id:\s+metaroce0' 'state:\s+PORT_ACTIVE' 'link_layer:\s+Ethernet' \
         'GID\[  0\]:\s+::ffff:127\.9\.1\.1, RoCE v2' 'atomic_cap:\s+ATOMIC_NONE' \
         'vendor_id:\s+0xffffff'; do
    grep -Eq "$p" <<<"$out" || fail "ibv_devinfo -v lacks /$p/"
done
out=$(METAROCE_ADDR=127.9.1.1,127.9.2.1 "$run" ibv_devinfo -v 2>&1) || fail "two planes: $out"
grep -Eq 'GID\[  1\]:\s+::ffff:127\.9\.2\.1, RoCE v2' <<<"$out" || fail "no GID per plane"
out=$(METAROCE_ADDR=300.1.1.1 "$run" ibv_devinfo 2>&1) && fail "a bad address was accepted"
grep -q 'METAROCE_ADDR=300.1.1.1' <<<"$out" || fail "no clear message for a bad address: $out"
out=$(env -u LD_LIBRARY_PATH -u LD_PRELOAD ibv_devices 2>&1)
grep -q metaroce0 <<<"$out" && fail "metaroce0 visible without metaroce-run"
echo PASS
