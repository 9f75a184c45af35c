#!/usr/bin/env bash
# Installs the Debian 12 packages metaroce builds and tests with, only if missing.
set -euo pipefail
packages=(meson ninja-build pkg-config g++ python3
          libdpdk-dev dpdk dpdk-dev catch2 libspdlog-dev nlohmann-json3-dev
          libibverbs-dev rdma-core ibverbs-utils perftest
          # test/verbs/rdma_core_suite.sh: rdma-core's own tests (shipped by rdma-core) need pyverbs
          python3-pyverbs
          # scripts/fuzz.sh: clang, libFuzzer + sanitizer runtimes, llvm-symbolizer
          clang libclang-rt-14-dev llvm
          # scripts/kfabric.sh: namespaces, tc with BPF, and our BPF program's headers
          iproute2 libbpf-dev linux-libc-dev
          # the capture test: tshark decodes dpdk-dumpcap's capture with our dissector
          tshark
          # scripts/verbs-bench.sh: the kernel's UDP and TCP figures beside metaroce's
          iperf3
          # test/interop: the kernel side's veth computes checksums and segments (tx off)
          ethtool
          # scripts/core-budget.sh: instructions per packet under callgrind
          valgrind)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' >/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
# iperf3 asks whether to run a system daemon: never (we start our own, on loopback).
echo 'iperf3 iperf3/start_daemon boolean false' | "${sudo_cmd[@]}" debconf-set-selections
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
