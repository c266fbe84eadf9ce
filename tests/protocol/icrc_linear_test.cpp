// The ICRC by linearity (icrc_linear.hpp) against the plain computation (compute_icrc, itself
// checked against captures and the spec in icrc_test.cpp): every field, every length, both IP
// versions, flows that share a cache slot, and packets of one flow whose fields vary.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "protocol/icrc.hpp"
#include "protocol/icrc_linear.hpp"
#include "tests/support/hex.hpp"

namespace roce::proto::icrc_linear_test {
namespace {

constexpr CrcBackend kBackends[] = {CrcBackend::Portable, CrcBackend::Zlib, CrcBackend::Isal};

std::size_t headers_of(IpVersion v) { return ip_header_bytes(v) + 8 + 12; }

std::vector<std::byte> random_datagram(std::mt19937& rng, IpVersion v, std::size_t rest) {
  std::vector<std::byte> dg(headers_of(v) + rest);
  for (auto& b : dg) b = static_cast<std::byte>(rng());
  dg[0] = v == IpVersion::V4 ? std::byte{0x45} : static_cast<std::byte>(0x60 | (rng() & 0x0F));
  return dg;
}

TEST(IcrcLinear, CapturedRxeAckGivesItsWireIcrc) {
  const auto dg = test::from_hex("450000305ece40004011d894c0a84104c0a84105 df9412b7001c0000 1100ffff00000011008c84dd 1f000001");
  IcrcHeaderCache cache;
  for (int pass = 0; pass < 2; ++pass) {  // a miss, then a hit
    std::array<std::byte, 4> wire{};
    write_icrc(wire, compute_icrc_linear(cache, CrcBackend::Isal, IpVersion::V4, dg));
    EXPECT_EQ(test::to_hex(wire), "b30cc2c0");
  }
  EXPECT_EQ(cache.misses(), 1u);
}

// Each header byte changed alone, through every bit, on a flow already cached: the cached
// template must either still apply (a varying or masked byte) or be replaced (an invariant one).
TEST(IcrcLinear, EveryHeaderByteChangedAloneMatchesThePlainIcrc) {
  std::mt19937 rng(21);
  for (const auto v : {IpVersion::V4, IpVersion::V6}) {
    const auto base = random_datagram(rng, v, 80);
    IcrcHeaderCache cache;
    for (std::size_t at = 0; at < headers_of(v); ++at) {
      for (int bit = 0; bit < 8; ++bit) {
        auto dg = base;
        dg[at] ^= static_cast<std::byte>(1u << bit);
        EXPECT_EQ(compute_icrc_linear(cache, CrcBackend::Isal, v, dg), compute_icrc(CrcBackend::Portable, v, dg))
            << "IPv" << static_cast<int>(v) << " byte " << at << " bit " << bit;
        // And back: the original again, whatever the cache now holds.
        EXPECT_EQ(compute_icrc_linear(cache, CrcBackend::Isal, v, base), compute_icrc(CrcBackend::Portable, v, base));
      }
    }
  }
}

TEST(IcrcLinear, EveryLengthAndBackendMatchesThePlainIcrc) {
  std::mt19937 rng(22);
  IcrcHeaderCache cache;
  for (const auto v : {IpVersion::V4, IpVersion::V6}) {
    for (std::size_t rest = 0; rest <= 600; rest += (rest < 300 ? 1 : 37)) {
      const auto dg = random_datagram(rng, v, rest);
      const std::uint32_t want = compute_icrc(CrcBackend::Portable, v, dg);
      for (const CrcBackend b : kBackends)
        EXPECT_EQ(compute_icrc_linear(cache, b, v, dg), want) << to_string(b) << " rest " << rest;
    }
  }
}

TEST(IcrcLinear, PrefixMatchesThePlainPrefixAtEveryCut) {
  std::mt19937 rng(23);
  IcrcHeaderCache cache;
  for (const auto v : {IpVersion::V4, IpVersion::V6}) {
    const auto dg = random_datagram(rng, v, 300);
    for (std::size_t upto = headers_of(v); upto <= dg.size(); ++upto)
      EXPECT_EQ(icrc_prefix_linear(cache, CrcBackend::Isal, v, dg, upto), icrc_prefix(CrcBackend::Portable, v, dg, upto))
          << "upto " << upto;
  }
}

// Many flows (more than the cache holds, several per slot) interleaved, each packet with its
// own PSN, opcode, length and IPv4 ID, as a busy receiver sees them.
TEST(IcrcLinear, InterleavedFlowsSharingSlotsMatchThePlainIcrc) {
  std::mt19937 rng(24);
  IcrcHeaderCache cache;
  std::vector<std::vector<std::byte>> flows;
  for (int i = 0; i < 3 * static_cast<int>(IcrcHeaderCache::kEntries); ++i)
    flows.push_back(random_datagram(rng, i % 3 ? IpVersion::V4 : IpVersion::V6, 0));
  for (int n = 0; n < 5000; ++n) {
    const std::size_t f = rng() % flows.size();
    const IpVersion v = flows[f][0] == std::byte{0x45} ? IpVersion::V4 : IpVersion::V6;
    auto dg = flows[f];
    dg.resize(dg.size() + rng() % 200);
    const std::size_t ip = ip_header_bytes(v);
    for (const std::size_t at : {ip + 8, ip + 9, ip + 16, ip + 17, ip + 18, ip + 19}) dg[at] = static_cast<std::byte>(rng());
    if (v == IpVersion::V4) dg[2] = dg[3] = dg[4] = dg[5] = static_cast<std::byte>(rng());
    for (std::size_t i = flows[f].size(); i < dg.size(); ++i) dg[i] = static_cast<std::byte>(rng());
    ASSERT_EQ(compute_icrc_linear(cache, CrcBackend::Isal, v, dg), compute_icrc(CrcBackend::Isal, v, dg)) << "packet " << n;
  }
}

TEST(IcrcLinear, OneFlowComputesItsTemplateOnce) {
  std::mt19937 rng(25);
  IcrcHeaderCache cache;
  auto dg = random_datagram(rng, IpVersion::V4, 64);
  for (std::uint32_t psn = 0; psn < 100; ++psn) {
    dg[37] = static_cast<std::byte>(psn >> 16);
    dg[38] = static_cast<std::byte>(psn >> 8);
    dg[39] = static_cast<std::byte>(psn);
    dg[4] = static_cast<std::byte>(psn);  // IPv4 ID
    EXPECT_EQ(compute_icrc_linear(cache, CrcBackend::Isal, IpVersion::V4, dg), compute_icrc(CrcBackend::Isal, IpVersion::V4, dg));
  }
  EXPECT_EQ(cache.misses(), 1u);
}

// A one-QP exchange as an engine sees it: its requests and the peer's ACKs, both ends with the
// same QPN and UDP source port (a port hashed from the QPN pair is the same both ways); only the
// addresses differ. The two flows must not evict each other.
TEST(IcrcLinear, ARequestFlowAndItsAcksKeepTheirTemplates) {
  std::vector<std::byte> request = test::from_hex("450000400000400040110000 0a000b01 0a000b02 c0de12b7002c0000 0a00ffff00000011 8000002a");
  auto ack = request;
  for (int i = 0; i < 4; ++i) std::swap(ack[12 + i], ack[16 + i]);  // the peer answers: addresses swapped
  ack[20 + 8] = std::byte{0x11};                                     // RC ACKNOWLEDGE
  IcrcHeaderCache cache;
  for (std::uint32_t psn = 0; psn < 100; ++psn) {
    for (const std::vector<std::byte>* dg : {&request, &ack}) {
      auto p = *dg;
      p[39] = static_cast<std::byte>(psn);
      EXPECT_EQ(compute_icrc_linear(cache, CrcBackend::Isal, IpVersion::V4, p), compute_icrc(CrcBackend::Isal, IpVersion::V4, p));
    }
  }
  EXPECT_EQ(cache.misses(), 2u);
}

// A responder with 16 QPs taking WRITEs, as perf_suite's scaling case runs it: 16 request flows
// (one peer, one UDP source port, destination QPs 0x11..0x20) and the 16 ACK flows it sends
// (to the peer's QPs 0x4242..0x4251, its own source port). 32 flows in the cache's 64 entries
// keep their templates: a direct-mapped cache recomputed one for about a sixth of the packets.
TEST(IcrcLinear, SixteenQpsAndTheirAcksKeepTheirTemplates) {
  const std::vector<std::byte> request = test::from_hex("450000400000400040110000 0a000b02 0a000b01 c0de12b7002c0000 0a00ffff00000000 8000002a");
  const std::vector<std::byte> ack = test::from_hex("450000300000400040110000 0a000b01 0a000b02 e01112b7001c0000 1100ffff00000000 0000002a");
  IcrcHeaderCache cache;
  for (std::uint32_t psn = 0; psn < 50; ++psn) {
    for (std::uint32_t q = 0; q < 16; ++q) {
      auto r = request;
      r[33 + 2] = static_cast<std::byte>(0x11 + q);
      r[39] = static_cast<std::byte>(psn);
      auto a = ack;
      a[33 + 1] = std::byte{0x42};
      a[33 + 2] = static_cast<std::byte>(0x42 + q);
      a[39] = static_cast<std::byte>(psn);
      ASSERT_EQ(compute_icrc_linear(cache, CrcBackend::Isal, IpVersion::V4, r), compute_icrc(CrcBackend::Isal, IpVersion::V4, r));
      ASSERT_EQ(compute_icrc_linear(cache, CrcBackend::Isal, IpVersion::V4, a), compute_icrc(CrcBackend::Isal, IpVersion::V4, a));
    }
  }
  EXPECT_EQ(cache.misses(), 32u);
}

}  // namespace
}  // namespace roce::proto::icrc_linear_test
