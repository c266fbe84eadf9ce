// The capture's R_Keys and addresses become ours before a request reaches the engine, with
// the ICRC computed again; bad frames and other hosts' requests are left as they are.
#include "apps/replay/key_map.hpp"

#include <gtest/gtest.h>

#include "protocol/parser.hpp"
#include "tests/support/raw_peer.hpp"

namespace roce::replay::key_map_test {
namespace {

using namespace roce::proto;

std::vector<std::byte> request(Opcode op, const ExtHeaders& ext, Ipv4Addr dst = {10, 0, 0, 1}) {
  FrameSpec s;
  s.eth.src = {2, 0, 0, 0, 0, 2};
  s.eth.dst = {2, 0, 0, 0, 0, 1};
  s.ipv4.src = {10, 0, 0, 2};
  s.ipv4.dst = dst;
  s.bth.opcode = raw(op);
  s.bth.pkey.set(0xFFFF);
  s.bth.dest_qp.set(0x11);
  s.ext = ext;
  std::vector<std::byte> payload(op == Opcode::RcWriteOnly ? 8 : 0, std::byte{7});
  std::vector<std::byte> out(256);
  const auto l = build_frame(s, payload, out, CrcBackend::Isal);
  EXPECT_TRUE(l.ok());
  out.resize(l.length);
  return out;
}

Packet parsed(const std::vector<std::byte>& f) {
  Packet p;
  EXPECT_EQ(parse_frame(f, {}, p), ParseError::None);
  EXPECT_EQ(p.icrc_status, IcrcStatus::Ok);
  return p;
}

KeyMap map() {
  KeyMap m;
  m.add(KeyMapping{0x1350d, 0x55f4e59cedb0, 0x201, 0x7000});
  m.set_local(rdma::IpAddress::ipv4({10, 0, 0, 1}));
  return m;
}

TEST(KeyMap, DeclaredKeyAndAddressBecomeOursWithAGoodIcrc) {
  auto f = request(Opcode::RcWriteOnly, test::reth(0x55f4e59cedb0 + 6, 0x1350d, 8));
  EXPECT_EQ(map().rewrite(f), Rewrite::Mapped);
  const Packet p = parsed(f);
  EXPECT_EQ(p.ext.reth.rkey.get(), 0x201u);
  EXPECT_EQ(p.ext.reth.va.get(), 0x7006u);
  EXPECT_EQ(p.ext.reth.dma_length.get(), 8u);
}

TEST(KeyMap, AtomicEthIsTranslatedToo) {
  auto f = request(Opcode::RcFetchAdd, test::atomic_eth(0x55f4e59cedb0 + 16, 0x1350d, 1, 0));
  EXPECT_EQ(map().rewrite(f), Rewrite::Mapped);
  const Packet p = parsed(f);
  EXPECT_EQ(p.ext.atomic.rkey.get(), 0x201u);
  EXPECT_EQ(p.ext.atomic.va.get(), 0x7010u);
}

TEST(KeyMap, AddressBelowTheRegionStaysOutsideIt) {
  auto f = request(Opcode::RcReadRequest, test::reth(0x55f4e59cedb0 - 1, 0x1350d, 8));
  EXPECT_EQ(map().rewrite(f), Rewrite::Mapped);
  EXPECT_EQ(parsed(f).ext.reth.va.get(), 0x7000u - 1);
}

TEST(KeyMap, UndeclaredKeyBecomesZeroWhichNoRegionHas) {
  auto f = request(Opcode::RcReadRequest, test::reth(0x1000, 0xBAD0, 8));
  EXPECT_EQ(map().rewrite(f), Rewrite::Unmapped);
  EXPECT_EQ(parsed(f).ext.reth.rkey.get(), 0u);
}

TEST(KeyMap, FrameWithABadIcrcIsLeftAlone) {
  auto f = request(Opcode::RcWriteOnly, test::reth(0x55f4e59cedb0, 0x1350d, 8));
  f.back() ^= std::byte{1};
  const auto before = f;
  EXPECT_EQ(map().rewrite(f), Rewrite::None);
  EXPECT_EQ(f, before);
}

TEST(KeyMap, RequestToAnotherHostIsLeftAlone) {
  auto f = request(Opcode::RcWriteOnly, test::reth(0x55f4e59cedb0, 0x1350d, 8), {10, 0, 0, 9});
  const auto before = f;
  EXPECT_EQ(map().rewrite(f), Rewrite::None);
  EXPECT_EQ(f, before);
}

TEST(KeyMap, SendWithoutKeysIsLeftAlone) {
  auto f = request(Opcode::RcSendOnly, {});
  const auto before = f;
  EXPECT_EQ(map().rewrite(f), Rewrite::None);
  EXPECT_EQ(f, before);
}

}  // namespace
}  // namespace roce::replay::key_map_test
