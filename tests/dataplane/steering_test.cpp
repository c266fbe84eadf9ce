// Steering: each class of frame and the worker that owns it, and the QPN rule the engines hand
// QPNs out by agreeing with the one frames are steered by.
#include "dataplane/steering.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "dataplane/arp.hpp"
#include "lib/rdma/qpn_shards.hpp"
#include "protocol/builder.hpp"

namespace roce::test::steering_test {
namespace {

using dp::FrameClass;
using dp::Steering;

std::vector<std::byte> roce_frame(std::uint32_t dest_qp, proto::IpVersion v = proto::IpVersion::V4,
                                  std::uint8_t vlans = 0) {
  proto::FrameSpec spec;
  spec.ip_version = v;
  spec.eth.vlan_count = vlans;
  for (std::uint8_t i = 0; i < vlans; ++i) {
    spec.eth.vlan_tpid[i] = i == 0 && vlans == 2 ? proto::kEtherTypeQinQ : proto::kEtherTypeVlan;
    spec.eth.vlan_tci[i] = 100;
  }
  spec.bth.opcode = static_cast<std::uint8_t>(proto::Opcode::RcSendOnly);
  spec.bth.dest_qp.set(dest_qp);
  std::vector<std::byte> out(256);
  const std::vector<std::byte> payload(8, std::byte{0x5A});
  const auto layout = proto::build_frame(spec, payload, out, proto::CrcBackend::Portable);
  EXPECT_TRUE(layout.ok()) << proto::to_string(layout.error);
  out.resize(layout.length);
  return out;
}

std::vector<std::byte> arp_request() {
  std::vector<std::byte> out(dp::kArpFrameBytes);
  dp::build_arp_request({2, 0, 0, 0, 0, 1}, {10, 0, 0, 1}, {10, 0, 0, 2}, out);
  return out;
}

TEST(QpnShards, DealsQpnsRoundRobinFromTheBase) {
  const rdma::QpnShards s{0x11, 4};
  for (unsigned shard = 0; shard < 4; ++shard)
    for (std::uint32_t slot = 0; slot < 5; ++slot) {
      const auto qpn = static_cast<std::uint32_t>(s.qpn(shard, slot));
      EXPECT_EQ(qpn, 0x11u + shard + 4 * slot);
      EXPECT_EQ(s.owner(qpn), shard) << qpn;
      EXPECT_EQ(s.slot(shard, qpn), slot) << qpn;
      for (unsigned other = 0; other < 4; ++other) {
        if (other != shard) {
          EXPECT_FALSE(s.slot(other, qpn)) << qpn << " is not shard " << other << "'s";
        }
      }
    }
}

TEST(QpnShards, Qp1BelongsToShardZeroAndLowQpnsToNone) {
  const rdma::QpnShards s{0x11, 3};
  EXPECT_EQ(s.owner(proto::kGsiQpn), 0u);
  EXPECT_FALSE(s.owner(0));
  EXPECT_FALSE(s.owner(0x10));
  EXPECT_FALSE(s.slot(0, proto::kGsiQpn));
  EXPECT_FALSE(s.slot(0, 0x10));
}

TEST(QpnShards, ZeroShardsCountsAsOne) {
  const rdma::QpnShards s{0x20, 0};
  EXPECT_EQ(s.owner(0x35), 0u);
  EXPECT_EQ(s.slot(0, 0x25), 5u);
}

TEST(Steering, ClassifiesArpRoceAndOther) {
  std::uint32_t qpn = 0;
  EXPECT_EQ(dp::classify(arp_request(), qpn), FrameClass::Arp);
  EXPECT_EQ(dp::classify(roce_frame(0x123), qpn), FrameClass::Roce);
  EXPECT_EQ(qpn, 0x123u);
  EXPECT_EQ(dp::classify(roce_frame(0x456, proto::IpVersion::V6), qpn), FrameClass::Roce);
  EXPECT_EQ(qpn, 0x456u);
  EXPECT_EQ(dp::classify(roce_frame(0x789, proto::IpVersion::V4, 2), qpn), FrameClass::Roce);
  EXPECT_EQ(qpn, 0x789u);

  auto other_port = roce_frame(0x123);
  other_port[14 + 20 + 2] = std::byte{0};  // UDP destination port 4791 -> 0x00B7
  EXPECT_EQ(dp::classify(other_port, qpn), FrameClass::Other);
  auto ipv6_ethertype_unknown = roce_frame(0x123);
  ipv6_ethertype_unknown[12] = std::byte{0x88};
  ipv6_ethertype_unknown[13] = std::byte{0xCC};  // LLDP
  EXPECT_EQ(dp::classify(ipv6_ethertype_unknown, qpn), FrameClass::Other);
}

TEST(Steering, ShortFramesAreOtherAtEveryLength) {
  const auto full = roce_frame(0x20);
  // Up to the BTH's end a cut frame cannot be told RoCE; from there on its QPN can be read.
  const std::size_t bth_end = 14 + 20 + 8 + 12;
  for (std::size_t n = 0; n < bth_end; ++n) {
    std::uint32_t qpn = 0;
    EXPECT_EQ(dp::classify(std::span{full}.first(n), qpn), FrameClass::Other) << n << " bytes";
  }
  const auto arp = arp_request();
  std::uint32_t qpn = 0;
  EXPECT_EQ(dp::classify(std::span{arp}.first(13), qpn), FrameClass::Other);
}

TEST(Steering, OwnersFollowEachClassPolicy) {
  const Steering st(rdma::QpnShards{0x11, 3});
  const auto arp = st.steer(arp_request());
  EXPECT_EQ(arp.cls, FrameClass::Arp);
  EXPECT_EQ(arp.owner, dp::kControlWorker);

  for (std::uint32_t qpn = 0x11; qpn < 0x11 + 9; ++qpn) {
    const auto v = st.steer(roce_frame(qpn));
    EXPECT_EQ(v.cls, FrameClass::Roce);
    EXPECT_EQ(v.owner, (qpn - 0x11) % 3) << qpn;
  }
  EXPECT_EQ(st.steer(roce_frame(proto::kGsiQpn)).owner, 0u);  // the CM agent's worker
  EXPECT_FALSE(st.steer(roce_frame(0x10)).owner);             // below the base: nobody's

  auto other = roce_frame(0x12);
  other[14 + 20 + 2] = std::byte{0};
  const auto o = st.steer(other);
  EXPECT_EQ(o.cls, FrameClass::Other);
  EXPECT_FALSE(o.owner);  // the receiver's to count
}

TEST(Steering, AgreesWithTheQpnsAnEngineHandsOut) {
  // The engine of worker w hands out qpns.qpn(w, k); every such QPN must steer to w.
  for (std::uint32_t workers = 1; workers <= dp::kMaxWorkers; ++workers) {
    const rdma::QpnShards shards{0x40, workers};
    const Steering st(shards);
    for (unsigned w = 0; w < workers; ++w)
      for (std::uint32_t k = 0; k < 3; ++k) {
        const auto qpn = static_cast<std::uint32_t>(shards.qpn(w, k));
        EXPECT_EQ(st.steer(roce_frame(qpn)).owner, w) << workers << " workers, QPN " << qpn;
      }
  }
}

TEST(Steering, EveryClassHasAName) {
  EXPECT_EQ(dp::to_string(FrameClass::Arp), "arp");
  EXPECT_EQ(dp::to_string(FrameClass::Roce), "roce");
  EXPECT_EQ(dp::to_string(FrameClass::Other), "other");
}

}  // namespace
}  // namespace roce::test::steering_test
