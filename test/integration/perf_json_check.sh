#!/usr/bin/env bash
# Runs a metaroce-perf pair with perftest's reporting flags and checks what they wrote.
#   perf_json_check.sh PERF_BINARY MODE
#   bw_json:  write_bw ... --out_json 10.0.0.1: the flag takes no value (the address must
#             survive), each side writes perftest_out.json with perftest's fields; the
#             address block shows the peer's PSN and perftest's GID text.
#   lat_json: write_lat --out_json_file=lat.json: the named file, latency fields.
#   output:   write_bw --output=bandwidth: stdout is one number per size, nothing else.
set -u
perf=$1; mode=$2
here=$(dirname "$(realpath "$0")")
out=$(mktemp -d /tmp/metaroce-json.XXXXXX)
trap 'rm -rf "$out"' EXIT
case $mode in
  bw_json) args=(write_bw -n 300 --out_json); file=perftest_out.json
           keys='MsgSize n_iterations BW_peak BW_average MsgRate' ;;
  lat_json) args=(write_lat -n 200 -s 64 --out_json_file=lat.json); file=lat.json
            keys='MsgSize n_iterations t_min t_max t_typical t_avg t_stdev percentile_99 percentile_99.9' ;;
  output) args=(write_bw -n 300 --output=bandwidth) ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
PERF_PAIR_OUT=$out "$here/perf_pair.sh" "$perf" "${args[@]}" || exit 1
if [ "$mode" = output ]; then
  # Both sides print exactly one line on stdout: the average bandwidth (TELEMETRY
  # notices from the EAL go to stdout too and are skipped).
  for side in client server; do
    body=$(grep -v '^TELEMETRY' "$out/$side.log")
    echo "$side stdout: '$body'"
    [[ $body =~ ^[0-9]+\.[0-9]+$ ]] || { echo "$side: not a single number"; exit 1; }
  done
  exit 0
fi
# The address block: the peer's PSN is known (it printed 0x000000) and GIDs use
# perftest's two-digit bytes (it printed 010:000:000:002).
grep -q ' remote address: .* PSN 0x000000 ' "$out/client.log" && { echo "remote PSN is 0"; exit 1; }
grep -q '^ GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:01$' "$out/client.log" ||
  { echo "client: no perftest-style GID line for 10.0.0.1"; exit 1; }
for side in c s; do
  side_keys=$keys
  # A latency server has no samples: only the size and the iterations it served.
  [ "$mode" = lat_json ] && [ $side = s ] && side_keys='MsgSize n_iterations'
  python3 - "$out/$side/$file" $side_keys <<'PY' || exit 1
import json, sys
path, keys = sys.argv[1], sys.argv[2:]
with open(path) as f:
    j = json.load(f)  # fails on invalid JSON
assert set(j) == {"test_info", "results"}, f"top-level keys {sorted(j)}"
res = j["results"]
missing = [k for k in keys if k not in res]
assert not missing, f"{path}: results lack {missing}"
assert res["n_iterations"] > 0 and res["MsgSize"] > 0, res
if "BW_peak" in res:
    assert res["BW_peak"] >= res["BW_average"] > 0, res
if len(keys) > 2 and "t_min" in keys:
    assert 0 < res["t_min"] <= res["t_typical"] <= res["t_max"], res
print(path, "ok:", json.dumps(res))
PY
done
