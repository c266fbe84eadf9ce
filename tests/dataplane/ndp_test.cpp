// IPv6 neighbour discovery (dataplane/ndp.hpp): solicitations answered, peers learnt, and every
// message RFC 4861 7.1 says to discard discarded (a counted drop in the worker), including a
// table of hostile variants and random mutations of a valid solicitation; scapy (Debian's
// /usr/bin/python3) reads and rebuilds what we send byte for byte.
#include "dataplane/ndp.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "dataplane/arp.hpp"
#include "dataplane/steering.hpp"
#include "tests/support/run_command.hpp"

namespace roce::test::ndp_test {
namespace {

using dp::NdpAction;
using dp::NeighborCache;
using proto::Ipv6Addr;
using proto::MacAddr;

constexpr MacAddr kMyMac{2, 0, 0, 0, 0, 1};
constexpr MacAddr kPeerMac{2, 0, 0, 0, 0, 2};
constexpr Ipv6Addr kMyIp{0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
constexpr Ipv6Addr kPeerIp{0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
constexpr std::size_t kIp = sizeof(proto::EthernetHeader);
constexpr std::size_t kIcmp = kIp + sizeof(proto::Ipv6Header);

using Frame = std::vector<std::byte>;

// The peer's solicitation for our address, as the peer would send it.
Frame solicitation_for(const Ipv6Addr& target) {
  Frame f(dp::kNdFrameBytes);
  dp::build_neighbor_solicitation(kPeerMac, kPeerIp, target, f);
  return f;
}

std::uint8_t u8(const Frame& f, std::size_t at) { return std::to_integer<std::uint8_t>(f[at]); }
void put(Frame& f, std::size_t at, std::uint8_t v) { f[at] = std::byte{v}; }

// Rewrites the ICMPv6 checksum after an edit, so only the edit itself is judged.
void fix_checksum(Frame& f) {
  proto::Ipv6Header ip;
  std::memcpy(&ip, f.data() + kIp, sizeof ip);
  put(f, kIcmp + 2, 0);
  put(f, kIcmp + 3, 0);
  const std::size_t len = std::min<std::size_t>(ip.payload_length.get(), f.size() - kIcmp);
  const std::uint16_t sum = proto::icmpv6_checksum(ip.src, ip.dst, proto::ByteSpan{f.data() + kIcmp, len});
  put(f, kIcmp + 2, static_cast<std::uint8_t>(sum >> 8));
  put(f, kIcmp + 3, static_cast<std::uint8_t>(sum));
}

template <typename T>
T read_at(const Frame& f, std::size_t at) {
  T v;
  std::memcpy(&v, f.data() + at, sizeof v);
  return v;
}

TEST(Ndp, SolicitationGoesToTheSolicitedNodeGroup) {
  const Frame ns = solicitation_for(kMyIp);
  const auto eth = read_at<proto::EthernetHeader>(ns, 0);
  const auto ip = read_at<proto::Ipv6Header>(ns, kIp);
  EXPECT_EQ(eth.dst, (MacAddr{0x33, 0x33, 0xff, 0, 0, 1}));
  EXPECT_EQ(eth.ether_type.get(), proto::kEtherTypeIpv6);
  EXPECT_EQ(ip.dst, (Ipv6Addr{0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 1}));
  EXPECT_EQ(ip.hop_limit, 255);
  EXPECT_EQ(ip.next_header, proto::kIpProtoIcmpv6);
  EXPECT_EQ(ip.payload_length.get(), 32);
  EXPECT_EQ(u8(ns, kIcmp), 135);
  // The checksum over the pseudo-header checks out, and the source link-layer option is ours.
  EXPECT_EQ(proto::icmpv6_checksum(ip.src, ip.dst, proto::ByteSpan{ns.data() + kIcmp, 32}), 0);
  const auto opt = read_at<proto::LinkLayerOption>(ns, kIcmp + 24);
  EXPECT_EQ(opt.type, 1);
  EXPECT_EQ(opt.length_units, 1);
  EXPECT_EQ(opt.mac, kPeerMac);
}

// A checksum worked by hand for a known message: the RFC 1071 sum of the pseudo-header (both
// addresses, length 32, next header 58) and the message, independent of icmpv6_checksum.
TEST(Ndp, ChecksumMatchesAHandComputedSum) {
  const Frame ns = solicitation_for(kMyIp);
  std::uint32_t sum = 0;
  auto add = [&sum](std::uint32_t w) { sum += w; };
  for (std::size_t i = 0; i < 32; i += 2) add(u8(ns, kIp + 8 + i) << 8 | u8(ns, kIp + 9 + i));  // src, dst
  add(32);
  add(58);
  for (std::size_t i = 0; i < 32; i += 2)
    if (i != 2) add(u8(ns, kIcmp + i) << 8 | u8(ns, kIcmp + i + 1));
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  EXPECT_EQ(static_cast<std::uint16_t>(~sum), u8(ns, kIcmp + 2) << 8 | u8(ns, kIcmp + 3));
}

TEST(Ndp, SolicitationForUsIsAnsweredAndItsSenderLearnt) {
  NeighborCache cache;
  Frame reply(dp::kNdFrameBytes);
  ASSERT_EQ(dp::handle_ndp(solicitation_for(kMyIp), kMyMac, kMyIp, cache, reply), NdpAction::Reply);
  EXPECT_EQ(cache.lookup(kPeerIp), kPeerMac);
  const auto eth = read_at<proto::EthernetHeader>(reply, 0);
  const auto ip = read_at<proto::Ipv6Header>(reply, kIp);
  const auto na = read_at<proto::NeighborMessage>(reply, kIcmp);
  const auto opt = read_at<proto::LinkLayerOption>(reply, kIcmp + 24);
  EXPECT_EQ(eth.dst, kPeerMac);
  EXPECT_EQ(eth.src, kMyMac);
  EXPECT_EQ(ip.src, kMyIp);
  EXPECT_EQ(ip.dst, kPeerIp);
  EXPECT_EQ(ip.hop_limit, 255);
  EXPECT_EQ(na.icmp.type, 136);
  EXPECT_EQ(na.flags.get(), proto::NeighborMessage::kSolicited | proto::NeighborMessage::kOverride);
  EXPECT_EQ(na.target, kMyIp);
  EXPECT_EQ(opt.type, 2);
  EXPECT_EQ(opt.mac, kMyMac);
  EXPECT_EQ(proto::icmpv6_checksum(ip.src, ip.dst, proto::ByteSpan{reply.data() + kIcmp, 32}), 0);

  // The advertisement teaches the soliciting side our MAC.
  NeighborCache theirs;
  Frame none(dp::kNdFrameBytes);
  EXPECT_EQ(dp::handle_ndp(reply, kPeerMac, kPeerIp, theirs, none), NdpAction::Learned);
  EXPECT_EQ(theirs.lookup(kMyIp), kMyMac);
}

TEST(Ndp, UnicastSolicitationIsAnsweredToo) {
  // Neighbour unreachability detection probes the cached address directly.
  Frame ns = solicitation_for(kMyIp);
  std::memcpy(ns.data(), kMyMac.data(), 6);
  std::memcpy(ns.data() + kIp + 24, kMyIp.data(), 16);
  fix_checksum(ns);
  NeighborCache cache;
  Frame reply(dp::kNdFrameBytes);
  EXPECT_EQ(dp::handle_ndp(ns, kMyMac, kMyIp, cache, reply), NdpAction::Reply);
}

TEST(Ndp, SolicitationForAnotherAddressOnlyTeaches) {
  NeighborCache cache;
  Frame reply(dp::kNdFrameBytes);
  Ipv6Addr other = kMyIp;
  other[15] = 9;
  EXPECT_EQ(dp::handle_ndp(solicitation_for(other), kMyMac, kMyIp, cache, reply), NdpAction::Learned);
  EXPECT_EQ(cache.lookup(kPeerIp), kPeerMac);
}

TEST(Ndp, DuplicateAddressProbeIsDefendedToAllNodes) {
  Frame ns = solicitation_for(kMyIp);
  ns.resize(dp::kNdFrameBytes - 8);  // a probe carries no source link-layer option
  std::memset(ns.data() + kIp + 8, 0, 16);
  put(ns, kIp + 5, 24);
  fix_checksum(ns);
  NeighborCache cache;
  Frame reply(dp::kNdFrameBytes);
  ASSERT_EQ(dp::handle_ndp(ns, kMyMac, kMyIp, cache, reply), NdpAction::Reply);
  const auto ip = read_at<proto::Ipv6Header>(reply, kIp);
  EXPECT_EQ(ip.dst, proto::kAllNodes);
  EXPECT_EQ(read_at<proto::EthernetHeader>(reply, 0).dst, (MacAddr{0x33, 0x33, 0, 0, 0, 1}));
  EXPECT_EQ(read_at<proto::NeighborMessage>(reply, kIcmp).flags.get(), proto::NeighborMessage::kOverride);
  EXPECT_FALSE(cache.lookup(Ipv6Addr{}));
}

TEST(Ndp, AnIpv4EndpointAnswersNoSolicitation) {
  // Its IPv6 address is the unspecified one: a solicitation for :: is invalid anyway, but
  // nothing may match it.
  NeighborCache cache;
  Frame reply(dp::kNdFrameBytes);
  EXPECT_EQ(dp::handle_ndp(solicitation_for(Ipv6Addr{}), kMyMac, Ipv6Addr{}, cache, reply), NdpAction::Learned);
}

struct Hostile {
  const char* name;
  std::function<void(Frame&)> edit;
  bool refix_checksum;
  NdpAction expected;
};

// Each row breaks one rule of RFC 4861 7.1.1 (or the frame's own lengths); none may be
// answered or learnt from.
const Hostile kHostile[] = {
    {"bad checksum", [](Frame& f) { put(f, kIcmp + 2, u8(f, kIcmp + 2) ^ 0x01); }, false, NdpAction::Invalid},
    {"checksum of another source", [](Frame& f) { put(f, kIp + 23, 0x77); }, false, NdpAction::Invalid},
    {"hop limit 64 (routed)", [](Frame& f) { put(f, kIp + 7, 64); }, true, NdpAction::Invalid},
    {"code 1", [](Frame& f) { put(f, kIcmp + 1, 1); }, true, NdpAction::Invalid},
    {"multicast target", [](Frame& f) { put(f, kIcmp + 8, 0xff); }, true, NdpAction::Invalid},
    {"multicast source (found by fuzz_ndp)", [](Frame& f) { put(f, kIp + 8, 0xff); }, true, NdpAction::Invalid},
    {"option of length 0", [](Frame& f) { put(f, kIcmp + 25, 0); }, true, NdpAction::Invalid},
    {"option past the message", [](Frame& f) { put(f, kIcmp + 25, 2); }, true, NdpAction::Invalid},
    {"payload length past the frame", [](Frame& f) { put(f, kIp + 5, 200); }, false, NdpAction::Invalid},
    {"message shorter than 24 bytes",
     [](Frame& f) {
       put(f, kIp + 5, 20);
       f.resize(kIcmp + 20);
     },
     true, NdpAction::Invalid},
    {"probe from :: with a source link-layer option", [](Frame& f) { std::memset(f.data() + kIp + 8, 0, 16); }, true,
     NdpAction::Invalid},
    {"probe from :: to a unicast address",
     [](Frame& f) {
       std::memset(f.data() + kIp + 8, 0, 16);
       std::memcpy(f.data() + kIp + 24, kMyIp.data(), 16);
       put(f, kIp + 5, 24);
       f.resize(kIcmp + 24);
     },
     true, NdpAction::Invalid},
    {"truncated inside the IPv6 header", [](Frame& f) { f.resize(kIp + 20); }, false, NdpAction::NotNdp},
    {"ICMPv6 echo request", [](Frame& f) { put(f, kIcmp, 128); }, true, NdpAction::NotNdp},
    {"UDP under IPv6", [](Frame& f) { put(f, kIp + 6, 17); }, false, NdpAction::NotNdp},
};

TEST(Ndp, HostileSolicitationsAreDroppedNotAnswered) {
  for (const Hostile& h : kHostile) {
    Frame f = solicitation_for(kMyIp);
    h.edit(f);
    if (h.refix_checksum) fix_checksum(f);
    NeighborCache cache;
    Frame reply(dp::kNdFrameBytes);
    EXPECT_EQ(dp::handle_ndp(f, kMyMac, kMyIp, cache, reply), h.expected) << h.name;
    EXPECT_FALSE(cache.lookup(kPeerIp)) << h.name;
  }
}

TEST(Ndp, SolicitedAdvertisementToAGroupIsDropped) {
  NeighborCache cache;
  Frame reply(dp::kNdFrameBytes);
  ASSERT_EQ(dp::handle_ndp(solicitation_for(kMyIp), kMyMac, kMyIp, cache, reply), NdpAction::Reply);
  std::memcpy(reply.data() + kIp + 24, proto::kAllNodes.data(), 16);
  fix_checksum(reply);
  NeighborCache theirs;
  Frame none(dp::kNdFrameBytes);
  EXPECT_EQ(dp::handle_ndp(reply, kPeerMac, kPeerIp, theirs, none), NdpAction::Invalid);
  EXPECT_FALSE(theirs.lookup(kMyIp));
}

// Random byte flips, truncations and extensions of a valid solicitation: never a crash or a
// read past the frame (the sanitizer build checks), and nothing with a broken checksum is
// ever believed.
TEST(Ndp, RandomMutationsNeverCrashAndBrokenChecksumsAreNeverBelieved) {
  std::mt19937 rng(4861);
  const Frame valid = solicitation_for(kMyIp);
  unsigned invalid = 0;
  for (int i = 0; i < 20000; ++i) {
    Frame f = valid;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % f.size();
      f[at] = static_cast<std::byte>(rng());
    }
    if (rng() % 4 == 0) f.resize(rng() % (f.size() + 16));
    NeighborCache cache;
    Frame reply(dp::kNdFrameBytes);
    const NdpAction a = dp::handle_ndp(f, kMyMac, kMyIp, cache, reply);
    if (a == NdpAction::Invalid) ++invalid;
    if (a == NdpAction::Reply || a == NdpAction::Learned) {
      // Accepted: then its checksum must hold.
      const auto ip = read_at<proto::Ipv6Header>(f, kIp);
      EXPECT_EQ(proto::icmpv6_checksum(ip.src, ip.dst, proto::ByteSpan{f.data() + kIcmp, ip.payload_length.get()}), 0)
          << "mutation " << i;
    }
  }
  EXPECT_GT(invalid, 10000u);
}

std::string hex_of(const Frame& f) {
  std::string s;
  char b[3];
  for (std::byte x : f) {
    std::snprintf(b, sizeof b, "%02x", std::to_integer<unsigned>(x));
    s += b;
  }
  return s;
}

// scapy (an independent implementation) decodes our solicitation and advertisement to the same
// fields and, rebuilding them with its own ICMPv6 checksum, to the same bytes.
TEST(Ndp, ScapyReadsAndRebuildsOurMessagesByteForByte) {
  constexpr const char* kPython = "/usr/bin/python3";  // Debian's, with python3-scapy
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " not found: the scapy cross-check needs it";
  const Frame ns = solicitation_for(kMyIp);
  NeighborCache cache;
  Frame na(dp::kNdFrameBytes);
  ASSERT_EQ(dp::handle_ndp(ns, kMyMac, kMyIp, cache, na), NdpAction::Reply);
  const char* script = R"(
import sys
try:
    from scapy.all import Ether, IPv6, raw
    from scapy.layers.inet6 import ICMPv6ND_NS, ICMPv6ND_NA, ICMPv6NDOptSrcLLAddr, ICMPv6NDOptDstLLAddr
except ImportError:
    sys.exit(77)
for h in sys.argv[1:]:
    b = bytes.fromhex(h)
    p = Ether(b)
    m = p[ICMPv6ND_NS] if ICMPv6ND_NS in p else p[ICMPv6ND_NA]
    o = p[ICMPv6NDOptSrcLLAddr] if ICMPv6NDOptSrcLLAddr in p else p[ICMPv6NDOptDstLLAddr]
    flags = 'R%dS%dO%d' % (m.R, m.S, m.O) if ICMPv6ND_NA in p else '-'
    q = Ether(b)
    del q[IPv6].payload.cksum
    print(m.name, p[IPv6].src, p[IPv6].dst, p[IPv6].hlim, m.tgt, o.lladdr, flags, raw(q) == b)
)";
  const auto r = run_command(kPython, {"-c", script, hex_of(ns), hex_of(na)});
  if (r.exit_code == 77) GTEST_SKIP() << kPython << " cannot import scapy (apt-get install python3-scapy)";
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "ICMPv6 Neighbor Discovery - Neighbor Solicitation fd77::2 ff02::1:ff00:1 255 fd77::1 02:00:00:00:00:02 - True\n"
            "ICMPv6 Neighbor Discovery - Neighbor Advertisement fd77::1 fd77::2 255 fd77::1 02:00:00:00:00:01 R0S1O1 True\n");
}

TEST(NeighborCache, LearnsUpdatesAndEvicts) {
  NeighborCache c;
  EXPECT_FALSE(c.lookup(kPeerIp));
  c.learn(kPeerIp, kPeerMac);
  EXPECT_EQ(c.lookup(kPeerIp), kPeerMac);
  c.learn(kPeerIp, MacAddr{2, 0, 0, 0, 0, 7});
  EXPECT_EQ(c.lookup(kPeerIp), (MacAddr{2, 0, 0, 0, 0, 7}));
  // Multicast and unspecified addresses are never neighbours.
  c.learn(proto::kAllNodes, kPeerMac);
  c.learn(Ipv6Addr{}, kPeerMac);
  EXPECT_FALSE(c.lookup(proto::kAllNodes));
  EXPECT_FALSE(c.lookup(Ipv6Addr{}));
  // More peers than entries: the newest are kept.
  for (unsigned i = 0; i < 2 * NeighborCache::kEntries; ++i) {
    Ipv6Addr a = kMyIp;
    a[14] = static_cast<std::uint8_t>(i >> 8);
    a[15] = static_cast<std::uint8_t>(i + 16);
    c.learn(a, MacAddr{2, 0, 0, 0, 1, static_cast<std::uint8_t>(i)});
  }
  Ipv6Addr last = kMyIp;
  last[15] = static_cast<std::uint8_t>(2 * NeighborCache::kEntries - 1 + 16);
  EXPECT_EQ(c.lookup(last), (MacAddr{2, 0, 0, 0, 1, static_cast<std::uint8_t>(2 * NeighborCache::kEntries - 1)}));
}

// ARP's cache is the same table (dataplane/neighbor_table.hpp), keyed by the IPv4 address.
TEST(NeighborCache, ArpSharesTheTableAndNeverAnswersForTheZeroAddress) {
  dp::ArpCache c;
  const proto::Ipv4Addr peer{10, 0, 0, 9};
  EXPECT_FALSE(c.lookup(peer));
  // 0.0.0.0 is no peer: an empty entry must not look like its answer (it once gave 00:..:00).
  EXPECT_FALSE(c.lookup(proto::Ipv4Addr{}));
  c.learn(proto::Ipv4Addr{}, kPeerMac);
  EXPECT_FALSE(c.lookup(proto::Ipv4Addr{}));
  c.learn(peer, MacAddr{});  // net_ring ports have the all-zero MAC: it is a MAC like any other
  EXPECT_EQ(c.lookup(peer), MacAddr{});
  c.learn(peer, kPeerMac);
  EXPECT_EQ(c.lookup(peer), kPeerMac);
}

TEST(Steering, ClassifiesNeighborDiscoveryForTheControlWorker) {
  std::uint32_t qpn = 0;
  Frame ns = solicitation_for(kMyIp);
  EXPECT_EQ(dp::classify(ns, qpn), dp::FrameClass::Ndp);
  NeighborCache cache;
  Frame na(dp::kNdFrameBytes);
  ASSERT_EQ(dp::handle_ndp(ns, kMyMac, kMyIp, cache, na), NdpAction::Reply);
  EXPECT_EQ(dp::classify(na, qpn), dp::FrameClass::Ndp);
  const dp::Steering s{rdma::QpnShards{0x11, 4}};
  EXPECT_EQ(s.steer(ns).owner, dp::kControlWorker);
  Frame echo = ns;
  put(echo, kIcmp, 128);
  EXPECT_EQ(dp::classify(echo, qpn), dp::FrameClass::Other);
  Frame short_frame = ns;
  short_frame.resize(kIcmp);
  EXPECT_EQ(dp::classify(short_frame, qpn), dp::FrameClass::Other);
}

}  // namespace
}  // namespace roce::test::ndp_test
