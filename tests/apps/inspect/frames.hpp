// Frames for roce-inspect's unit tests: RC requests and responses between two hosts, built by
// protocol/builder, and the FrameView that roce-inspect makes of a frame.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "capture/frame_decoder.hpp"
#include "apps/inspect/frame_view.hpp"
#include "protocol/aeth.hpp"
#include "protocol/builder.hpp"

namespace roce::inspect::test {

struct Host {
  proto::Ipv4Addr ip;
  std::uint32_t qpn;
};
inline constexpr Host kA{{10, 0, 0, 1}, 0x000011};
inline constexpr Host kB{{10, 0, 0, 2}, 0x000022};

inline proto::FrameSpec spec(const Host& from, const Host& to, proto::Opcode op, std::uint32_t psn) {
  proto::FrameSpec s;
  s.ipv4.src = from.ip;
  s.ipv4.dst = to.ip;
  s.ipv4.tos = 0x02;
  s.bth.opcode = proto::raw(op);
  s.bth.pkey.set(proto::Bth::kDefaultPkey);
  s.bth.dest_qp.set(to.qpn);
  s.bth.psn.set(psn);
  return s;
}

inline std::vector<std::byte> build(const proto::FrameSpec& s, std::uint32_t payload = 0) {
  std::vector<std::byte> data(payload, std::byte{0x33});
  std::vector<std::byte> out(proto::layout_frame(s, payload).length);
  EXPECT_TRUE(proto::build_frame(s, data, out, proto::CrcBackend::Isal).ok());
  return out;
}

// A SEND_ONLY of `payload` bytes from A to B.
inline std::vector<std::byte> send(std::uint32_t psn, bool ack_req = true, std::uint32_t payload = 64, bool ce = false) {
  auto s = spec(kA, kB, proto::Opcode::RcSendOnly, psn);
  s.bth.set_ack_requested(ack_req);
  if (ce) s.set_ecn(proto::Ecn::Ce);
  return build(s, payload);
}

// B's answer to A's QP: an ACK, or a NAK / RNR NAK with that syndrome.
inline std::vector<std::byte> ack(std::uint32_t psn, proto::Syndrome syn = proto::Syndrome::ack(), std::uint32_t msn = 1) {
  auto s = spec(kB, kA, proto::Opcode::RcAck, psn);
  s.ext.aeth.syndrome = syn.raw;
  s.ext.aeth.msn.set(msn);
  return build(s);
}

inline std::vector<std::byte> cnp_to_a() {
  auto s = spec(kB, kA, proto::Opcode::Cnp, 0);
  s.bth.set_becn(true);
  return build(s);
}

inline FrameView view_of(const std::vector<std::byte>& frame, std::uint64_t index = 1, std::int64_t ts_ns = 0,
                         std::uint32_t wire_len = 0) {
  capture::CaptureRecord rec;
  rec.index = index;
  rec.ts_sec = ts_ns / 1'000'000'000;
  rec.ts_nsec = static_cast<std::uint32_t>(ts_ns % 1'000'000'000);
  rec.data = frame;
  rec.caplen = static_cast<std::uint32_t>(frame.size());
  rec.wire_len = wire_len ? wire_len : rec.caplen;
  proto::ParseOptions opts;
  opts.allow_snap_truncation = true;
  capture::DecodedFrame d;
  capture::decode_frame_all(capture::LinkType::Ethernet, frame, opts, d);
  return make_frame_view(rec, d);
}

}  // namespace roce::inspect::test
