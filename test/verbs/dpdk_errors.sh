#!/bin/bash
# METAROCE_BACKEND=dpdk refuses an incomplete configuration with a message that says
# what to set (ibv_devinfo fails to open metaroce0), and opens a memif port when it is
# complete.   dpdk_errors.sh METAROCE_RUN
set -u
run=$1
dir=$(mktemp -d /tmp/metaroce-vdpdk-err.XXXXXX)
trap 'rm -rf "$dir"' EXIT
export METAROCE_BACKEND=dpdk
fail=0
expect() { # pattern, then the environment for one ibv_devinfo run
    local pat=$1 out
    shift
    out=$(env "$@" "$run" ibv_devinfo 2>&1)
    if grep -q -- "$pat" <<<"$out"; then
        echo "ok: $* -> $pat"
    else
        echo "FAIL: $* printed:"; echo "$out"; fail=1
    fi
}
expect 'needs METAROCE_ADDR' METAROCE_ADDR= METAROCE_EAL=
expect 'needs METAROCE_EAL' METAROCE_ADDR=10.0.0.1 METAROCE_EAL=
expect "plane 1's address must be 10.0.1.1" METAROCE_ADDR=10.0.0.1,10.0.0.3 METAROCE_EAL=-l0
expect 'port 0 does not exist' METAROCE_ADDR=10.0.0.1 "METAROCE_EAL=-l 0 --no-pci --no-huge -m 128"
expect 'names 1 port(s) for 2 plane' METAROCE_ADDR=10.0.0.1,10.0.1.1 METAROCE_DPDK_PORTS=0 METAROCE_EAL=-l0
expect 'udp or dpdk' METAROCE_BACKEND=xdp
expect 'hca_id:.*metaroce0' METAROCE_ADDR=10.0.0.1 \
    "METAROCE_EAL=-l 0 --no-pci --no-huge -m 128 --vdev=net_memif0,role=server,socket=$dir/m.sock,socket-abstract=no,bsize=8192"
exit $fail
