// The destination a worker prefetches for a received WRITE (dataplane/write_prefetch.hpp): the
// first byte the WRITE stores, for the opcodes that carry a RETH and start a WRITE, through the
// region's iova; nothing for any other frame, a key the table does not hold, an address outside
// the region, or a frame cut short anywhere.
#include "dataplane/write_prefetch.hpp"

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <vector>

#include "protocol/builder.hpp"
#include "protocol/opcode.hpp"

namespace roce::test::write_prefetch_test {
namespace {

using proto::Opcode;

constexpr std::uint64_t kIova = 0x7000'0000'1000;

std::vector<std::byte> frame(Opcode op, std::uint64_t va, std::uint32_t rkey, proto::IpVersion v = proto::IpVersion::V4,
                             std::uint8_t vlans = 0) {
  proto::FrameSpec spec;
  spec.ip_version = v;
  spec.eth.vlan_count = vlans;
  for (std::uint8_t i = 0; i < vlans; ++i) {
    spec.eth.vlan_tpid[i] = proto::kEtherTypeVlan;
    spec.eth.vlan_tci[i] = 7;
  }
  spec.bth.opcode = proto::raw(op);
  spec.bth.dest_qp.set(0x11);
  spec.ext.reth = proto::Reth{proto::Be64::of(va), proto::Be32::of(rkey), proto::Be32::of(64)};  // where the opcode has one
  spec.validate = false;
  std::vector<std::byte> out(512);
  const std::vector<std::byte> payload(op == Opcode::RcReadRequest ? 0 : 64, std::byte{0x5A});
  const auto layout = proto::build_frame(spec, payload, out, proto::CrcBackend::Portable);
  EXPECT_TRUE(layout.ok()) << proto::to_string(layout.error);
  out.resize(layout.length);
  return out;
}

struct Region {
  rdma::MrTable mrs;
  std::vector<std::byte> bytes = std::vector<std::byte>(4096);
  std::uint32_t rkey = 0;
  Region() {
    auto mr = mrs.register_region(mrs.alloc_pd(), bytes.data(), bytes.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, kIova);
    EXPECT_TRUE(mr.ok());
    rkey = (*mr)->rkey();
  }
};

TEST(WritePrefetch, EveryOpcodeStartingAWriteGivesItsFirstByte) {
  Region r;
  for (const Opcode op : {Opcode::RcWriteFirst, Opcode::RcWriteOnly, Opcode::RcWriteOnlyImm, Opcode::UcWriteFirst,
                          Opcode::UcWriteOnly, Opcode::UcWriteOnlyImm})
    EXPECT_EQ(dp::write_destination(frame(op, kIova + 0x40, r.rkey), r.mrs), r.bytes.data() + 0x40) << proto::raw(op);
  EXPECT_EQ(dp::write_destination(frame(Opcode::RcWriteOnly, kIova + 0x80, r.rkey, proto::IpVersion::V6, 2), r.mrs),
            r.bytes.data() + 0x80);
}

TEST(WritePrefetch, OtherFramesKeysAndAddressesGiveNothing) {
  Region r;
  for (const Opcode op : {Opcode::RcWriteMiddle, Opcode::RcSendOnly, Opcode::RcReadRequest})
    EXPECT_EQ(dp::write_destination(frame(op, kIova, r.rkey), r.mrs), nullptr) << proto::raw(op);
  EXPECT_EQ(dp::write_destination(frame(Opcode::RcWriteOnly, kIova, r.rkey + 0x100), r.mrs), nullptr);
  EXPECT_EQ(dp::write_destination(frame(Opcode::RcWriteOnly, kIova - 1, r.rkey), r.mrs), nullptr);
  EXPECT_EQ(dp::write_destination(frame(Opcode::RcWriteOnly, kIova + r.bytes.size(), r.rkey), r.mrs), nullptr);
  EXPECT_EQ(dp::write_destination(frame(Opcode::RcWriteOnly, kIova + r.bytes.size() - 1, r.rkey), r.mrs),
            r.bytes.data() + r.bytes.size() - 1);
}

TEST(WritePrefetch, AFrameCutAnywhereBeforeItsRethGivesNothing) {
  Region r;
  const auto f = frame(Opcode::RcWriteOnly, kIova, r.rkey);
  const std::size_t reth_end = 14 + 20 + 8 + 12 + 16;
  for (std::size_t len = 0; len < reth_end; ++len)
    EXPECT_EQ(dp::write_destination(std::span{f.data(), len}, r.mrs), nullptr) << len;
  EXPECT_EQ(dp::write_destination(std::span{f.data(), reth_end}, r.mrs), r.bytes.data());
}

// WriteDestinations (the worker's, with the last region remembered) answers as
// write_destination does, frame after frame: every case above, VLAN-tagged and IPv6 frames
// (the walk) between plain IPv4 ones (fixed offsets), and a frame cut short.
TEST(WritePrefetch, TheRememberingLookUpAnswersAsTheTableDoes) {
  Region r;
  dp::WriteDestinations d;
  const std::vector<std::vector<std::byte>> frames = {
      frame(Opcode::RcWriteOnly, kIova + 0x40, r.rkey),
      frame(Opcode::RcWriteOnly, kIova + 0x80, r.rkey),
      frame(Opcode::UcWriteFirst, kIova + 0xC0, r.rkey),
      frame(Opcode::RcWriteOnlyImm, kIova + 0x100, r.rkey, proto::IpVersion::V6, 2),
      frame(Opcode::RcWriteOnly, kIova + 0x140, r.rkey, proto::IpVersion::V4, 1),
      frame(Opcode::RcWriteMiddle, kIova, r.rkey),
      frame(Opcode::RcSendOnly, kIova, r.rkey),
      frame(Opcode::RcWriteOnly, kIova, r.rkey + 0x100),
      frame(Opcode::RcWriteOnly, kIova - 1, r.rkey),
      frame(Opcode::RcWriteOnly, kIova + r.bytes.size(), r.rkey),
      frame(Opcode::RcWriteOnly, kIova + r.bytes.size() - 1, r.rkey),
      frame(Opcode::RcWriteOnly, kIova + 0x200, r.rkey),
  };
  for (std::size_t i = 0; i < frames.size(); ++i)
    EXPECT_EQ(d.find(frames[i], r.mrs), dp::write_destination(frames[i], r.mrs)) << i;
  EXPECT_EQ(d.find(frames[0], r.mrs), r.bytes.data() + 0x40);
  const std::size_t reth_end = 14 + 20 + 8 + 12 + 16;
  for (std::size_t len = 0; len < reth_end; ++len)
    EXPECT_EQ(d.find(std::span{frames[0].data(), len}, r.mrs), nullptr) << len;
}

// A key the worker remembered that no longer names its region (between two bursts, or two
// frames) gives nothing, as the table would: deregistered; invalidated; the slot registered
// again (a new generation, and the old key still names nothing); the new key then gives the
// new region.
TEST(WritePrefetch, ARememberedKeyGoneSinceGivesNothing) {
  rdma::MrTable mrs(1);  // one slot: the second registration takes the first one's
  const rdma::PdHandle pd = mrs.alloc_pd();
  constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  std::vector<std::byte> first(4096), second(8192);
  auto mr = mrs.register_region(pd, first.data(), first.size(), kAccess, kIova);
  ASSERT_TRUE(mr.ok());
  const std::uint32_t key = (*mr)->rkey();
  dp::WriteDestinations d;
  ASSERT_EQ(d.find(frame(Opcode::RcWriteOnly, kIova + 0x40, key), mrs), first.data() + 0x40);
  ASSERT_TRUE(mrs.deregister(key).ok());
  EXPECT_EQ(d.find(frame(Opcode::RcWriteOnly, kIova + 0x40, key), mrs), nullptr);

  mr = mrs.register_region(pd, second.data(), second.size(), kAccess, kIova);
  ASSERT_TRUE(mr.ok());
  const std::uint32_t again = (*mr)->rkey();
  ASSERT_EQ(again >> 8, key >> 8) << "the slot is used again";
  EXPECT_EQ(d.find(frame(Opcode::RcWriteOnly, kIova + 0x40, key), mrs), nullptr);
  EXPECT_EQ(d.find(frame(Opcode::RcWriteOnly, kIova + 0x1040, again), mrs), second.data() + 0x1040);
  EXPECT_EQ(d.find(frame(Opcode::RcWriteOnly, kIova + 0x1080, again), mrs), second.data() + 0x1080);
  ASSERT_TRUE(mrs.invalidate(again, pd).ok());
  EXPECT_EQ(d.find(frame(Opcode::RcWriteOnly, kIova + 0x1080, again), mrs), nullptr);
}

// A type 1 window is bound again under the same key to another range of its region: the
// range a frame names is the new bind's (a window is never remembered).
TEST(WritePrefetch, AWindowBoundAgainUnderItsKeyGivesItsNewRange) {
  rdma::MrTable mrs;
  const rdma::PdHandle pd = mrs.alloc_pd();
  std::vector<std::byte> bytes(8192);
  auto mr = mrs.register_region(pd, bytes.data(), bytes.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND,
                                kIova);
  ASSERT_TRUE(mr.ok());
  const std::uint32_t region = (*mr)->rkey();
  auto mw = mrs.alloc_window(pd, 1);
  ASSERT_TRUE(mw.ok());
  const std::uint32_t key = *mw;
  ASSERT_TRUE(mrs.bind_window(key, key, pd, 0, region, kIova, 1024, IBV_ACCESS_REMOTE_WRITE).ok());
  dp::WriteDestinations d;
  EXPECT_EQ(d.find(frame(Opcode::RcWriteOnly, kIova + 0x40, key), mrs), bytes.data() + 0x40);
  ASSERT_TRUE(mrs.bind_window(key, key, pd, 0, region, kIova + 4096, 1024, IBV_ACCESS_REMOTE_WRITE).ok());
  EXPECT_EQ(d.find(frame(Opcode::RcWriteOnly, kIova + 4096 + 0x40, key), mrs), bytes.data() + 4096 + 0x40);
  EXPECT_EQ(d.find(frame(Opcode::RcWriteOnly, kIova + 0x40, key), mrs), nullptr);
}

}  // namespace
}  // namespace roce::test::write_prefetch_test
