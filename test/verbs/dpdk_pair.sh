#!/bin/bash
# Runs an unmodified Debian Verbs program as server and client over metaroce's DPDK
# backend: two processes, each with the EAL in-process (--no-huge), joined by one
# net_memif link per plane (the server's side is the memif server). Checks both exit
# 0 and the client's output matches a pattern.
#   dpdk_pair.sh METAROCE_RUN PLANES SECONDS PATTERN SERVER_CMD... -- CLIENT_ARGS...
# Node addresses 10.0.0.1 (server) and 10.0.0.2, plane p at +p*256. The client
# command is the server command plus CLIENT_ARGS (perftest's TCP peer, 127.0.0.1).
# DPDK_PAIR_OUT=DIR keeps the logs.
set -u
run=$1 planes=$2 secs=$3 pattern=$4
shift 4
server=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do server+=("$1"); shift; done
shift
client=("${server[@]}" "$@")
dir=$(mktemp -d /tmp/metaroce-vdpdk.XXXXXX)
trap 'rm -rf "$dir"' EXIT
eal() { # role
    local a="-l 0 --no-pci --no-huge -m 256" p
    for p in $(seq 0 $((planes - 1))); do
        a+=" --vdev=net_memif$p,role=$1,socket=$dir/memif$p.sock,socket-abstract=no,bsize=8192"
    done
    echo "$a"
}
addrs() { # last octet
    local a="" p
    for p in $(seq 0 $((planes - 1))); do a+="${a:+,}10.0.$p.$1"; done
    echo "$a"
}
export METAROCE_BACKEND=dpdk
. "$(dirname "$0")/pair_lib.sh"
start_server() {
    METAROCE_EAL=$(eal server) METAROCE_ADDR=$(addrs 1) \
        timeout "$secs" "$run" "${server[@]}" >"$dir/server" 2>&1 &
}
run_client() {
    METAROCE_EAL=$(eal client) METAROCE_ADDR=$(addrs 2) \
        timeout "$secs" "$run" "${client[@]}" >"$dir/client" 2>&1
}
run_attempts "$dir/client" "$dir/server"
echo "== server: ${server[*]} (exit $src)"; cat "$dir/server"
echo "== client: ${client[*]} (exit $crc)"; cat "$dir/client"
[ -n "${DPDK_PAIR_OUT:-}" ] && cp "$dir/server" "$dir/client" "$DPDK_PAIR_OUT/"
if [ $src -ne 0 ] || [ $crc -ne 0 ]; then
    echo "FAIL: exit status server $src client $crc (124: timed out after ${secs}s)"
    exit 1
fi
if ! grep -Eq "$pattern" "$dir/client"; then
    echo "FAIL: client output lacks /$pattern/"
    exit 1
fi
echo PASS
