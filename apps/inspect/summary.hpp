// --summary: frame counts per verdict, per reason, per RoCEv2 opcode and per ICRC status.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "apps/inspect/frame_view.hpp"

namespace roce::inspect {

class Summary {
 public:
  void add(const FrameView& v);

  std::uint64_t frames() const { return frames_; }
  std::uint64_t verdict_count(capture::Verdict v) const { return verdicts_[static_cast<std::size_t>(v)]; }
  std::uint64_t reason_count(proto::ParseError e) const { return reasons_[static_cast<std::size_t>(e)]; }
  std::uint64_t opcode_count(std::uint8_t op) const { return opcodes_[op]; }
  std::uint64_t icrc_count(proto::IcrcStatus s) const { return icrc_[static_cast<std::size_t>(s)]; }

  // `complete` is false when reading stopped at an error; the counts cover the frames before it.
  std::string human(bool complete) const;
  std::string json(bool complete) const;

 private:
  static constexpr std::size_t kVerdicts = 4;
  static constexpr std::size_t kIcrcStatuses = 4;
  std::uint64_t frames_ = 0;
  std::array<std::uint64_t, kVerdicts> verdicts_{};
  std::array<std::uint64_t, static_cast<std::size_t>(proto::ParseError::Count)> reasons_{};
  std::array<std::uint64_t, 256> opcodes_{};  // accepted RoCEv2 frames only
  std::array<std::uint64_t, kIcrcStatuses> icrc_{};
};

}  // namespace roce::inspect
