// --summary: frame counts per verdict, per reason, per opcode and per ICRC status, then the
// analysis per QP (traffic to each destination QP) and per connection (a requester's QP and
// the responder's QP, like `tshark -z conv`), as text or as one JSON object.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "apps/inspect/analysis.hpp"
#include "apps/inspect/frame_view.hpp"

namespace roce::inspect {

struct SummaryOptions {
  std::int64_t interval_ns = 0;  // goodput series step; 0: about a tenth of the capture
};

class Summary {
 public:
  void add(const FrameView& v);

  std::uint64_t frames() const { return frames_; }
  std::uint64_t verdict_count(capture::Verdict v) const { return verdicts_[static_cast<std::size_t>(v)]; }
  std::uint64_t reason_count(proto::ParseError e) const { return reasons_[static_cast<std::size_t>(e)]; }
  std::uint64_t opcode_count(std::uint8_t op) const { return opcodes_[op]; }
  std::uint64_t icrc_count(proto::IcrcStatus s) const { return icrc_[static_cast<std::size_t>(s)]; }

  // `complete` is false when reading stopped at an error; the counts cover the frames before it.
  std::string human(bool complete, const Analysis& a, const SummaryOptions& o) const;
  std::string json(bool complete, const Analysis& a, const SummaryOptions& o) const;

 private:
  static constexpr std::size_t kVerdicts = 5;
  static constexpr std::size_t kIcrcStatuses = 5;
  std::uint64_t frames_ = 0;
  std::array<std::uint64_t, kVerdicts> verdicts_{};
  std::array<std::uint64_t, static_cast<std::size_t>(proto::ParseError::Count)> reasons_{};
  std::array<std::uint64_t, 256> opcodes_{};  // frames with a BTH that decoded cleanly
  std::array<std::uint64_t, kIcrcStatuses> icrc_{};
};

}  // namespace roce::inspect
