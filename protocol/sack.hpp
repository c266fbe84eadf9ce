// RC_SACK: the selective acknowledgement two rocev2-dp endpoints exchange once both agreed to
// selective repeat at connection set-up (docs/loss.md, part 2). It sits in the BTH opcode range
// IBA leaves to manufacturers (0xE0-0xFF, bits 7..5 = 111), so a peer that did not agree never
// receives one and no standard opcode changes meaning.
//
// Wire form: BTH (opcode 0xE0, PSN = the cumulative acknowledgement, ePSN - 1), AETH (an ACK
// syndrome and the MSN, as an RC ACK), then kSackWords big-endian 64-bit words: bit i of word w
// (i = 0 the least significant) set when PSN ePSN + 1 + 64 w + i has arrived (ePSN itself is
// missing by definition), then the ICRC. Every field is what an ACK carries, so the ICRC, the
// IP and UDP lengths are built and checked as for any RoCEv2 packet.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

#include "protocol/builder.hpp"
#include "protocol/packet.hpp"
#include "protocol/parser.hpp"

namespace roce::proto {

inline constexpr std::uint8_t kSackOpcode = 0xE0;
inline constexpr std::size_t kSackWords = 2;
// PSNs after ePSN a SACK can describe: the largest reorder window selective repeat may use.
inline constexpr std::uint32_t kSackSpan = 64 * kSackWords;

struct SackBitmap {
  std::array<std::uint64_t, kSackWords> words{};
  // PSN ePSN + 1 + i arrived.
  bool has(std::uint32_t i) const { return i < kSackSpan && (words[i / 64] >> (i % 64)) & 1u; }
  void set(std::uint32_t i) {
    if (i < kSackSpan) words[i / 64] |= std::uint64_t{1} << (i % 64);
  }
  bool empty() const {
    for (std::uint64_t w : words)
      if (w) return false;
    return true;
  }
  // How many i >= `from` are set.
  std::uint32_t count_from(std::uint32_t from) const {
    std::uint32_t n = 0;
    for (std::size_t w = 0; w < kSackWords; ++w) {
      const std::uint32_t lo = static_cast<std::uint32_t>(64 * w);
      if (from >= lo + 64) continue;
      const std::uint64_t keep = from <= lo ? ~std::uint64_t{0} : ~std::uint64_t{0} << (from - lo);
      n += static_cast<std::uint32_t>(std::popcount(words[w] & keep));
    }
    return n;
  }
  // The highest i set; -1 when none is.
  int highest() const {
    for (std::size_t w = kSackWords; w-- > 0;)
      if (words[w]) return static_cast<int>(64 * w + 63 - static_cast<std::size_t>(std::countl_zero(words[w])));
    return -1;
  }
};

inline constexpr std::uint32_t kSackExtBytes = 8 * kSackWords;

// Writes a SACK frame from `spec` (addressing, BTH dest QP and PSN, AETH in spec.ext.aeth);
// the opcode is set here. Returns the layout (length 0 / error on a buffer too small).
FrameLayout build_sack(FrameSpec spec, const SackBitmap& sacked, MutableByteSpan out, CrcBackend crc) noexcept;

// Completes a packet parse_frame() stopped at with ParseError::UnknownOpcode when its opcode is
// kSackOpcode: checks the lengths and the ICRC, fills pkt as the RC ACK it extends (info,
// ext.aeth; bth.opcode stays 0xE0) with the bitmap as its payload. Returns the parse error.
ParseError parse_sack(ByteSpan frame, const ParseOptions& opts, Packet& pkt) noexcept;

// The bitmap of a packet parse_sack() accepted.
SackBitmap sack_bitmap(const Packet& pkt) noexcept;

bool is_sack(const Packet& pkt) noexcept;

}  // namespace roce::proto
