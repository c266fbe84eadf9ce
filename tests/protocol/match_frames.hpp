// The frames the header-image matches (protocol/write_only_match.hpp) are tested with, edited from
// a frame of the template's flow, each given to a matcher's expect_as_parsed(frame, what), which
// holds the match against parse_frame (write_only_match_test.cpp, flow_template_test.cpp).
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "protocol/builder.hpp"
#include "protocol/headers.hpp"
#include "protocol/parser.hpp"
#include "tests/support/frame_edit.hpp"
#include "tests/support/guarded_page.hpp"

namespace roce::test::match_frames {

using Frame = std::vector<std::byte>;
namespace fe = frame_edit;

// The engine's parse options (lib/rdma/engine.cpp): deferred ICRC from 1 KiB, no MTU rules.
inline proto::ParseOptions engine_options(proto::IcrcHeaderCache* cache) {
  proto::ParseOptions o;
  o.defer_icrc_from = 1024;
  o.mtu_rules = false;
  o.icrc_cache = cache;
  return o;
}

// The frame `s` describes with `payload_length` bytes of `fill` (a WRITE's RETH length set to it;
// other opcodes carry no RETH), sealed with ISA-L's ICRC.
inline Frame build(proto::FrameSpec s, std::uint32_t payload_length = 0, std::uint8_t fill = 0x33) {
  s.ext.reth.dma_length.set(payload_length);
  const std::vector<std::byte> payload(payload_length, std::byte{fill});
  Frame f(512);
  const proto::FrameLayout l = proto::build_frame(s, payload, f, proto::CrcBackend::Isal);
  EXPECT_TRUE(l.ok());
  f.resize(l.length);
  return f;
}

// Every bit of the frame's first `upto` bytes flipped alone: as a bad link leaves it (checksum and
// ICRC as they were), and as a sender would send it (both made right again; not a flipped ICRC).
template <typename Matcher>
void every_bit(Matcher& m, const Frame& base, std::size_t upto) {
  for (std::size_t at = 0; at < upto && at < base.size(); ++at) {
    for (int bit = 0; bit < 8; ++bit) {
      Frame f = base;
      f[at] ^= static_cast<std::byte>(1u << bit);
      m.expect_as_parsed(f, "byte " + std::to_string(at) + " bit " + std::to_string(bit) + " as corrupted");
      if (at >= fe::kIpOffset && at < fe::kIpOffset + proto::kIpv4HeaderBytes &&
          (f[fe::kIpOffset] & std::byte{0xF0}) == std::byte{0x40} && (f[fe::kIpOffset] & std::byte{0x0F}) == std::byte{5})
        fe::fix_ipv4_checksum(f);
      if (at >= fe::kIpOffset && at + proto::kIcrcBytes < f.size()) fe::reseal(f);
      m.expect_as_parsed(f, "byte " + std::to_string(at) + " bit " + std::to_string(bit) + " resealed");
    }
  }
}

// A datagram grown or shrunk before the ICRC by tail_from..tail_to, IP and UDP lengths fixed (a
// sender's wrong length); the IP total length or the UDP length alone off by -8..8, checksum and
// ICRC made right; the frame cut short (every length down to nothing; the bytes after the cut
// still in memory, so that only the frame's length can refuse it) and padded after the datagram
// with 1-16 bytes.
template <typename Matcher>
void length_edits(Matcher& m, const Frame& base, long tail_from, long tail_to) {
  for (long delta = tail_from; delta <= tail_to; ++delta) m.expect_as_parsed(fe::with_tail(base, delta), "tail " + std::to_string(delta));
  for (const std::size_t field : {fe::kIpOffset + offsetof(proto::Ipv4Header, total_length), fe::kUdpOffset + offsetof(proto::UdpHeader, length)}) {
    for (int d = -8; d <= 8; ++d) {
      Frame f = base;
      proto::Be16 v = fe::read_header<proto::Be16>(f, field);
      v.set(static_cast<std::uint16_t>(v.get() + d));
      fe::write_header(f, field, v);
      fe::fix_ipv4_checksum(f);
      fe::reseal(f);
      m.expect_as_parsed(f, "field " + std::to_string(field) + " " + std::to_string(d));
    }
  }
  for (std::size_t cut = 1; cut <= base.size(); ++cut)
    m.expect_as_parsed(proto::ByteSpan{base}.first(base.size() - cut), "cut " + std::to_string(cut));
  for (std::size_t pad = 1; pad <= 16; ++pad) {
    Frame f = base;
    f.insert(f.end(), pad, std::byte{0});
    m.expect_as_parsed(f, "Ethernet padding " + std::to_string(pad));
  }
}

// Every prefix of the frame placed against a page nobody may read (a stray read faults).
template <typename Matcher>
void at_page_end(Matcher& m, const GuardedPage& page, const Frame& base) {
  for (std::size_t len = 0; len <= base.size(); ++len) {
    std::byte* at = page.data() + page.size() - len;
    std::memcpy(at, base.data(), len);
    m.expect_as_parsed(proto::ByteSpan{at, len}, "first " + std::to_string(len) + " bytes at the page's end");
  }
}

}  // namespace roce::test::match_frames
