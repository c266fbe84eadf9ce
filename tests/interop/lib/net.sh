# Sourced by run.sh: the private network of one interop run. Everything lives in a network
# namespace made here and deleted by net_down, so no test address exists outside it:
#   br0   bridge, 10.77.0.1/24 (the namespace's kernel: TCP exchanges with the guest)
#   gtap0 the guest's virtio-net port (qemu -netdev tap)
#   veng0 our engine's port (net_af_packet), the other end of a veth whose peer is in br0
# Every link has MTU 9000 so that 4096-byte RDMA MTU frames pass.

NET_BRIDGE_IP=10.77.0.1
NET_GUEST_IP=10.77.0.2
NET_ENGINE_IP=10.77.0.10
NET_GUEST_IP6=fd77::2    # the IPv6 cases' RoCE addresses (their TCP exchange stays on IPv4)
NET_ENGINE_IP6=fd77::10
NET_VERBS_IP=10.77.0.11   # a verbs program under roce-run while roce-appliance holds veng0 (verbs.sh)
NET_GUEST_MAC=52:54:00:77:00:02
NET_LINK_MTU=9000

inns() { ip netns exec "$NETNS" "$@"; }

net_up() {
  NETNS=${NETNS:-roce-interop-$$}
  ip netns add "$NETNS" || return 1
  inns ip link set lo up
  inns ip link add br0 mtu $NET_LINK_MTU type bridge stp_state 0 forward_delay 0 &&
    inns ip addr add $NET_BRIDGE_IP/24 dev br0 &&
    inns ip link set br0 up &&
    inns ip tuntap add gtap0 mode tap &&
    inns ip link set gtap0 mtu $NET_LINK_MTU master br0 up &&
    inns ip link add veng0 mtu $NET_LINK_MTU type veth peer name veng0-br mtu $NET_LINK_MTU &&
    inns ip link set veng0-br master br0 up &&
    inns ip link set veng0 up &&
    inns ip link add veng1 mtu $NET_LINK_MTU type veth peer name veng1-br mtu $NET_LINK_MTU &&
    inns ip link set veng1-br master br0 up &&
    inns ip link set veng1 up || return 1
  # The engine's side carries no kernel address and no IPv6: only the engine speaks on it.
  inns sysctl -qw net.ipv6.conf.veng0.disable_ipv6=1 net.ipv6.conf.veng0-br.disable_ipv6=1 \
    net.ipv6.conf.veng1.disable_ipv6=1 net.ipv6.conf.veng1-br.disable_ipv6=1 \
    net.ipv6.conf.gtap0.disable_ipv6=1 net.ipv6.conf.br0.disable_ipv6=1 >/dev/null
}

net_down() {
  [[ -n ${NETNS:-} ]] && ip netns del "$NETNS" 2>/dev/null
  return 0
}
