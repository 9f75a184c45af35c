#!/bin/bash
# Two processes over the UDP backend on loopback: a server and a client on distinct
# node addresses, the same port. The client WRITEs 1 GiB (one plane), then 256 MiB over
# two planes with 1% receive loss; the server checks every byte. Prints the throughput.
set -u
pair=${1:?usage: two_process.sh path/to/udp_pair}
fail=0

run() { # name server-args -- client-args
    local name=$1; shift
    local sargs=() cargs=()
    while [ "$1" != "--" ]; do sargs+=("$1"); shift; done
    shift
    cargs=("$@")
    local out
    out=$(mktemp -d)
    "$pair" server "${sargs[@]}" >"$out/server" 2>&1 &
    local spid=$!
    for _ in $(seq 100); do # its sockets are bound once it says so
        grep -q "server: ready" "$out/server" && break
        sleep 0.05
    done
    "$pair" client "${cargs[@]}" >"$out/client" 2>&1
    local crc=$?
    wait "$spid"
    local src=$?
    echo "== $name: client rc $crc, server rc $src"
    cat "$out/client" "$out/server"
    if [ "$crc" -ne 0 ] || [ "$src" -ne 0 ] ||
        ! grep -q "bad bytes" "$out/client" || ! grep -q ", 0 bad bytes" "$out/server"; then
        echo "FAIL: $name"
        fail=1
    fi
    rm -rf "$out"
}

run "1 GiB WRITE, one plane" --local 127.77.9.2 --bytes 1G -- \
    --local 127.77.9.1 --peer 127.77.9.2 --bytes 1G
run "256 MiB WRITE, two planes, 1% loss" --local 127.77.10.2,127.77.10.4 --bytes 256M --drop 0.01 -- \
    --local 127.77.10.1,127.77.10.3 --peer 127.77.10.2 --bytes 256M --drop 0.01
exit $fail
