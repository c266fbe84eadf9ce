// QP1 in the engine (lib/rdma/gsi_port.hpp): with a CM agent attached, a MAD in a UD SEND_ONLY
// to QP1 with the GSI Q_Key reaches the agent's ring with its sender's address (without one,
// QP1 is an unknown QP); every other packet for QP1 is counted
// by what is wrong with it and never reaches a QP; a full ring drops and counts; queued MADs
// leave first in the engine's transmit turn, as frames QP1's check accepts, PSN by PSN.
#include <gtest/gtest.h>

#include <vector>

#include "lib/rdma/engine.hpp"
#include "protocol/parser.hpp"
#include "tests/support/raw_peer.hpp"

namespace roce::test::gsi_port_test {
namespace {

using namespace roce::proto;

const MacAddr kPeerMac{2, 0, 0, 0, 0, 9};
const Ipv4Addr kPeerIp{10, 0, 0, 9};

Mad mad_of(std::uint8_t fill) {
  Mad m{};
  m.fill(static_cast<std::byte>(fill));
  return m;
}

class GsiPortTest : public ::testing::Test {
 protected:
  explicit GsiPortTest(std::uint32_t ring = 256) : mrs_(16) {
    rdma::EngineConfig cfg = raw_peer_target(kPeerMac);
    cfg.gsi.ring_size = ring;
    engine_ = std::make_unique<rdma::Engine>(cfg, mrs_);
    engine_->gsi().attach(true);  // as a CM agent does
  }
  // A frame to our QP1 as the peer's GSI agent sends it, with one field changed by `edit`.
  std::vector<std::byte> frame(const Mad& mad, std::uint32_t psn = 7, std::uint16_t pkey = 0xFFFF,
                               std::uint32_t qkey = kGsiQkey, Opcode op = Opcode::UdSendOnly, std::size_t len = kMadBytes) {
    FrameSpec s;
    s.eth.src = kPeerMac;
    s.eth.dst = engine_->config().path.local.mac;
    s.ipv4.src = kPeerIp;
    s.ipv4.dst = engine_->config().path.local.ip.v4;
    s.bth.opcode = raw(op);
    s.bth.pkey.set(pkey);
    s.bth.dest_qp.set(kGsiQpn);
    s.bth.psn.set(psn);
    s.ext.deth.qkey.set(qkey);
    s.ext.deth.src_qp.set(kGsiQpn);
    s.validate = false;
    std::vector<std::byte> out(len + 256);
    const auto l = build_frame(s, ByteSpan(mad).first(len), out, CrcBackend::Isal);
    EXPECT_TRUE(l.ok());
    out.resize(l.length);
    return out;
  }
  void receive(const std::vector<std::byte>& f) { engine_->receive(f, 1000); }
  std::uint64_t gsi(rdma::GsiCounter c) const { return engine_->gsi().counter(c); }

  rdma::MrTable mrs_;
  std::unique_ptr<rdma::Engine> engine_;
};

TEST_F(GsiPortTest, MadReachesTheRingWithItsSender) {
  receive(frame(mad_of(0x5A)));
  rdma::GsiReceived r;
  ASSERT_TRUE(engine_->gsi().pop(r));
  EXPECT_EQ(r.mad, mad_of(0x5A));
  EXPECT_EQ(r.from, rdma::IpAddress::ipv4(kPeerIp));
  EXPECT_EQ(r.from_mac, kPeerMac);
  EXPECT_EQ(r.src_qp, kGsiQpn);
  EXPECT_EQ(r.pkey, 0xFFFF);
  EXPECT_FALSE(engine_->gsi().pop(r));
  EXPECT_EQ(gsi(rdma::GsiCounter::RxMads), 1u);
  EXPECT_EQ(engine_->drops(rdma::EngineDrop::UnknownQp), 0u);
}

TEST_F(GsiPortTest, WithoutAnAgentQp1IsAnUnknownQp) {
  engine_->gsi().attach(false);
  receive(frame(mad_of(1)));
  EXPECT_EQ(engine_->drops(rdma::EngineDrop::UnknownQp), 1u);
  EXPECT_EQ(gsi(rdma::GsiCounter::RxMads), 0u);
  rdma::GsiReceived r;
  EXPECT_FALSE(engine_->gsi().pop(r));
}

TEST_F(GsiPortTest, EveryOtherPacketForQp1IsCountedByItsFault) {
  receive(frame(mad_of(1), 1, 0xFFFF, 0x1234));                                   // Q_Key
  receive(frame(mad_of(1), 1, 0x8001));                                           // another partition
  receive(frame(mad_of(1), 1, 0xFFFF, kGsiQkey, Opcode::UdSendOnly, 100));        // not one MAD
  receive(frame(mad_of(1), 1, 0xFFFF, kGsiQkey, Opcode::UdSendOnlyImm)); // MADs carry no immediate
  EXPECT_EQ(gsi(rdma::GsiCounter::BadQkey), 1u);
  EXPECT_EQ(gsi(rdma::GsiCounter::BadPkey), 1u);
  EXPECT_EQ(gsi(rdma::GsiCounter::WrongLength), 1u);
  EXPECT_EQ(gsi(rdma::GsiCounter::NotUdSend), 1u);
  EXPECT_EQ(gsi(rdma::GsiCounter::RxMads), 0u);
  rdma::GsiReceived r;
  EXPECT_FALSE(engine_->gsi().pop(r));
}

TEST_F(GsiPortTest, QueuedMadsLeaveFirstAsFramesQp1Accepts) {
  rdma::GsiSend s;
  s.to = rdma::IpAddress::ipv4(kPeerIp);
  s.to_mac = kPeerMac;
  for (std::uint8_t k = 0; k < 3; ++k) {
    s.mad = mad_of(k);
    ASSERT_TRUE(engine_->gsi().push(s));
  }
  ASSERT_TRUE(engine_->has_tx_work());
  std::vector<std::vector<std::byte>> bufs(4, std::vector<std::byte>(4096));
  std::vector<rdma::TxFrame> frames;
  for (auto& b : bufs) frames.push_back(rdma::TxFrame{b.data(), static_cast<std::uint32_t>(b.size()), 0});
  ASSERT_EQ(engine_->transmit(frames, 2000), 3u);
  for (std::uint8_t k = 0; k < 3; ++k) {
    Packet p;
    ASSERT_EQ(parse_frame(ByteSpan(bufs[k]).first(frames[k].length), ParseOptions{}, p), ParseError::None);
    EXPECT_EQ(check_gsi_packet(p), GsiError::None);
    EXPECT_EQ(p.bth.psn.get(), k);
    EXPECT_EQ(p.eth.dst, kPeerMac);
    EXPECT_EQ(p.ipv4.dst, kPeerIp);
    EXPECT_EQ(p.ext.deth.src_qp.get(), kGsiQpn);
    EXPECT_TRUE(std::equal(p.payload.begin(), p.payload.end(), mad_of(k).begin()));
  }
  EXPECT_EQ(gsi(rdma::GsiCounter::TxMads), 3u);
  EXPECT_FALSE(engine_->has_tx_work());
}

class SmallGsiRing : public GsiPortTest {
 protected:
  SmallGsiRing() : GsiPortTest(4) {}
};

TEST_F(SmallGsiRing, FullRingsDropAndCount) {
  for (int i = 0; i < 6; ++i) receive(frame(mad_of(static_cast<std::uint8_t>(i))));
  EXPECT_EQ(gsi(rdma::GsiCounter::RxMads), 4u);
  EXPECT_EQ(gsi(rdma::GsiCounter::RxRingFull), 2u);
  rdma::GsiReceived r;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(engine_->gsi().pop(r));
    EXPECT_EQ(r.mad, mad_of(static_cast<std::uint8_t>(i)));  // oldest first, the latest dropped
  }
  rdma::GsiSend s;
  s.to = rdma::IpAddress::ipv4(kPeerIp);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(engine_->gsi().push(s));
  EXPECT_FALSE(engine_->gsi().push(s));
  EXPECT_EQ(gsi(rdma::GsiCounter::TxRingFull), 1u);
}

}  // namespace
}  // namespace roce::test::gsi_port_test
