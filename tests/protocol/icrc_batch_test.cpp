// Several frames' ICRCs computed together (icrc_batch.hpp) against the one-at-a-time ICRC:
// random datagrams of every short length, IPv4 and IPv6, every backend, every batch size, and
// a run of request frames sealed together byte for byte as place_and_seal() seals each one.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "protocol/icrc_batch.hpp"
#include "protocol/request_template.hpp"

namespace roce::proto::icrc_batch_test {
namespace {

constexpr CrcBackend kBackends[] = {CrcBackend::Portable, CrcBackend::Zlib, CrcBackend::Isal};
constexpr std::size_t kMaxRest = 300;  // bytes after the BTH: 0 up to past ISA-L's 256-byte path

std::vector<std::byte> random_datagram(std::mt19937& rng, IpVersion v, std::size_t rest) {
  std::vector<std::byte> dg(ip_header_bytes(v) + 8 + 12 + rest);
  for (auto& b : dg) b = static_cast<std::byte>(rng());
  dg[0] = v == IpVersion::V4 ? std::byte{0x45} : static_cast<std::byte>(0x60 | (rng() & 0x0F));
  return dg;
}

TEST(IcrcBatch, EveryCountAndLengthGivesTheOneAtATimeIcrc) {
  std::mt19937 rng(45);
  for (const auto v : {IpVersion::V4, IpVersion::V6}) {
    for (const auto backend : kBackends) {
      for (std::size_t count = 1; count <= IcrcSealBatch::kCapacity; ++count) {
        std::vector<std::vector<std::byte>> dgs;
        std::vector<ByteSpan> spans;
        for (std::size_t i = 0; i < count; ++i) dgs.push_back(random_datagram(rng, v, rng() % (kMaxRest + 1)));
        for (const auto& d : dgs) spans.emplace_back(d);
        std::vector<std::uint32_t> got(count + 1, 0xA5A5A5A5u);
        compute_icrc_batch(backend, v, spans.data(), count, got.data());
        for (std::size_t i = 0; i < count; ++i)
          EXPECT_EQ(got[i], compute_icrc(CrcBackend::Portable, v, spans[i]))
              << "IPv" << static_cast<int>(v) << ' ' << to_string(backend) << " count " << count << " frame " << i
              << " length " << spans[i].size();
        EXPECT_EQ(got[count], 0xA5A5A5A5u) << "written past the batch";
      }
    }
  }
}

TEST(IcrcBatch, EveryLengthUpToTheLimitGivesTheOneAtATimeIcrc) {
  std::mt19937 rng(46);
  for (const auto v : {IpVersion::V4, IpVersion::V6}) {
    std::vector<std::vector<std::byte>> dgs;
    std::vector<ByteSpan> spans;
    for (std::size_t rest = 0; rest <= kMaxRest; ++rest) dgs.push_back(random_datagram(rng, v, rest));
    for (const auto& d : dgs) spans.emplace_back(d);
    std::vector<std::uint32_t> got(spans.size());
    compute_icrc_batch(CrcBackend::Isal, v, spans.data(), spans.size(), got.data());
    for (std::size_t i = 0; i < spans.size(); ++i) EXPECT_EQ(got[i], compute_icrc(CrcBackend::Portable, v, spans[i])) << i;
  }
}

FrameSpec path(IpVersion v) {
  FrameSpec s;
  s.ip_version = v;
  s.eth.src = {2, 0, 0, 0, 0, 1};
  s.eth.dst = {2, 0, 0, 0, 0, 2};
  s.ipv4.src = {10, 1, 2, 3};
  s.ipv4.dst = {10, 1, 2, 4};
  s.ipv4.ttl = 61;
  s.ipv6.src = {0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};
  s.ipv6.dst = {0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02};
  s.ipv6.flow_label = 0xB1234;
  s.set_ecn(Ecn::Ect0);
  s.udp_src_port = 0xC0DE;
  s.bth.pkey.set(0xFFFF);
  s.bth.dest_qp.set(0xABCDEF);
  return s;
}

// A run of request frames (WRITE_ONLY and SEND_ONLY with every pad, payloads 0..kMaxPayload, PSNs
// across the wrap), each written into a buffer filled with a marker: sealed together, the frames
// must be byte for byte those the template's place_and_seal() makes one at a time, the bytes
// after each frame untouched. The batch is used again after each seal, every size once.
TEST(IcrcSealBatch, ARunSealedTogetherIsByteForByteTheFramesSealedOneByOne) {
  constexpr std::size_t kMaxPayload = 300, kBuffer = 512;  // past crc32_short's 256 bytes
  std::mt19937 rng(47);
  std::vector<std::byte> payload(kMaxPayload);
  for (auto& b : payload) b = static_cast<std::byte>(rng());
  for (const auto v : {IpVersion::V4, IpVersion::V6}) {
    for (const bool linear : {true, false}) {
      for (const bool clmul : {true, false}) {
        RequestTemplate t;
        ASSERT_TRUE(t.build(path(v), CrcBackend::Isal, linear));
        IcrcSealBatch batch;
        std::uint32_t psn = 0xFFFFF0;
        for (std::size_t count = 1; count <= IcrcSealBatch::kCapacity; ++count) {
          std::vector<std::vector<std::byte>> together(count, std::vector<std::byte>(kBuffer, std::byte{0x5A}));
          std::vector<std::vector<std::byte>> alone = together;
          for (std::size_t i = 0; i < count; ++i) {
            const bool write = rng() & 1;
            const RequestFields f{raw(write ? Opcode::RcWriteOnly : Opcode::RcSendOnly), psn, (rng() & 1) != 0,
                                  (rng() & 1) != 0, static_cast<std::uint32_t>(rng() % (kMaxPayload + 1))};
            psn = (psn + 1) & 0xFFFFFF;
            ExtHeaders ext{};
            ext.reth.va.set(rng());
            ext.reth.rkey.set(static_cast<std::uint32_t>(rng()));
            ext.reth.dma_length.set(f.payload_length);
            const FrameLayout la = t.write_headers(f, ext, alone[i]);
            ASSERT_TRUE(la.ok());
            t.place_and_seal(la, alone[i], CrcBackend::Isal, payload.data());
            const FrameLayout lt = t.write_headers(f, ext, together[i]);
            batch.add(place_unsealed(lt, together[i], payload.data()));
          }
          EXPECT_EQ(batch.size(), count);
          batch.seal(t.icrc_flow(), CrcBackend::Isal, clmul);
          EXPECT_EQ(batch.size(), 0u);
          for (std::size_t i = 0; i < count; ++i)
            EXPECT_EQ(together[i], alone[i]) << "IPv" << static_cast<int>(v) << (linear ? " linear" : " plain")
                                             << (clmul ? " clmul" : " isal") << " run of " << count << ", frame " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace roce::proto::icrc_batch_test
