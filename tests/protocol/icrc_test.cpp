#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "protocol/crc32.hpp"
#include "protocol/icrc.hpp"
#include "tests/support/hex.hpp"

namespace roce::proto::icrc_test {
namespace {

using test::from_hex;

constexpr CrcBackend kBackends[] = {CrcBackend::Portable, CrcBackend::Zlib, CrcBackend::Isal};

class IcrcBackend : public ::testing::TestWithParam<CrcBackend> {};

TEST_P(IcrcBackend, Crc32OfCheckStringIsTheStandardValue) {
  const std::string s = "123456789";
  EXPECT_EQ(crc32(GetParam(), 0, std::as_bytes(std::span{s})), 0xCBF43926u);
}

TEST_P(IcrcBackend, Crc32ContinuesAcrossSplits) {
  std::vector<std::byte> data(1000);
  std::mt19937 rng(7);
  for (auto& b : data) b = static_cast<std::byte>(rng());
  const std::uint32_t whole = crc32(GetParam(), 0, data);
  for (std::size_t cut : {0u, 1u, 7u, 8u, 9u, 500u, 999u, 1000u}) {
    const auto a = std::span{data}.first(cut);
    const auto b = std::span{data}.subspan(cut);
    EXPECT_EQ(crc32(GetParam(), crc32(GetParam(), 0, a), b), whole) << "cut " << cut;
  }
}

// ConnectX-4 Lx CNP from scapy's test suite: wire bytes 82 fd 00 2a.
TEST_P(IcrcBackend, ConnectX4LxCnpMatchesCapture) {
  const auto dg = from_hex("45c2003c718c4000401191610a0011010a001201 000012b700280000 8100ffff4000011800000000"
                           "00000000000000000000000000000000");
  EXPECT_EQ(compute_icrc(GetParam(), IpVersion::V4, dg), 0x2A00FD82u);
}

// The NVIDIA example CNP as libconntrack-cm reproduces it (dcqcn.md T8c).
TEST_P(IcrcBackend, NvidiaExampleCnpMatchesLibconntrackVector) {
  const auto dg = from_hex("4589003c98c640002011692716161608 16161607dbae12b700280000 8100ffff400000d200000000"
                           "00000000000000000000000000000000");
  std::array<std::byte, 4> wire{};
  write_icrc(wire, compute_icrc(GetParam(), IpVersion::V4, dg));
  EXPECT_EQ(test::to_hex(wire), "dafc1bef");
}

// rxe RC ACK (rocev2-wire.md section 8): ICRC bytes b3 0c c2 c0.
TEST_P(IcrcBackend, RxeAckMatchesCapture) {
  const auto dg = from_hex("450000305ece40004011d894c0a84104c0a84105 df9412b7001c0000 1100ffff00000011008c84dd 1f000001");
  std::array<std::byte, 4> wire{};
  write_icrc(wire, compute_icrc(GetParam(), IpVersion::V4, dg));
  EXPECT_EQ(test::to_hex(wire), "b30cc2c0");
}

TEST_P(IcrcBackend, MaskedFieldsDoNotChangeTheIcrc) {
  auto dg = from_hex("450000305ece40004011d894c0a84104c0a84105 df9412b7001c0000 1100ffff00000011008c84dd 1f000001");
  const std::uint32_t base = compute_icrc(GetParam(), IpVersion::V4, dg);
  auto touched = dg;
  touched[1] = std::byte{0xC3};   // TOS / ECN: a switch may set CE
  touched[8] = std::byte{0x01};   // TTL
  touched[10] = std::byte{0x00};  // IP checksum
  touched[26] = std::byte{0x12};  // UDP checksum
  touched[32] = std::byte{0xC0};  // BTH FECN/BECN
  EXPECT_EQ(compute_icrc(GetParam(), IpVersion::V4, touched), base);
  auto psn_changed = dg;
  psn_changed[39] ^= std::byte{1};
  EXPECT_NE(compute_icrc(GetParam(), IpVersion::V4, psn_changed), base);
  auto migreq = dg;
  migreq[29] ^= std::byte{0x40};  // BTH M bit is covered
  EXPECT_NE(compute_icrc(GetParam(), IpVersion::V4, migreq), base);
}

TEST_P(IcrcBackend, Ipv6MasksTrafficClassFlowLabelAndHopLimit) {
  std::vector<std::byte> dg(40 + 8 + 12 + 4);
  std::mt19937 rng(3);
  for (auto& b : dg) b = static_cast<std::byte>(rng());
  dg[0] = std::byte{0x60};
  const std::uint32_t base = compute_icrc(GetParam(), IpVersion::V6, dg);
  auto t = dg;
  t[0] = std::byte{0x6F};
  t[1] = std::byte{0x00};
  t[2] = std::byte{0x12};
  t[3] = std::byte{0x34};
  t[7] = std::byte{0x02};
  EXPECT_EQ(compute_icrc(GetParam(), IpVersion::V6, t), base);
  t[4] ^= std::byte{1};  // payload length is covered
  EXPECT_NE(compute_icrc(GetParam(), IpVersion::V6, t), base);
}

TEST(Icrc, BackendsAgreeOnRandomPackets) {
  std::mt19937 rng(11);
  for (int i = 0; i < 200; ++i) {
    std::vector<std::byte> dg(68 + rng() % 4200);
    for (auto& b : dg) b = static_cast<std::byte>(rng());
    const auto v = (i % 2) ? IpVersion::V6 : IpVersion::V4;
    const std::uint32_t ref = compute_icrc(CrcBackend::Portable, v, dg);
    EXPECT_EQ(compute_icrc(CrcBackend::Zlib, v, dg), ref);
    EXPECT_EQ(compute_icrc(CrcBackend::Isal, v, dg), ref);
  }
}

// The ICRC as the wire spec states it, spelled out on a whole masked copy of the datagram: an
// oracle independent of compute_icrc's split into a masked-header part and an in-place part.
std::uint32_t icrc_by_the_spec(IpVersion v, const std::vector<std::byte>& dg) {
  std::vector<std::byte> m(8 + dg.size(), std::byte{0xFF});
  std::memcpy(m.data() + 8, dg.data(), dg.size());
  std::byte* ip = m.data() + 8;
  std::size_t udp = 0;
  if (v == IpVersion::V4) {
    for (std::size_t i : {1u, 8u, 10u, 11u}) ip[i] = std::byte{0xFF};  // TOS, TTL, checksum
    udp = 20;
  } else {
    ip[0] |= std::byte{0x0F};
    for (std::size_t i : {1u, 2u, 3u, 7u}) ip[i] = std::byte{0xFF};  // traffic class, flow label, hop limit
    udp = 40;
  }
  ip[udp + 6] = ip[udp + 7] = std::byte{0xFF};  // UDP checksum
  ip[udp + 8 + 4] = std::byte{0xFF};            // BTH resv8a (FECN, BECN)
  return crc32_portable(0, m.data(), m.size());
}

TEST(Icrc, EveryLengthAroundTheSingleCallThresholdMatchesTheSpec) {
  std::mt19937 rng(5);
  for (const auto v : {IpVersion::V4, IpVersion::V6}) {
    const std::size_t fixed = (v == IpVersion::V4 ? 20 : 40) + 8 + 12;
    for (std::size_t rest = 0; rest <= 320; ++rest) {
      std::vector<std::byte> dg(fixed + rest);
      for (auto& b : dg) b = static_cast<std::byte>(rng());
      const std::uint32_t want = icrc_by_the_spec(v, dg);
      for (const CrcBackend b : kBackends) EXPECT_EQ(compute_icrc(b, v, dg), want) << to_string(b) << " rest " << rest;
    }
  }
}

TEST(Icrc, WireByteOrderIsLeastSignificantFirst) {
  std::array<std::byte, 4> wire{};
  write_icrc(wire, 0x2A00FD82u);
  EXPECT_EQ(test::to_hex(wire), "82fd002a");
  EXPECT_EQ(read_icrc(wire), 0x2A00FD82u);
}

INSTANTIATE_TEST_SUITE_P(AllBackends, IcrcBackend, ::testing::ValuesIn(kBackends),
                         [](const auto& info) { return to_string(info.param); });

}  // namespace
}  // namespace roce::proto::icrc_test
