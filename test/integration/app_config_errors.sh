#!/usr/bin/env bash
# The metaroce app refuses bad configurations with a message that names the key:
# duplicate keys (which JSON parsers would otherwise resolve silently) and transport
# settings the core cannot run with.
#   app_config_errors.sh METAROCE_BINARY
set -u
app=$1
dir=$(mktemp -d /tmp/metaroce-cfg.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
expect_error() { # NAME JSON EXPECTED-SUBSTRING
  printf '%s\n' "$2" > "$dir/$1.json"
  out=$("$app" --no-huge --no-pci -m 64 -l 0 --file-prefix="cfg-$$-$1" --log-level='*:error' \
        -- --config "$dir/$1.json" 2>&1 </dev/null)
  rc=$?
  if [ $rc -eq 0 ] || ! grep -qF -- "$3" <<<"$out"; then
    echo "FAIL $1: rc=$rc, expected a message containing: $3"; echo "$out" | tail -3; fail=1
  else
    echo "ok   $1: $(grep -F -- "$3" <<<"$out" | head -1)"
  fi
}
expect_error duplicate '{"ports": [0], "transport": {"min_rto_us": 1000, "min_rto_us": 0}}' \
  "duplicate key 'min_rto_us' in 'transport'"
expect_error rto_order '{"ports": [0], "transport": {"min_rto_us": 50000, "max_rto_us": 20000}}' \
  "transport.max_rto_us: must be at least transport.min_rto_us"
expect_error top_duplicate '{"address": "10.0.0.1", "address": "10.0.0.2"}' \
  "duplicate key 'address' in the top level"
# One port for two planes (DPDK said "Port 0 must be stopped to allow configuration").
expect_error duplicate_port '{"ports": [0, {"port": 0, "gateway": "02:00:00:00:00:01"}]}' \
  "ports[1].port: port 0 is already plane 0's (ports[0]); each plane needs a port of its own"
expect_error duplicate_port_plain '{"ports": [1, 0, 1]}' \
  "ports[2]: port 1 is already plane 0's (ports[0])"
expect_error record_chunks '{"ports": [0], "record_chunks": 0}' \
  "record_chunks: 0 is out of range [1, 65535]"
exit $fail
