// A single frame's ICRC through crc32_short.hpp's kernel (compute_icrc_linear, icrc_prefix_linear
// and IcrcFlow::prefix take a datagram of up to kCrc32ShortMax bytes whole) and through the
// fallback (the kernel turned off with crc32_short_use, as on a CPU without AVX-512): every
// length around the kernel's limits, every start within a cache line, both IP versions, against
// the plain ICRC by the portable CRC; datagrams against PROT_NONE pages; real frames built,
// parsed and verified (a changed bit is caught); a request template's frames byte for byte the
// builder's. No frame changes: the values are compute_icrc()'s every way.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "protocol/aeth.hpp"
#include "protocol/builder.hpp"
#include "protocol/crc32_short.hpp"
#include "tests/support/guarded_page.hpp"
#include "protocol/icrc_linear.hpp"
#include "protocol/parser.hpp"
#include "protocol/request_template.hpp"

namespace roce::proto::icrc_single_test {
namespace {

// The kernel on (where the CPU has it) or off for one test, then as it was.
class KernelUse {
 public:
  explicit KernelUse(bool on) : was_(crc32_short_has_clmul()) { crc32_short_use(on); }
  ~KernelUse() { crc32_short_use(was_); }
  KernelUse(const KernelUse&) = delete;
  KernelUse& operator=(const KernelUse&) = delete;

 private:
  bool was_;
};

// The passes a test makes: the kernel, if this CPU has it, and the fallback always.
std::vector<bool> kernel_passes() {
  if (!crc32_short_cpu_has_clmul()) {
    std::printf("[   NOTE   ] this CPU has no AVX-512 VPCLMULQDQ: the kernel's pass is skipped, the fallback's runs\n");
    return {false};
  }
  return {true, false};
}

std::size_t headers_of(IpVersion v) { return ip_header_bytes(v) + 8 + 12; }

void fill_datagram(std::mt19937& rng, IpVersion v, std::byte* at, std::size_t len) {
  for (std::size_t i = 0; i < len; ++i) at[i] = static_cast<std::byte>(rng());
  at[0] = v == IpVersion::V4 ? std::byte{0x45} : static_cast<std::byte>(0x60 | (rng() & 0x0F));
}

TEST(IcrcSingle, TheFallbackIsForcedAndTheKernelComesBackWhereTheCpuHasIt) {
  {
    KernelUse off(false);
    EXPECT_FALSE(crc32_short_has_clmul());
    const KernelUse on(true);
    EXPECT_EQ(crc32_short_has_clmul(), crc32_short_cpu_has_clmul());
  }
  EXPECT_EQ(crc32_short_has_clmul(), crc32_short_cpu_has_clmul());  // the default
}

// Datagrams from the bare headers to past the kernel's 256 bytes, at every start within a line:
// the whole ICRC and every prefix cut, by the flow cache (a miss, then hits) and by one flow.
TEST(IcrcSingle, EveryLengthStartAndVersionGivesThePlainIcrc) {
  std::mt19937 rng(58);
  std::vector<std::byte> buf(kCrc32ShortMax + 64 + 64);
  for (const bool kernel : kernel_passes()) {
    const KernelUse use(kernel);
    for (const auto v : {IpVersion::V4, IpVersion::V6}) {
      for (std::size_t len = headers_of(v); len <= kCrc32ShortMax + 40; ++len) {
        for (std::size_t start = len % 7; start < 64; start += 13) {
          std::byte* at = buf.data() + start;
          fill_datagram(rng, v, at, len);
          const ByteSpan dg{at, len};
          const std::uint32_t want = compute_icrc(CrcBackend::Portable, v, dg);
          IcrcHeaderCache cache;
          IcrcFlow flow;
          flow.set(CrcBackend::Isal, v, at);
          for (int pass = 0; pass < 2; ++pass)
            ASSERT_EQ(compute_icrc_linear(cache, CrcBackend::Isal, v, dg), want)
                << (kernel ? "kernel" : "fallback") << " IPv" << static_cast<int>(v) << " length " << len << " start " << start;
          ASSERT_EQ(flow.prefix(CrcBackend::Isal, dg, len), want) << "flow, length " << len << " start " << start;
          ASSERT_EQ(cache.misses(), 1u);
          const std::size_t upto = headers_of(v) + (len - headers_of(v)) / 2;
          const std::uint32_t cut = icrc_prefix(CrcBackend::Portable, v, dg, upto);
          ASSERT_EQ(icrc_prefix_linear(cache, CrcBackend::Isal, v, dg, upto), cut) << "prefix " << upto << " of " << len;
          ASSERT_EQ(flow.prefix(CrcBackend::Isal, dg, upto), cut) << "flow prefix " << upto << " of " << len;
        }
      }
    }
  }
}

// A datagram that starts a mapping or ends it, PROT_NONE pages on both sides: the kernel's first
// chunk is a masked load that must not touch the bytes before the datagram.
TEST(IcrcSingle, ADatagramAtTheEdgesOfItsMappingIsReadWithinIt) {
  const roce::test::GuardedPage guarded;
  ASSERT_TRUE(guarded.ok());
  const std::size_t page = guarded.size();
  std::byte* mid = guarded.data();
  std::mt19937 rng(59);
  for (const bool kernel : kernel_passes()) {
    const KernelUse use(kernel);
    for (const auto v : {IpVersion::V4, IpVersion::V6}) {
      IcrcHeaderCache cache;
      for (std::size_t len = headers_of(v); len <= kCrc32ShortMax + 20; ++len) {
        for (std::byte* at : {mid, mid + page - len}) {
          fill_datagram(rng, v, at, len);
          const ByteSpan dg{at, len};
          IcrcFlow flow;
          flow.set(CrcBackend::Isal, v, at);
          const std::uint32_t want = compute_icrc(CrcBackend::Portable, v, dg);
          EXPECT_EQ(compute_icrc_linear(cache, CrcBackend::Isal, v, dg), want) << (at == mid ? "at the start" : "at the end") << ", length " << len;
          EXPECT_EQ(flow.prefix(CrcBackend::Isal, dg, len), want) << (at == mid ? "at the start" : "at the end") << ", length " << len;
        }
      }
    }
  }
}

FrameSpec spec_of(IpVersion v, Opcode op, std::uint32_t payload) {
  FrameSpec s;
  s.ip_version = v;
  s.eth.src = {2, 0, 0, 0, 0, 1};
  s.eth.dst = {2, 0, 0, 0, 0, 2};
  s.ipv4.src = {10, 1, 2, 3};
  s.ipv4.dst = {10, 1, 2, 4};
  s.ipv6.src = {0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};
  s.ipv6.dst = {0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02};
  s.ipv6.flow_label = 0xB1234;
  s.udp_src_port = 0xC0DE;
  s.bth.opcode = raw(op);
  s.bth.pkey.set(0xFFFF);
  s.bth.dest_qp.set(0x11);
  s.bth.psn.set(0xFFFFFE);
  if (op == Opcode::RcAck) {
    s.ext.aeth = Aeth{Syndrome::ack().raw, Be24::of(0x42)};
  } else {
    s.bth.set_ack_requested(true);
    s.ext.reth = Reth{Be64::of(0x7f0000001000), Be32::of(0x2d5), Be32::of(payload)};
  }
  return s;
}

// WRITEs of every payload to past the kernel's limit and ACKs, IPv4 and IPv6: built with the
// flow cache (the kernel's seal, or the fallback's) the frame is byte for byte the portable
// CRC's, and parsed with the cache its ICRC is good; any one bit changed in the payload, the PSN
// or the AETH makes it bad.
TEST(IcrcSingle, RealFramesSealAndVerifyAsThePlainIcrcAndAChangedBitIsCaught) {
  std::vector<std::byte> payload(300);
  std::mt19937 rng(60);
  for (auto& b : payload) b = static_cast<std::byte>(rng());
  for (const bool kernel : kernel_passes()) {
    const KernelUse use(kernel);
    for (const auto v : {IpVersion::V4, IpVersion::V6}) {
      IcrcHeaderCache cache;
      ParseOptions po;
      po.mtu_rules = false;
      po.icrc_cache = &cache;
      for (std::size_t n = 0; n <= payload.size() + 1; ++n) {
        const bool ack = n == payload.size() + 1;
        const std::uint32_t len = ack ? 0 : static_cast<std::uint32_t>(n);
        const FrameSpec s = spec_of(v, ack ? Opcode::RcAck : Opcode::RcWriteOnly, len);
        std::vector<std::byte> want(512), got(512);
        const FrameLayout lw = build_frame(s, ByteSpan{payload.data(), len}, want, CrcBackend::Portable);
        ASSERT_TRUE(lw.ok());
        const FrameLayout l = write_headers(s, len, got);
        place_and_seal(s, l, got, CrcBackend::Isal, payload.data(), &cache);
        ASSERT_EQ(got, want) << (kernel ? "kernel" : "fallback") << " IPv" << static_cast<int>(v) << (ack ? " ACK" : " WRITE ") << len;
        const ByteSpan frame{want.data(), lw.length};
        Packet p;
        ASSERT_EQ(parse_frame(frame, po, p), ParseError::None);
        ASSERT_EQ(p.icrc_status, IcrcStatus::Ok) << "IPv" << static_cast<int>(v) << " payload " << len;
        // The PSN's last byte, the AETH or RETH's first byte, the payload's first and last.
        const std::size_t bth_end = lw.payload_offset - (ack ? 4 : 16);
        std::vector<std::size_t> at = {bth_end - 1, bth_end};
        if (len > 0) at.insert(at.end(), {lw.payload_offset, lw.payload_offset + len - 1});
        for (const std::size_t i : at) {
          for (int bit = 0; bit < 8; ++bit) {
            std::vector<std::byte> bad(frame.begin(), frame.end());
            bad[i] ^= static_cast<std::byte>(1u << bit);
            ASSERT_EQ(parse_frame(bad, po, p), ParseError::None);
            EXPECT_EQ(p.icrc_status, IcrcStatus::Bad) << "IPv" << static_cast<int>(v) << " payload " << len << " byte " << i << " bit " << bit;
          }
        }
      }
    }
  }
}

// A request template's single frames (a lone WRITE at depth 1 when runs are not sealed
// together), IPv4 and IPv6, every payload to past the kernel's limit: the builder's bytes.
TEST(IcrcSingle, ARequestTemplatesFrameSealedAloneIsTheBuildersFrame) {
  std::vector<std::byte> payload(300);
  std::mt19937 rng(61);
  for (auto& b : payload) b = static_cast<std::byte>(rng());
  for (const bool kernel : kernel_passes()) {
    const KernelUse use(kernel);
    for (const auto v : {IpVersion::V4, IpVersion::V6}) {
      FrameSpec path = spec_of(v, Opcode::RcWriteOnly, 0);
      path.bth.opcode = 0;
      path.bth.psn.set(0);
      path.bth.set_ack_requested(false);
      path.ext = ExtHeaders{};
      RequestTemplate t;
      ASSERT_TRUE(t.build(path, CrcBackend::Isal, true));
      for (std::uint32_t len = 0; len <= payload.size(); ++len) {
        const FrameSpec s = spec_of(v, Opcode::RcWriteOnly, len);
        std::vector<std::byte> want(512), got(512);
        ASSERT_TRUE(build_frame(s, ByteSpan{payload.data(), len}, want, CrcBackend::Portable).ok());
        const FrameLayout l = t.write_headers(RequestFields{raw(Opcode::RcWriteOnly), 0xFFFFFE, false, true, len}, s.ext, got);
        ASSERT_TRUE(l.ok());
        t.place_and_seal(l, got, CrcBackend::Isal, payload.data());
        ASSERT_EQ(got, want) << (kernel ? "kernel" : "fallback") << " IPv" << static_cast<int>(v) << " payload " << len;
      }
    }
  }
}

}  // namespace
}  // namespace roce::proto::icrc_single_test
