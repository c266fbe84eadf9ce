#include "apps/gen/raw/frame_generator.hpp"

#include <algorithm>

#include "protocol/be.hpp"

namespace roce::gen {

using namespace roce::proto;

namespace {
// Flipping every bit of a correct ICRC gives a wrong one that can never be right by chance.
constexpr std::uint32_t kIcrcFlip = 0xFFFFFFFF;
constexpr std::uint32_t kPsnMask = kPsnModulus - 1;
}  // namespace

Result<RawFrameGenerator> RawFrameGenerator::create(const RawStreamSpec& spec, CrcBackend crc) {
  if (auto e = check(spec)) return make_error(EINVAL, *e);
  return RawFrameGenerator(spec, crc);
}

RawFrameGenerator::RawFrameGenerator(const RawStreamSpec& spec, CrcBackend crc)
    : spec_(spec), crc_(crc), rng_(spec.seed) {
  for (std::uint8_t op : spec_.opcodes) {
    FrameSpec f;
    f.eth = spec_.eth;
    f.ip_version = spec_.ip_version;
    f.ipv4 = spec_.ipv4;
    f.ipv6 = spec_.ipv6;
    f.ipv4.tos = static_cast<std::uint8_t>(spec_.dscp << 2);
    f.ipv6.traffic_class = static_cast<std::uint8_t>(spec_.dscp << 2);
    f.set_ecn(spec_.ecn);
    f.udp_src_port = spec_.udp_src_port;
    f.pmtu = spec_.pmtu;
    f.bth.opcode = op;
    f.bth.pkey.set(spec_.pkey);
    f.bth.dest_qp.set(spec_.dest_qp);
    f.bth.set_se(spec_.solicited);
    f.bth.set_mig_req(spec_.mig_req);
    f.bth.set_ack_requested(spec_.ack_req);
    f.bth.set_fecn(spec_.fecn);
    f.bth.set_becn(spec_.becn);
    f.ext = spec_.ext;
    const std::uint32_t len = payload_length(spec_, op);
    if (f.ext.reth.dma_length.get() == 0) {
      const bool read = opcode_info(op).operation == Operation::ReadRequest;
      f.ext.reth.dma_length.set(read ? spec_.payload_bytes : len);
    }
    templates_.push_back(f);
    lengths_.push_back(len);
    max_frame_ = std::max(max_frame_, layout_frame(f, len).length);
  }
  payload_.resize(*std::max_element(lengths_.begin(), lengths_.end()));
  std::mt19937_64 fill(spec_.seed ^ 0x5041594C4F4144ull);
  for (std::size_t i = 0; i < payload_.size(); ++i) {
    switch (spec_.pattern) {
      case PayloadPattern::Zero: payload_[i] = std::byte{0}; break;
      case PayloadPattern::Increment: payload_[i] = static_cast<std::byte>(i); break;
      case PayloadPattern::Random: payload_[i] = static_cast<std::byte>(fill()); break;
      case PayloadPattern::Byte: payload_[i] = std::byte{spec_.pattern_byte}; break;
    }
  }
  const bool wraps = spec_.psn_mode == PsnMode::Wrap;
  next_psn_ = spec_.psn_start.value_or(wraps ? kPsnModulus - kWrapLead : 0);
  last_psn_ = next_psn_;
}

std::uint32_t RawFrameGenerator::next_psn() noexcept {
  std::uint32_t psn = 0;
  switch (spec_.psn_mode) {
    case PsnMode::Fixed: psn = next_psn_; break;
    case PsnMode::Random: psn = static_cast<std::uint32_t>(rng_()) & kPsnMask; break;
    case PsnMode::Increment:
    case PsnMode::Wrap:
      if (index_ > 0 && spec_.psn_dup_every.due(index_)) {
        psn = last_psn_;
        break;
      }
      if (index_ > 0 && spec_.psn_gap_every.due(index_)) next_psn_ = (next_psn_ + spec_.psn_gap) & kPsnMask;
      psn = next_psn_;
      next_psn_ = (next_psn_ + 1) & kPsnMask;
      break;
  }
  last_psn_ = psn;
  return psn;
}

std::size_t RawFrameGenerator::next_length() const noexcept {
  const std::size_t turn = index_ % templates_.size();
  return layout_frame(templates_[turn], lengths_[turn]).length;
}

CraftedFrame RawFrameGenerator::next(MutableByteSpan out) noexcept {
  const std::size_t turn = index_ % templates_.size();
  FrameSpec& f = templates_[turn];
  const std::uint32_t len = lengths_[turn];
  if (out.size() < layout_frame(f, len).length) return {};
  CraftedFrame c;
  c.opcode = f.bth.opcode;
  c.ce = spec_.ce_every.due(index_);
  c.bad_icrc = spec_.bad_icrc_every.due(index_);
  c.psn = next_psn();
  f.bth.psn.set(c.psn);
  f.set_ecn(c.ce ? Ecn::Ce : spec_.ecn);
  const FrameLayout l = build_frame(f, {payload_.data(), len}, out, crc_);
  if (c.bad_icrc) {
    Le32 icrc;
    std::memcpy(&icrc, out.data() + l.length - kIcrcBytes, kIcrcBytes);
    icrc.set(icrc.get() ^ kIcrcFlip);
    std::memcpy(out.data() + l.length - kIcrcBytes, &icrc, kIcrcBytes);
  }
  c.length = l.length;
  ++index_;
  return c;
}

}  // namespace roce::gen
