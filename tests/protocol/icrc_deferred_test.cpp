// Deferred ICRC: which packets the parser defers (by payload size), and that settling it (in
// place or while copying) accepts exactly the packets a full check accepts, on both IP
// versions, with pad.
#include "protocol/icrc_deferred.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <vector>

#include "protocol/builder.hpp"
#include "protocol/parser.hpp"

namespace roce::proto::icrc_deferred_test {
namespace {

std::vector<std::byte> frame_of(Opcode op, std::size_t payload_len, IpVersion v) {
  FrameSpec s;
  s.ip_version = v;
  s.ipv4.src = {10, 0, 0, 1};
  s.ipv4.dst = {10, 0, 0, 2};
  s.bth.opcode = raw(op);
  s.bth.pkey.set(0xFFFF);
  s.bth.dest_qp.set(0x11);
  s.bth.psn.set(5);
  std::vector<std::byte> payload(payload_len);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::byte>(i * 29 + 3);
  std::vector<std::byte> out(payload_len + 200);
  const auto l = build_frame(s, payload, out, CrcBackend::Isal);
  EXPECT_TRUE(l.ok());
  out.resize(l.length);
  return out;
}

ParseOptions deferring() {
  ParseOptions o;
  o.defer_icrc_from = 512;
  return o;
}

struct StatusCase {
  Opcode op;
  std::size_t len;
  IcrcStatus want;
};

// Parses a frame of each case's opcode and payload length and checks the ICRC status it gets.
void expect_statuses(const ParseOptions& o, std::span<const StatusCase> cases) {
  for (const StatusCase& c : cases) {
    const auto f = frame_of(c.op, c.len, IpVersion::V4);
    Packet p;
    ASSERT_EQ(parse_frame(f, o, p), ParseError::None) << raw(c.op);
    EXPECT_EQ(p.icrc_status, c.want) << "opcode " << int{raw(c.op)} << " payload " << c.len;
  }
}

// The parser defers by size alone: which deferred packets are placed while their ICRC is
// settled is the receiver's decision (lib/rdma/payload.hpp), not the parser's.
TEST(IcrcDeferred, EveryPacketFromTheThresholdIsDeferredWhateverItsOpcode) {
  const StatusCase cases[] = {
      {Opcode::RcWriteMiddle, 4096, IcrcStatus::Deferred}, {Opcode::RcWriteLast, 1000, IcrcStatus::Deferred},
      {Opcode::RcSendMiddle, 1024, IcrcStatus::Deferred},  {Opcode::RcSendLast, 513, IcrcStatus::Deferred},
      {Opcode::RcWriteFirst, 4096, IcrcStatus::Deferred},  {Opcode::RcSendOnly, 1024, IcrcStatus::Deferred},
      {Opcode::RcWriteLastImm, 1024, IcrcStatus::Deferred}, {Opcode::UcWriteMiddle, 4096, IcrcStatus::Deferred},
      {Opcode::UdSendOnly, 512, IcrcStatus::Deferred},     {Opcode::RcReadResponseOnly, 600, IcrcStatus::Deferred},
      {Opcode::RcWriteLast, 511, IcrcStatus::Ok},          // under the threshold
      {Opcode::RcReadRequest, 0, IcrcStatus::Ok},          // no payload
  };
  expect_statuses(deferring(), cases);
  const StatusCase never[] = {{Opcode::RcWriteMiddle, 4096, IcrcStatus::Ok}};
  expect_statuses(ParseOptions{}, never);
}

TEST(IcrcDeferred, SettlingAcceptsWhatTheFullCheckAcceptsAndCopiesThePayload) {
  for (const IpVersion v : {IpVersion::V4, IpVersion::V6}) {
    for (const std::size_t len : {512u, 513u, 1022u, 4096u}) {  // 513 and 1022 carry pad bytes
      auto f = frame_of(Opcode::RcWriteLast, len, v);
      for (const std::size_t flip : {std::size_t{0}, std::size_t{30}, f.size() - 5, f.size() - 1}) {
        auto g = f;
        if (flip) g[flip] ^= std::byte{0x10};  // a header byte, a pad or last payload byte, the ICRC
        Packet full, deferred;
        ASSERT_EQ(parse_frame(g, {}, full), ParseError::None);
        ASSERT_EQ(parse_frame(g, deferring(), deferred), ParseError::None);
        ASSERT_EQ(deferred.icrc_status, IcrcStatus::Deferred);
        const bool ok = full.icrc_status == IcrcStatus::Ok;
        EXPECT_EQ(ok, flip == 0);
        EXPECT_EQ(settle_icrc(deferred, CrcBackend::Isal), ok) << "payload " << len << " flip " << flip;
        for (const CrcBackend b : {CrcBackend::Isal, CrcBackend::Zlib, CrcBackend::Portable}) {
          Packet q;
          ParseOptions o = deferring();
          o.crc = b;
          ASSERT_EQ(parse_frame(g, o, q), ParseError::None);
          std::vector<std::byte> dst(len);
          EXPECT_EQ(settle_icrc_copying(q, b, dst.data()), ok) << to_string(b) << " payload " << len << " flip " << flip;
          EXPECT_TRUE(std::equal(dst.begin(), dst.end(), q.payload.begin()));
        }
      }
    }
  }
}

// A held tail is copied only when the ICRC holds; everything before it is copied either way,
// and the verdict is the full check's, wherever the flipped byte lies (before the tail, in it,
// in the pad, in the ICRC).
TEST(IcrcDeferred, AHeldTailIsCopiedOnlyWhenTheIcrcHolds) {
  constexpr std::uint32_t kTail = 64;
  for (const std::size_t len : {513u, 1022u, 4096u}) {
    const auto f = frame_of(Opcode::RcWriteLast, len, IpVersion::V4);
    for (const std::size_t flip : {std::size_t{0}, f.size() - 200, f.size() - 10, f.size() - 5, f.size() - 1}) {
      auto g = f;
      if (flip) g[flip] ^= std::byte{0x10};
      for (const CrcBackend b : {CrcBackend::Isal, CrcBackend::Zlib, CrcBackend::Portable}) {
        Packet q;
        ParseOptions o = deferring();
        o.crc = b;
        ASSERT_EQ(parse_frame(g, o, q), ParseError::None);
        ASSERT_EQ(q.icrc_status, IcrcStatus::Deferred);
        std::vector<std::byte> dst(len, std::byte{0xEE});
        const bool ok = settle_icrc_copying(q, b, dst.data(), {}, kTail);
        EXPECT_EQ(ok, flip == 0) << to_string(b) << " payload " << len << " flip " << flip;
        const auto placed = static_cast<std::ptrdiff_t>(len - kTail);
        EXPECT_TRUE(std::equal(dst.begin(), dst.begin() + placed, q.payload.begin()));
        if (ok)
          EXPECT_TRUE(std::equal(dst.begin() + placed, dst.end(), q.payload.begin() + placed));
        else
          EXPECT_TRUE(std::all_of(dst.begin() + placed, dst.end(), [](std::byte x) { return x == std::byte{0xEE}; }));
      }
    }
  }
}

}  // namespace
}  // namespace roce::proto::icrc_deferred_test
