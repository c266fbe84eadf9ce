#include <gtest/gtest.h>

#include "protocol/opcode.hpp"
#include "protocol/udp_sport.hpp"

namespace roce::proto::opcode_test {
namespace {

TEST(OpcodeTable, TransportBitsMatchTheOpcode) {
  for (unsigned op = 0; op < 256; ++op) {
    const auto& info = opcode_info(static_cast<std::uint8_t>(op));
    if (!info.valid) continue;
    EXPECT_EQ(static_cast<unsigned>(info.transport), op >> 5) << opcode_name(static_cast<std::uint8_t>(op));
  }
}

TEST(OpcodeTable, UcMirrorsRcForSendAndWrite) {
  for (unsigned op = 0; op <= 0x0B; ++op) {
    const auto& rc = opcode_info(static_cast<std::uint8_t>(op));
    const auto& uc = opcode_info(static_cast<std::uint8_t>(0x20 + op));
    ASSERT_TRUE(uc.valid);
    EXPECT_EQ(rc.headers, uc.headers);
    EXPECT_EQ(rc.payload, uc.payload);
    EXPECT_EQ(rc.position, uc.position);
  }
  EXPECT_FALSE(opcode_info(0x2C).valid);  // UC has no READ
}

TEST(OpcodeTable, ExtensionHeadersAreLaidOutInWireOrder) {
  const auto& ack = opcode_info(Opcode::RcAtomicAck);
  EXPECT_EQ(ack.offset[static_cast<int>(ExtHeader::Aeth)], 0);
  EXPECT_EQ(ack.offset[static_cast<int>(ExtHeader::AtomicAckEth)], 4);
  const auto& ud = opcode_info(Opcode::UdSendOnlyImm);
  EXPECT_EQ(ud.offset[static_cast<int>(ExtHeader::Deth)], 0);
  EXPECT_EQ(ud.offset[static_cast<int>(ExtHeader::ImmDt)], 8);
  EXPECT_EQ(opcode_info(Opcode::RcCmpSwap).ext_bytes, 28);
  EXPECT_EQ(opcode_info(Opcode::RcSendOnlyInv).ext_bytes, 4);
  EXPECT_EQ(opcode_info(Opcode::RcFlush).ext_bytes, 20);
  EXPECT_TRUE(opcode_info(Opcode::RcReadResponseFirst).has(ExtHeader::Aeth));
  EXPECT_FALSE(opcode_info(Opcode::RcReadResponseMiddle).has(ExtHeader::Aeth));
}

TEST(OpcodeTable, RequestsAndResponses) {
  EXPECT_TRUE(opcode_info(Opcode::RcReadRequest).is_request);
  EXPECT_FALSE(opcode_info(Opcode::RcReadResponseOnly).is_request);
  EXPECT_FALSE(opcode_info(Opcode::RcAck).is_request);
  EXPECT_TRUE(opcode_info(Opcode::UdSendOnly).is_request);
  EXPECT_EQ(to_string(Opcode::RcWriteOnly), "RC_RDMA_WRITE_ONLY");
  EXPECT_EQ(opcode_name(0x15), "0x15");
}

TEST(UdpSport, SchemesMatchLinux) {
  EXPECT_EQ(udp_sport(SportScheme::RxeLegacy, 17, 99), 57236);
  EXPECT_EQ(flow_label_from_qpns(17, 18), flow_label_from_qpns(18, 17));
  const auto p = udp_sport(SportScheme::FlowLabel, 17, 18);
  EXPECT_GE(p, 0xC000);
}

}  // namespace
}  // namespace roce::proto::opcode_test
