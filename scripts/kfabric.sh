#!/usr/bin/env bash
# A real kernel fabric for metaroce: two host namespaces (A, B) whose DPDK apps
# (net_af_packet, one port per plane) reach each other through two routing
# namespaces (leaves LA, LB) with kernel ECMP. Per plane i:
#
#   A:p<i> ---- LA:ha<i>  LA:x<i>0 ---- LB:x<i>0  LB:hb<i> ---- B:p<i>
#                         LA:x<i>1 ---- LB:x<i>1
#
# Each leaf routes the far host's plane address over the plane's two parallel links
# with an equal-cost multipath route hashed on L4 ports (fib_multipath_hash_policy=1),
# so the transport's UDP source ports spread over both. Host ports carry no kernel
# address (the DPDK app owns them); the leaves hold static neighbour entries for the
# hosts' MACs, and the hosts send every frame to their leaf's MAC (the gateway).
# Addresses follow the app: node A 10.0.0.1, B 10.0.0.2, plane i = 10.0.<i>.x.
#
# Usage: kfabric.sh [--prefix P] [--planes N] up|down|status|env
#        kfabric.sh [--prefix P] impair [--loss PCT] [--ecn PCT] [--dup PCT] [--reorder PCT]
#        kfabric.sh [--prefix P] link PLANE down|up [a|b]
#   up       (re)creates the fabric (idempotent: an existing one is torn down first)
#   down     removes it, ending any process still inside its namespaces; always exits 0
#   status   links, routes, ECMP spread (packets per parallel link), impairment drops
#   env      shell assignments for scripts: namespaces, interfaces, gateway MACs
#   impair   loads tools/kfabric/impair.bpf.c on every middle link (egress, both leaves)
#            with these probabilities (percent, default 0); all zero unloads it
#   link     takes host A's (or B's) plane link down or up at its leaf; "up" also puts
#            back the route and neighbour entry the kernel removed with the link. Prints
#            "link PLANE SIDE down|up T0 T1": wall-clock ns just before and after
# The prefix (default $KFABRIC_PREFIX or "kfab") names the namespaces, so parallel
# fabrics do not collide. Needs root.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bpf_src=$here/../tools/kfabric/impair.bpf.c
prefix=${KFABRIC_PREFIX:-kfab}
planes=2

die() { echo "kfabric: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case $1 in
    --prefix) [ $# -ge 2 ] || die "--prefix needs a value"; prefix=$2; shift 2 ;;
    --planes) [ $# -ge 2 ] || die "--planes needs a value"; planes=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || die "no command (up, down, status, env, impair, link); see --help"
cmd=$1; shift
[[ $prefix =~ ^[A-Za-z0-9_-]{1,20}$ ]] || die "--prefix '$prefix': 1-20 of [A-Za-z0-9_-]"
[[ $planes =~ ^[1-8]$ ]] || die "--planes '$planes': 1..8"

ns_a=$prefix-a; ns_b=$prefix-b; ns_la=$prefix-la; ns_lb=$prefix-lb
all_ns=("$ns_a" "$ns_b" "$ns_la" "$ns_lb")
state=/tmp/kfabric-$prefix

# Fixed MACs: hosts 02:6b:0a/0b:00:<plane>:01/02, leaf ports facing them ...:fe.
mac_a() { printf '02:6b:0a:00:%02x:01' "$1"; }
mac_b() { printf '02:6b:0b:00:%02x:02' "$1"; }
mac_la() { printf '02:6b:1a:00:%02x:fe' "$1"; }
mac_lb() { printf '02:6b:1b:00:%02x:fe' "$1"; }

ns_exists() { ip netns list | awk '{print $1}' | grep -x "$1" >/dev/null; }

# Planes of the running fabric: how many host links leaf A has.
live_planes() {
  ns_exists "$ns_la" || die "no fabric '$prefix' (run: kfabric.sh --prefix $prefix up)"
  ip -n "$ns_la" -o link show | grep -c ': ha[0-9]@' || true
}

need_root() { [ "$(id -u)" -eq 0 ] || die "needs root (network namespaces)"; }

fabric_down() {
  for ns in "${all_ns[@]}"; do
    ns_exists "$ns" || continue
    # Processes left inside (a DPDK app of an aborted test) would keep it alive.
    local pids
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    if [ -n "$pids" ]; then
      kill -TERM $pids 2>/dev/null || true
      for _ in 1 2 3 4 5 6 7 8 9 10; do
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        [ -z "$pids" ] && break
        sleep 0.2
      done
      [ -n "$pids" ] && kill -KILL $pids 2>/dev/null || true
    fi
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$state"
}

sysctls() { # ns key=value...
  local ns=$1; shift
  for kv in "$@"; do ip netns exec "$ns" sysctl -qw "$kv" >/dev/null; done
}

host_route() { # leaf-ns plane host-ip host-mac leaf-if
  ip -n "$1" route replace "$3/32" dev "$5" scope link
  ip -n "$1" neigh replace "$3" lladdr "$4" dev "$5" nud permanent
}

fabric_up() {
  fabric_down
  mkdir -p "$state"
  for ns in "${all_ns[@]}"; do
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    # No IPv6: no router solicitations or ND noise on the DPDK ports.
    sysctls "$ns" net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
  done
  for ns in "$ns_la" "$ns_lb"; do
    sysctls "$ns" net.ipv4.ip_forward=1 net.ipv4.fib_multipath_hash_policy=1 \
      net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
  done
  for ((i = 0; i < planes; i++)); do
    ip -n "$ns_la" link add "ha$i" mtu 9000 address "$(mac_la $i)" type veth \
      peer name "p$i" netns "$ns_a" mtu 9000 address "$(mac_a $i)"
    ip -n "$ns_lb" link add "hb$i" mtu 9000 address "$(mac_lb $i)" type veth \
      peer name "p$i" netns "$ns_b" mtu 9000 address "$(mac_b $i)"
    ip -n "$ns_a" link set "p$i" up
    ip -n "$ns_b" link set "p$i" up
    ip -n "$ns_la" link set "ha$i" up
    ip -n "$ns_lb" link set "hb$i" up
    for k in 0 1; do
      ip -n "$ns_la" link add "x$i$k" mtu 9000 type veth peer name "x$i$k" netns "$ns_lb" mtu 9000
      ip -n "$ns_la" addr add "172.16.$i.$((4 * k + 1))/30" dev "x$i$k"
      ip -n "$ns_lb" addr add "172.16.$i.$((4 * k + 2))/30" dev "x$i$k"
      ip -n "$ns_la" link set "x$i$k" up
      ip -n "$ns_lb" link set "x$i$k" up
      tc -n "$ns_la" qdisc replace dev "x$i$k" clsact
      tc -n "$ns_lb" qdisc replace dev "x$i$k" clsact
    done
    host_route "$ns_la" "$i" "10.0.$i.1" "$(mac_a $i)" "ha$i"
    host_route "$ns_lb" "$i" "10.0.$i.2" "$(mac_b $i)" "hb$i"
    ip -n "$ns_la" route replace "10.0.$i.2/32" \
      nexthop via "172.16.$i.2" dev "x${i}0" nexthop via "172.16.$i.6" dev "x${i}1"
    ip -n "$ns_lb" route replace "10.0.$i.1/32" \
      nexthop via "172.16.$i.1" dev "x${i}0" nexthop via "172.16.$i.5" dev "x${i}1"
  done
  echo "kfabric '$prefix' up: $planes plane(s), namespaces ${all_ns[*]}"
}

fabric_env() {
  local n gw_a="" gw_b="" ifs=""
  n=$(live_planes)
  for ((i = 0; i < n; i++)); do
    gw_a+="${gw_a:+,}$(mac_la $i)"; gw_b+="${gw_b:+,}$(mac_lb $i)"; ifs+="${ifs:+,}p$i"
  done
  echo "KF_NS_A=$ns_a"
  echo "KF_NS_B=$ns_b"
  echo "KF_NS_LA=$ns_la"
  echo "KF_NS_LB=$ns_lb"
  echo "KF_PLANES=$n"
  echo "KF_IFACES=$ifs"
  echo "KF_GW_A=$gw_a"
  echo "KF_GW_B=$gw_b"
}

link_stat() { # ns dev field(tx_packets|rx_packets)
  ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3" 2>/dev/null || echo 0
}
# Frames the impairment program dropped on a link (clsact counts them).
bpf_drops() {
  tc -n "$1" -s qdisc show dev "$2" 2>/dev/null | awk '/clsact/ {q=1} q && /dropped/ {gsub(",", "", $7); print $7; exit}'
}

fabric_status() {
  local n
  n=$(live_planes)
  echo "kfabric '$prefix': $n plane(s); namespaces ${all_ns[*]}"
  for ((i = 0; i < n; i++)); do
    local sa sb
    sa=$(ip -n "$ns_la" -o link show "ha$i" | grep -o 'state [A-Z]*' || true)
    sb=$(ip -n "$ns_lb" -o link show "hb$i" | grep -o 'state [A-Z]*' || true)
    echo "plane $i: A p$i <-> LA ha$i ($sa), LB hb$i ($sb) <-> B p$i"
    for k in 0 1; do
      local prog="none" filters
      filters=$(tc -n "$ns_la" filter show dev "x$i$k" egress 2>/dev/null || true)
      [[ $filters == *bpf* ]] && prog="impair"
      printf '  x%s%s  A->B %10s frames, %6s dropped   B->A %10s frames, %6s dropped   bpf %s\n' \
        "$i" "$k" "$(link_stat "$ns_la" "x$i$k" tx_packets)" "$(bpf_drops "$ns_la" "x$i$k")" \
        "$(link_stat "$ns_lb" "x$i$k" tx_packets)" "$(bpf_drops "$ns_lb" "x$i$k")" "$prog"
    done
    echo "  LA: $(ip -n "$ns_la" route show "10.0.$i.2/32" | tr -s ' \t\n' ' ')"
  done
  [ -f "$state/impair" ] && echo "impairments: $(cat "$state/impair")" \
    "(dropped also counts frames held for reordering: those leave later)"
  return 0
}

pct_to_ppm() { # "1", "0.5" -> parts per million; refuses anything else
  [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "impair: '$1' is not a percentage"
  awk -v p="$1" 'BEGIN { if (p > 100) exit 1; printf "%d", p * 10000 + 0.5 }' ||
    die "impair: $1 % is above 100"
}

fabric_impair() {
  local loss=0 ecn=0 dup=0 reorder=0
  while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || die "impair: $1 needs a value"
    case $1 in
      --loss) loss=$(pct_to_ppm "$2") ;;
      --ecn) ecn=$(pct_to_ppm "$2") ;;
      --dup) dup=$(pct_to_ppm "$2") ;;
      --reorder) reorder=$(pct_to_ppm "$2") ;;
      *) die "impair: unknown option '$1' (--loss, --ecn, --dup, --reorder)" ;;
    esac
    shift 2
  done
  local n obj="" desc="loss ${loss}ppm ecn ${ecn}ppm dup ${dup}ppm reorder ${reorder}ppm"
  n=$(live_planes)
  mkdir -p "$state"
  if [ $((loss + ecn + dup + reorder)) -ne 0 ]; then
    command -v clang >/dev/null || die "impair: clang is needed to build the BPF program"
    obj=$state/impair-$loss-$ecn-$dup-$reorder.o
    clang -O2 -g -Wall -Werror -target bpf -I"/usr/include/$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)" \
      -DLOSS_PPM="$loss" -DCE_PPM="$ecn" -DDUP_PPM="$dup" -DREORDER_PPM="$reorder" \
      -c "$bpf_src" -o "$obj" || die "impair: cannot compile $bpf_src"
  fi
  for ((i = 0; i < n; i++)); do
    for k in 0 1; do
      for ns in "$ns_la" "$ns_lb"; do
        if [ -n "$obj" ]; then
          tc -n "$ns" filter replace dev "x$i$k" egress prio 1 handle 1 bpf da obj "$obj" sec tc ||
            die "impair: tc cannot load $obj on $ns/x$i$k"
        else
          tc -n "$ns" filter del dev "x$i$k" egress 2>/dev/null || true
        fi
      done
    done
  done
  if [ -n "$obj" ]; then echo "$desc" > "$state/impair"; else rm -f "$state/impair"; fi
  echo "kfabric '$prefix': impairments ${obj:+set: }${obj:-off}${obj:+ ($desc)}" | sed "s| $state/[^ ]*||"
}

fabric_link() {
  [ $# -ge 2 ] || die "link: usage: link PLANE down|up [a|b]"
  local i=$1 how=$2 side=${3:-a} n
  n=$(live_planes)
  [[ $i =~ ^[0-9]+$ ]] && [ "$i" -lt "$n" ] || die "link: no plane '$i' (0..$((n - 1)))"
  local ns dev ip mac
  case $side in
    a) ns=$ns_la; dev=ha$i; ip=10.0.$i.1; mac=$(mac_a "$i") ;;
    b) ns=$ns_lb; dev=hb$i; ip=10.0.$i.2; mac=$(mac_b "$i") ;;
    *) die "link: side '$side' is neither a nor b" ;;
  esac
  local t0 t1
  case $how in
    down) t0=$(now_ns); ip -n "$ns" link set "$dev" down; t1=$(now_ns) ;;
    # Taking a link down drops its routes and (even permanent) neighbours: restore them,
    # as a routing daemon would.
    up) t0=$(now_ns); ip -n "$ns" link set "$dev" up; host_route "$ns" "$i" "$ip" "$mac" "$dev"
        t1=$(now_ns) ;;
    *) die "link: '$how' is neither down nor up" ;;
  esac
  # When it happened, for scripts that time the reaction: just before and just after.
  echo "link $i $side $how $t0 $t1"
}

# Wall-clock ns without forking (bash's microsecond clock).
now_ns() { local t=$EPOCHREALTIME; echo "${t/./}000"; }

case $cmd in
  up) need_root; fabric_up ;;
  down) need_root; fabric_down; echo "kfabric '$prefix' down" ;;
  status) need_root; fabric_status ;;
  env) need_root; fabric_env ;;
  impair) need_root; fabric_impair "$@" ;;
  link) need_root; fabric_link "$@" ;;
  *) die "unknown command '$cmd' (up, down, status, env, impair, link)" ;;
esac
