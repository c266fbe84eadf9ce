#include "protocol/ack_template.hpp"

#include <bit>
#include <cstring>

#include "protocol/crc32.hpp"
#include "protocol/icrc.hpp"

namespace roce::proto {

namespace {

// The last 8 bytes before an ACK's ICRC: BTH AckReq|Resv7, PSN, AETH syndrome, MSN.
constexpr std::size_t kTailBytes = 8;
static_assert(offsetof(Bth, psn) + sizeof(Be24) == sizeof(Bth) && offsetof(Bth, ack_req) + kTailBytes == sizeof(Bth) + sizeof(Aeth));

}  // namespace

bool AckTemplate::build(const FrameSpec& path, CrcBackend crc) noexcept {
  clear();
  FrameSpec spec = path;
  spec.bth.opcode = raw(Opcode::RcAck);
  spec.bth.psn.set(0);
  spec.ext.aeth = Aeth{0, Be24::of(0)};
  const FrameLayout l = write_headers(spec, 0, MutableByteSpan{frame_.data(), frame_.size()});
  if (!l.ok() || l.pad != 0 || l.length > kCapacity) return false;
  seal(spec, l, MutableByteSpan{frame_.data(), frame_.size()}, crc);
  icrc_ = read_icrc(ByteSpan{frame_.data() + l.length - kIcrcBytes, kIcrcBytes});
  tail_at_ = static_cast<std::uint8_t>(l.payload_offset - kTailBytes);
  length_ = static_cast<std::uint8_t>(l.length);
  return true;
}

std::size_t AckTemplate::write(std::uint32_t psn, Syndrome syndrome, std::uint32_t msn, MutableByteSpan out) const noexcept {
  const std::size_t n = length_;
  if (n == 0 || out.size() < n) return 0;
  // A copy of constant length is a few vector moves; a frame buffer is almost always larger.
  if (out.size() >= kCapacity) std::memcpy(out.data(), frame_.data(), kCapacity);
  else std::memcpy(out.data(), frame_.data(), n);
  // The varying bytes as one big-endian word, AckReq|Resv7 zero: their CRC from a zero register
  // is what they add to the template's ICRC (stored least significant byte first, as write_icrc).
  const std::uint64_t tail = std::uint64_t{psn & 0xFFFFFFu} << 32 | std::uint64_t{syndrome.raw} << 24 | (msn & 0xFFFFFFu);
  std::byte* at = out.data() + tail_at_;
  // The template's AckReq|Resv7 byte is the path's (zero on every QP today): kept as it is.
  const Be64 stored = Be64::of(tail | std::uint64_t{static_cast<std::uint8_t>(frame_[tail_at_])} << 56);
  std::memcpy(at, &stored, sizeof stored);
  // The ICRC goes least significant byte first (Le32's order), stored whole (as Le32::set now
  // does too, section 70; before it, its byte loop cost 24 instructions an ACK here).
  std::uint32_t icrc = icrc_ ^ crc32_register8(tail);
  if constexpr (std::endian::native != std::endian::little) icrc = __builtin_bswap32(icrc);
  std::memcpy(at + kTailBytes, &icrc, sizeof icrc);
  return n;
}

}  // namespace roce::proto
