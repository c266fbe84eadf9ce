// What roce-inspect reports about one capture record, taken from the decoder's result. The
// table and the JSON output both print a FrameView, so they always carry the same fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "apps/capture/capture_reader.hpp"
#include "apps/capture/frame_decoder.hpp"

namespace roce::inspect {

struct BthView {
  std::uint8_t opcode = 0;
  std::string opcode_name;
  std::uint32_t dest_qp = 0;
  std::uint32_t psn = 0;
  proto::Ecn ecn = proto::Ecn::NotEct;  // from the IP header
  bool fecn = false;
  bool becn = false;
  bool ack_req = false;
  std::uint16_t udp_src_port = 0;
};

struct AethView {
  std::uint8_t syndrome = 0;
  std::string meaning;  // "ACK credits=...", "NAK psn-sequence-error", ...
  std::uint32_t msn = 0;
};

struct RethView {
  std::uint64_t va = 0;
  std::uint32_t rkey = 0;
  std::uint32_t dma_length = 0;
};

struct FrameView {
  std::uint64_t index = 0;
  std::uint32_t caplen = 0;
  std::uint32_t wire_len = 0;
  capture::Verdict verdict = capture::Verdict::Roce;
  proto::ParseError error = proto::ParseError::None;
  std::optional<BthView> bth;                 // when the BTH was read, even if the frame was then rejected
  std::optional<AethView> aeth;               // accepted frames whose opcode carries an AETH
  std::optional<RethView> reth;               // accepted frames whose opcode carries a RETH
  std::optional<std::uint32_t> payload_length;  // accepted frames
  std::optional<proto::IcrcStatus> icrc;        // accepted frames

  std::string reason() const { return proto::to_string(error); }
};

FrameView make_frame_view(const capture::CaptureRecord& rec, const capture::DecodedFrame& frame);

}  // namespace roce::inspect
