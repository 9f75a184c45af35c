#!/usr/bin/env bash
# Figures for the Verbs front end, measured in one run on loopback: Debian's unmodified
# ib_write_bw and ib_send_lat over metaroce (metaroce-run, UDP backend) beside iperf3's
# kernel UDP and TCP between the same two loopback addresses. Prints the machine's
# context (load average at start and end), then a table, then the line of each
# program's output every figure was read from.
#   ./scripts/verbs-bench.sh [--quick] [--seconds N] [--net N] [--port P]
#   --quick      4 KiB messages, a few iterations: checks the script, the figures mean nothing
#   --seconds N  length of each bandwidth run (ib_write_bw -D, iperf3 -t; default 5)
#   --net N      node addresses 127.9.N.1 (server) and 127.9.N.2 (client) (default 70)
#   --port P     TCP ports P (perftest's exchange) and P+1 (iperf3) (default 19070)
#   BENCH_BUILD_DIR=D  meson build directory (default build)
# A benchmark, not a test: it fails only when a program fails or prints no result.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0 secs=5 net=70 port=19070
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1; shift ;;
    --seconds) secs=$2; shift 2 ;;
    --net) net=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    -h|--help) sed -n 2,13p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "verbs-bench: unknown argument '$1' (--help)" >&2; exit 1 ;;
  esac
done
build=${BENCH_BUILD_DIR:-build}
srv=127.9.$net.1 cli=127.9.$net.2
say() { echo "verbs-bench: $*"; }

load_start=$(cut -d' ' -f1-3 /proc/loadavg)   # before anything of ours runs
./scripts/install-deps.sh
run=$build/drivers/verbs/metaroce-run
# Up to date first (quiet unless it fails): stale libraries would give stale figures.
[ -f "$build/build.ninja" ] || meson setup "$build" >/dev/null
if ! log=$(ninja -C "$build" drivers/verbs/libibverbs.so.1 2>&1); then
  echo "$log" >&2
  exit 1
fi
[ -x "$run" ] || { echo "verbs-bench: $run is missing (libibverbs-dev, rdma-core?)" >&2; exit 1; }

if [ $quick = 1 ]; then
  bw_size=4096 lat_iters=100 bw_limit=(-n 200) ip_limit=(-n 2M) udp_len=4096 tcp_len=4096
else
  # One UDP datagram carries at most 65507 bytes; TCP and RDMA take the whole 64 KiB.
  bw_size=65536 lat_iters=20000 bw_limit=(-D "$secs") ip_limit=(-t "$secs") udp_len=65507 tcp_len=65536
fi
dir=$(mktemp -d /tmp/metaroce-verbs-bench.XXXXXX)
server=
cleanup() { [ -z "$server" ] || kill "$server" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT

# Waits until something listens on TCP port $1 (the server is ready for its client).
wait_listen() {
  for _ in $(seq 200); do
    ss -Hltn "sport = :$1" | grep . >/dev/null && return 0
    kill -0 "$server" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# pair NAME PORT SERVER_CMD... -- CLIENT_CMD...: the server in the background, the client
# in front; both must exit 0. Outputs in $dir/NAME.server and $dir/NAME.client.
pair() {
  local name=$1 p=$2; shift 2
  local s=() c=()
  while [ "$1" != -- ]; do s+=("$1"); shift; done
  shift
  c=("$@")
  timeout 120 "${s[@]}" >"$dir/$name.server" 2>&1 &
  server=$!
  local rc=0
  wait_listen "$p" || { say "$name: the server did not start"; cat "$dir/$name.server" >&2; exit 1; }
  timeout 120 "${c[@]}" >"$dir/$name.client" 2>&1 || rc=$?
  wait "$server" || { local r=$?; [ "$rc" -ne 0 ] || rc=$r; }
  server=
  if [ "$rc" -ne 0 ]; then
    say "$name failed (exit $rc); client, then server output:" >&2
    cat "$dir/$name.client" "$dir/$name.server" >&2
    exit 1
  fi
}

# The last line of FILE matching the awk condition, or a failure naming what is missing.
pick() {
  local file=$1 cond=$2 line
  line=$(awk "$cond { l = \$0 } END { print l }" "$file")
  [ -n "$line" ] || { say "no result line in $(basename "$file"):" >&2; cat "$file" >&2; exit 1; }
  echo "$line"
}

say "ib_write_bw -x 0 -s $bw_size ${bw_limit[*]} over metaroce ($srv <- $cli)"
pair write_bw "$port" env METAROCE_ADDR=$srv "$run" ib_write_bw -x 0 -s $bw_size "${bw_limit[@]}" \
  --report_gbits -p "$port" -- env METAROCE_ADDR=$cli "$run" ib_write_bw -x 0 -s $bw_size \
  "${bw_limit[@]}" --report_gbits -p "$port" $srv
wbw=$(pick "$dir/write_bw.client" "\$1 == $bw_size && NF == 5")

say "ib_send_lat -x 0 -n $lat_iters over metaroce"
pair send_lat "$port" env METAROCE_ADDR=$srv "$run" ib_send_lat -x 0 -n $lat_iters -p "$port" \
  -- env METAROCE_ADDR=$cli "$run" ib_send_lat -x 0 -n $lat_iters -p "$port" $srv
slat=$(pick "$dir/send_lat.client" "\$2 == $lat_iters && NF == 9")

ip=(iperf3 -f g -p $((port + 1)))
say "iperf3 -u -b 0 -l $udp_len ${ip_limit[*]} (kernel UDP)"
pair udp $((port + 1)) "${ip[@]}" -s -1 -B $srv -- "${ip[@]}" -c $srv -B $cli -u -b 0 \
  -l $udp_len "${ip_limit[@]}"
udp_rx=$(pick "$dir/udp.client" '/ receiver$/')
udp_tx=$(pick "$dir/udp.client" '/ sender$/')

say "iperf3 -l $tcp_len ${ip_limit[*]} (kernel TCP)"
pair tcp $((port + 1)) "${ip[@]}" -s -1 -B $srv -- "${ip[@]}" -c $srv -B $cli -l $tcp_len \
  "${ip_limit[@]}"
tcp_rx=$(pick "$dir/tcp.client" '/ receiver$/')

# iperf3 lines: "... 4.01 GBytes  11.5 Gbits/sec  0.021 ms  250260/316000 (79%)  receiver"
gbits() { awk '{ for (i = 2; i <= NF; i++) if ($i == "Gbits/sec") print $(i - 1) }' <<<"$1"; }
lost() { sed -n 's/.*(\([0-9.]*%\)).*/\1/p' <<<"$1"; }
read -r _ _ _ wbw_gbps _ <<<"$wbw"
read -r _ _ lat_min _ lat_typ lat_avg _ lat_p99 _ <<<"$slat"

load_end=$(cut -d' ' -f1-3 /proc/loadavg)
echo
echo "verbs-bench: one run on loopback, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo " machine     : $(nproc) CPUs, Linux $(uname -r), $(. /etc/os-release && echo "$PRETTY_NAME")"
echo " load average: $load_start at start, $load_end at end (1, 5, 15 min; > CPUs means shared)"
echo " source      : $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' + uncommitted changes')"
echo " programs    : perftest $(dpkg-query -W -f='${Version}' perftest), iperf3 $(dpkg-query -W -f='${Version}' iperf3), metaroce-run (UDP backend)"
echo " addresses   : server $srv, client $cli$([ $quick = 1 ] && echo ' (--quick: tiny sizes, figures meaningless)')"
echo
printf '| %-35s | %-8s | %6s | %-40s | %s |\n' measurement message Gb/s "latency us" note
dashes() { printf -- '-%.0s' $(seq "$1"); }
printf '|%s|%s|%s|%s|%s|\n' "$(dashes 37)" "$(dashes 10)" "$(dashes 8)" "$(dashes 42)" "$(dashes 6)"
row() { printf '| %-35s | %-8s | %6s | %-40s | %s |\n' "$@"; }
row "ib_write_bw -x 0, metaroce over UDP" "$bw_size B" "$wbw_gbps" - "${bw_limit[*]}, one QP"
row "ib_send_lat -x 0, metaroce over UDP" "2 B" - "$lat_typ typ, $lat_avg avg, $lat_p99 p99" \
  "min $lat_min; one way (RTT / 2)"
row "iperf3 -u -b 0, kernel UDP" "$udp_len B" "$(gbits "$udp_rx")" - \
  "received; sent $(gbits "$udp_tx") Gb/s, $(lost "$udp_rx") lost"
row "iperf3, kernel TCP" "$tcp_len B" "$(gbits "$tcp_rx")" - "received"
echo
echo "source lines (client side, blanks squeezed):"
squash() { tr -s ' \t' ' ' <<<"$1" | sed 's/^ //; s/ $//'; }
echo " ib_write_bw: $(squash "$wbw")"
echo " ib_send_lat: $(squash "$slat")"
echo " iperf3 UDP : $(squash "$udp_rx")"
echo " iperf3 UDP : $(squash "$udp_tx")"
echo " iperf3 TCP : $(squash "$tcp_rx")"
