// The link emulator between a net_ring port and an af_packet port on a veth pair made for the
// test: frames cross the kernel's veth both ways, through the emulator's faults. Needs root (to
// make the veth pair); without it the test is skipped and says why.
#include <gtest/gtest.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <set>

#include "dataplane/ring_port.hpp"
#include "netsim/link_emulator.hpp"
#include "protocol/builder.hpp"
#include "protocol/parser.hpp"

namespace roce::netsim::link_emulator_af_packet_test {
namespace {

using namespace roce::dp;
using namespace roce::proto;

int shell(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

// A veth pair for this process, removed with the object.
class VethPair {
 public:
  VethPair() : a_("le" + std::to_string(getpid()) + "a"), b_("le" + std::to_string(getpid()) + "b") {
    ok_ = shell("ip link add " + a_ + " type veth peer name " + b_) == 0;
    if (!ok_) return;
    // Quiet links: no IPv6 neighbour discovery mixed into the test's frames.
    shell("sysctl -w net.ipv6.conf." + a_ + ".disable_ipv6=1");
    shell("sysctl -w net.ipv6.conf." + b_ + ".disable_ipv6=1");
    ok_ = shell("ip link set " + a_ + " up") == 0 && shell("ip link set " + b_ + " up") == 0;
  }
  ~VethPair() { shell("ip link del " + a_); }
  bool ok() const { return ok_; }
  const std::string& a() const { return a_; }
  const std::string& b() const { return b_; }

 private:
  std::string a_, b_;
  bool ok_ = false;
};

// An af_packet ethdev on `iface`, hot-plugged and removed with the object.
class AfPacketPort {
 public:
  explicit AfPacketPort(const std::string& iface) : name_("net_af_packet_" + iface) {
    probed_ = rte_dev_probe((name_ + ",iface=" + iface).c_str()) == 0;
  }
  ~AfPacketPort() {
    if (probed_) rte_eal_hotplug_remove("vdev", name_.c_str());
  }
  bool ok() const { return probed_; }
  std::string id() const {
    std::uint16_t id = 0;
    rte_eth_dev_get_port_by_name(name_.c_str(), &id);
    return std::to_string(id);
  }

 private:
  std::string name_;
  bool probed_ = false;
};

void send_frames(std::uint16_t port, rte_mempool* pool, std::uint32_t first_psn, unsigned count) {
  for (unsigned i = 0; i < count; ++i) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool);
    ASSERT_NE(m, nullptr);
    FrameSpec s;
    s.eth.src = {2, 0, 0, 0, 0, 1};
    s.eth.dst = {2, 0, 0, 0, 0, 2};
    s.ipv4.src = {10, 0, 0, 1};
    s.ipv4.dst = {10, 0, 0, 2};
    s.set_ecn(Ecn::Ect0);
    s.bth.opcode = raw(Opcode::RcSendOnly);
    s.bth.dest_qp.set(0x11);
    s.bth.psn.set(first_psn + i);
    const std::vector<std::byte> payload(200, std::byte{0x42});
    const auto l = build_frame(s, payload, {rte_pktmbuf_mtod(m, std::byte*), 1024}, CrcBackend::Isal);
    ASSERT_TRUE(l.ok());
    m->data_len = static_cast<std::uint16_t>(l.length);
    m->pkt_len = static_cast<std::uint32_t>(l.length);
    while (rte_eth_tx_burst(port, 0, &m, 1) == 0) {
    }
  }
}

// RoCEv2 PSNs among what `port` has received (other traffic on the veth is ignored).
void receive_psns(std::uint16_t port, std::multiset<std::uint32_t>& psns) {
  std::array<rte_mbuf*, 32> rx;
  const auto n = rte_eth_rx_burst(port, 0, rx.data(), 32);
  for (std::uint16_t i = 0; i < n; ++i) {
    Packet p;
    const ByteSpan f{rte_pktmbuf_mtod(rx[i], const std::byte*), rx[i]->data_len};
    if (parse_frame(f, {}, p) == ParseError::None && p.icrc_status == IcrcStatus::Ok) psns.insert(p.psn());
    rte_pktmbuf_free(rx[i]);
  }
}

TEST(LinkEmulatorAfPacket, JoinsARingPortAndAVethBothWays) {
  if (geteuid() != 0) GTEST_SKIP() << "not root: cannot make the veth pair an af_packet port needs";
  VethPair veth;
  if (!veth.ok()) GTEST_SKIP() << "cannot make a veth pair with `ip link` (no iproute2 or no CAP_NET_ADMIN here)";
  AfPacketPort emu_side(veth.a()), test_side(veth.b());
  ASSERT_TRUE(emu_side.ok() && test_side.ok()) << "af_packet PMD could not attach to the veth pair";

  static int run = 0;
  const std::string sfx = std::to_string(run++);
  rte_mempool* pool = rte_pktmbuf_pool_create(("afp_pool" + sfx).c_str(), 2047, 256, 0, 2048 + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
  ASSERT_NE(pool, nullptr) << rte_strerror(rte_errno);
  auto rings = make_ring_pair("afp_in" + sfx, "afp_ex" + sfx);
  ASSERT_TRUE(rings.ok()) << rings.error().message;
  PortOptions po;
  po.name = std::to_string(rings->a);
  auto in = open_port(po, pool);
  ASSERT_TRUE(in.ok()) << in.error().message;
  po.name = test_side.id();
  po.promiscuous = true;
  auto out = open_port(po, pool);
  ASSERT_TRUE(out.ok()) << out.error().message;

  LinkEmulatorOptions o;
  o.name = "afp_emu" + sfx;
  o.x.name = std::to_string(rings->b);
  o.y.name = emu_side.id();
  o.x_to_y.delay = 10 * kMicro;
  o.x_to_y.duplicate = 0.1;
  o.y_to_x.delay = 10 * kMicro;
  o.seed = 8;
  {
    auto emu = LinkEmulator::create(o);
    ASSERT_TRUE(emu.ok()) << emu.error().message;
    LinkEmulator& e = **emu;

    // Ring -> emulator -> veth a -> kernel -> veth b -> test.
    send_frames(in->id, pool, 1000, 200);
    std::multiset<std::uint32_t> far;
    const std::uint64_t want = [&] {
      const Nanos deadline = e.now() + 5 * kSecond;
      while (e.now() < deadline) {
        e.poll(e.now());
        receive_psns(out->id, far);
        const LinkStats s = e.stats(Direction::XtoY);
        if (s.get(LinkCounter::Received) >= 200 && far.size() >= 200 + s.get(LinkCounter::Duplicated)) break;
      }
      return 200 + e.stats(Direction::XtoY).get(LinkCounter::Duplicated);
    }();
    EXPECT_EQ(far.size(), want) << to_string(e.stats(Direction::XtoY));
    for (std::uint32_t psn = 1000; psn < 1200; ++psn) EXPECT_GE(far.count(psn), 1u) << psn;
    EXPECT_GT(e.stats(Direction::XtoY).get(LinkCounter::Duplicated), 0u);

    // And back: test -> veth b -> kernel -> veth a -> emulator -> ring.
    send_frames(out->id, pool, 5000, 100);
    std::multiset<std::uint32_t> near;
    const Nanos deadline = e.now() + 5 * kSecond;
    while (near.size() < 100 && e.now() < deadline) {
      e.poll(e.now());
      receive_psns(in->id, near);
    }
    EXPECT_EQ(near.size(), 100u) << to_string(e.stats(Direction::YtoX));
    // Drain what is left (kernel traffic the emulator forwarded), then nothing is held or leaked.
    for (int i = 0; i < 1000 || e.frames_held(); ++i) {
      e.poll(e.now());
      receive_psns(in->id, near);
      receive_psns(out->id, far);
    }
    EXPECT_EQ(e.mbufs_in_use(), 0u);
  }
  close_port(in->id);
  close_port(out->id);
  EXPECT_EQ(rte_mempool_in_use_count(pool), 0u);
  rte_mempool_free(pool);
}

}  // namespace
}  // namespace roce::netsim::link_emulator_af_packet_test
