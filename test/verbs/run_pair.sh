#!/bin/bash
# Runs an unmodified Debian Verbs program as server and client over metaroce
# (two processes, two node addresses on loopback) and checks both exit 0 and the
# client's output matches a pattern.
#   run_pair.sh METAROCE_RUN NET SECONDS PATTERN SERVER_CMD... -- CLIENT_ARGS...
# NET is the test's private /24 on loopback (127.9.NET.1 serves, .2 is the client);
# the client command is the server command plus CLIENT_ARGS (its server address).
set -u
run=$1 net=$2 secs=$3 pattern=$4
shift 4
server=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do server+=("$1"); shift; done
shift
client=("${server[@]}" "$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# Both nodes log (connections, bindings, closing counters): a failure shows its cause.
export METAROCE_LOG=${METAROCE_LOG:-1}
. "$(dirname "$0")/pair_lib.sh"
start_server() { METAROCE_ADDR=127.9.$net.1 timeout "$secs" "$run" "${server[@]}" >"$dir/server" 2>&1 & }
run_client() { METAROCE_ADDR=127.9.$net.2 timeout "$secs" "$run" "${client[@]}" >"$dir/client" 2>&1; }
run_attempts "$dir/client" "$dir/server"
echo "== server: ${server[*]} (exit $src)"; cat "$dir/server"
echo "== client: ${client[*]} (exit $crc)"; cat "$dir/client"
if [ $src -ne 0 ] || [ $crc -ne 0 ]; then
    echo "FAIL: exit status server $src client $crc (124: timed out after ${secs}s)"
    exit 1
fi
if ! grep -Eq "$pattern" "$dir/client"; then
    echo "FAIL: client output lacks /$pattern/"
    exit 1
fi
echo PASS
