#!/usr/bin/env bash
# A verified metaroce-perf pair over net_memif (perf_pair.sh) that also checks how the
# payloads left: MODE zc (the default: sent in place from the registered buffer,
# dpdk/extbuf.hpp), memif_zc (over net_memif zero-copy=yes, which DPDK 22.11 cannot be
# trusted with chains: whole frames, none in place; port.cpp zero_copy_refusal), or copy
# (--tx-copy, copied into mbufs), huge_zc (zc on hugepages: with IOVA as PA each frame's
# IOVA comes from its hugepage, looked up once per page, not per frame; needs root to
# reserve the pages); or MODE small_bsize: with
# memif's default 2 KiB buffers the MTU's frames do not fit, which both sides refuse
# (DPDK 22.11's memif corrupts frames that span buffers; port.cpp check_memif_bsize).
#   zero_copy_pair.sh PERF_BINARY MODE TEST [metaroce-perf options...]
set -u
perf=$1; mode=$2; test_name=$3; shift 3
here=$(dirname "$(realpath "$0")")
out=$(mktemp -d /tmp/metaroce-zc.XXXXXX)
extra=(--counters)
[ "$mode" = copy ] && extra+=(--tx-copy)
# memif's own zero copy: the client passes its mbufs to the server's side of the shared
# memory, which needs one file for DPDK's memory.
[ "$mode" = memif_zc ] && export PERF_PAIR_VDEV=,zero-copy=yes PERF_PAIR_EAL=--single-file-segments
if [ "$mode" = huge_zc ]; then
  [ "$(id -u)" -eq 0 ] || { echo "huge_zc needs root (hugepages)"; rm -rf "$out"; exit 1; }
  pages_before=$(cat /proc/sys/vm/nr_hugepages)
  mounted_here=0
  give_back() { # what this test took: the pages, their files, the mount
    rm -f /dev/hugepages/it-[sc]-*map_* 2>/dev/null
    [ "$mounted_here" = 1 ] && umount /dev/hugepages
    echo "$pages_before" > /proc/sys/vm/nr_hugepages
  }
  trap give_back EXIT
  echo $((pages_before + 300)) > /proc/sys/vm/nr_hugepages # two processes of -m 256
  if ! grep -q ' /dev/hugepages hugetlbfs' /proc/mounts; then
    mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages && mounted_here=1
  fi
  export PERF_PAIR_HUGE=1
fi
if [ "$mode" = small_bsize ]; then
  PERF_PAIR_BSIZE= PERF_PAIR_OUT=$out "$here/perf_pair.sh" "$perf" "$test_name" "$@" >"$out/pair.log" 2>&1
  rc=$?
  want="do not fit net_memif's 2048-byte buffers (bsize, the default)"
  n=$(cat "$out/client.log" "$out/server.log" | grep -cF "$want")
  echo "$test_name small_bsize: rc $rc, refused by $n of 2 sides"
  [ $rc -ne 0 ] && [ "$n" -eq 2 ] || { cat "$out/pair.log"; rm -rf "$out"; exit 1; }
  rm -rf "$out"; exit 0
fi
PERF_PAIR_OUT=$out "$here/perf_pair.sh" "$perf" "$test_name" "${extra[@]}" "$@" >"$out/pair.log" 2>&1
rc=$?
# A counter of the worker, summed over both sides.
count() { cat "$out/client.log" "$out/server.log" | sed -n "s/^ *\"$1\": \([0-9]*\).*/\1/p" |
          awk '{ s += $1 } END { print s + 0 }'; }
zc=$(count tx_zero_copy); copied=$(count tx_payload_copied); lookups=$(count tx_iova_lookups)
echo "$test_name $mode: rc $rc, frames sent in place $zc, payloads copied into mbufs $copied, IOVA look-ups $lookups"
if [ $rc -ne 0 ]; then
  cat "$out/pair.log"
elif [ "$mode" = huge_zc ] && [ $((lookups * 4)) -gt "$zc" ]; then
  echo "IOVA looked up for more than one frame in four"; rc=1
elif { [ "$mode" = zc ] || [ "$mode" = huge_zc ]; } && { [ "$zc" -lt 100 ] || [ "$copied" -gt 20 ]; }; then
  echo "expected the data frames in place (only the unregistered control buffer copied)"; rc=1
elif [ "$mode" != zc ] && [ "$mode" != huge_zc ] && [ "$zc" -ne 0 ]; then
  echo "$mode: frames were sent as chains in place"; rc=1
fi
rm -rf "$out"
exit $rc
