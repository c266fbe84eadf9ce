# Sourced: a network namespace holding one veth pair, for two DPDK endpoints (net_af_packet on
# each end) that own the addresses themselves: no kernel address and no IPv6 on either end.
#   veth_pair_up NS A B [MTU]   makes NS and the pair A-B (MTU 9000 by default), up
#   ip netns del NS             removes both

veth_pair_up() {
  local ns=$1 a=$2 b=$3 mtu=${4:-9000}
  ip netns add "$ns" || return 1
  ip -n "$ns" link set lo up &&
    ip -n "$ns" link add "$a" mtu "$mtu" type veth peer name "$b" mtu "$mtu" &&
    ip -n "$ns" link set "$a" up &&
    ip -n "$ns" link set "$b" up &&
    ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$a.disable_ipv6=1" "net.ipv6.conf.$b.disable_ipv6=1"
}
