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

}  // namespace
}  // namespace roce::test::write_prefetch_test
