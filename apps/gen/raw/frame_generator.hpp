// Writes the frames of a RawStreamSpec one after the other into caller buffers: the opcode of
// the turn with its extension headers, the PSN of the pattern, the payload, the ECN codepoint,
// and a wrong ICRC where asked. Everything is prepared at creation; next() does no allocation,
// so it can fill mbufs on a DPDK lcore as well as pcap records.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "apps/gen/raw/raw_stream.hpp"
#include "lib/status.hpp"
#include "protocol/builder.hpp"

namespace roce::gen {

struct CraftedFrame {
  std::size_t length = 0;  // 0: the buffer was too small (nothing written, the stream did not advance)
  std::uint8_t opcode = 0;
  std::uint32_t psn = 0;
  bool ce = false;
  bool bad_icrc = false;
};

class RawFrameGenerator {
 public:
  static Result<RawFrameGenerator> create(const RawStreamSpec& spec, proto::CrcBackend crc = proto::CrcBackend::Isal);

  // The next frame of the stream.
  CraftedFrame next(proto::MutableByteSpan out) noexcept;
  // Length of the frame next() will write.
  std::size_t next_length() const noexcept;
  std::size_t max_frame_bytes() const { return max_frame_; }
  std::uint64_t frames() const { return index_; }  // frames written so far
  const RawStreamSpec& spec() const { return spec_; }

 private:
  RawFrameGenerator(const RawStreamSpec& spec, proto::CrcBackend crc);
  std::uint32_t next_psn() noexcept;

  RawStreamSpec spec_;
  proto::CrcBackend crc_;
  std::vector<proto::FrameSpec> templates_;  // one per opcode of the cycle
  std::vector<std::uint32_t> lengths_;       // payload length per opcode of the cycle
  std::vector<std::byte> payload_;           // the largest payload, filled once
  std::size_t max_frame_ = 0;
  std::uint64_t index_ = 0;
  std::uint32_t next_psn_ = 0;
  std::uint32_t last_psn_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace roce::gen
