#!/usr/bin/env bash
# Runs a metaroce-perf server and client over net_memif (two processes, --no-huge)
# and passes when both exit 0 and the data was verified.
#   perf_pair.sh PERF_BINARY TEST [metaroce-perf options...]
# Each side runs in its own directory (s/, c/) so relative output files (--out_json)
# do not collide; PERF_PAIR_OUT=DIR keeps them and the logs there.
# PERF_PAIR_BSIZE (default 8192) is the memif buffer size; empty leaves the PMD default.
# PERF_PAIR_VDEV: more memif arguments (",zero-copy=yes"); PERF_PAIR_EAL: more EAL options;
# PERF_PAIR_HUGE=1: hugepages instead of --no-huge (the caller reserves them).
set -u
perf=$(realpath "$1"); test_name=$2; shift 2
dir=$(mktemp -d /tmp/metaroce-it.XXXXXX)
mkdir -p "$dir/s" "$dir/c"
bsize=${PERF_PAIR_BSIZE-8192}
bopt=${bsize:+,bsize=$bsize}${PERF_PAIR_VDEV:-}
eal=(--no-pci -m 256 --log-level='*:warning' ${PERF_PAIR_EAL:-})
[ "${PERF_PAIR_HUGE:-0}" = 1 ] || eal+=(--no-huge)
cores=$(( $(nproc) > 1 ? 1 : 0 ))
# One memif link per plane.
planes=1
args=("$@")
for i in "${!args[@]}"; do
  [ "${args[$i]}" = "--planes" ] && planes=${args[$((i + 1))]}
done
svdev=(); cvdev=()
for p in $(seq 0 $((planes - 1))); do
  svdev+=(--vdev=net_memif$p,role=server,socket=$dir/memif$p.sock$bopt,socket-abstract=no)
  cvdev+=(--vdev=net_memif$p,role=client,socket=$dir/memif$p.sock$bopt,socket-abstract=no)
done
(cd "$dir/s" && exec timeout 50 "$perf" -l 0 "${eal[@]}" --file-prefix="it-s-$$" \
  "${svdev[@]}" -- "$test_name" --timeout 30 "$@" \
  </dev/null >"$dir/server.log" 2>&1) &
spid=$!
# A memif client cannot start before its server's socket exists.
for _ in $(seq 100); do
  ready=1
  for p in $(seq 0 $((planes - 1))); do [ -S "$dir/memif$p.sock" ] || ready=0; done
  [ $ready -eq 1 ] && break
  sleep 0.1
done
(cd "$dir/c" && exec timeout 50 "$perf" -l "$cores" "${eal[@]}" --file-prefix="it-c-$$" \
  "${cvdev[@]}" -- "$test_name" --timeout 30 "$@" \
  10.0.0.1 </dev/null >"$dir/client.log" 2>&1)
crc=$?
wait $spid
src=$?
echo "=== client (exit $crc)"; cat "$dir/client.log"
echo "=== server (exit $src)"; cat "$dir/server.log"
rc=0
[ $crc -eq 0 ] && [ $src -eq 0 ] || rc=1
case " $* " in
  *" --no-verify "*|*" --raw "*|*" --output="*) ;;
  *) grep -q "Data verification: ok" "$dir/client.log" || { echo "client did not verify data"; rc=1; } ;;
esac
[ -n "${PERF_PAIR_OUT:-}" ] && cp -r "$dir/." "$PERF_PAIR_OUT/"
rm -rf "$dir"
exit $rc
