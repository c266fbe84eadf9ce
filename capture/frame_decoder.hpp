// Decodes one capture record of any supported link type with the protocol/ parser, and sorts
// the result into the four verdicts the tools report.
#pragma once

#include <cstdint>
#include <string>

#include "capture/link_layer.hpp"
#include "protocol/dc_transport.hpp"
#include "protocol/parser.hpp"

namespace roce::capture {

enum class Verdict : std::uint8_t {
  Roce,       // a RoCEv2 packet the parser accepts
  RoceV1,     // EtherType 0x8915 (IB GRH + BTH): RoCEv1, not decoded further
  NotRoce,    // ARP, TCP, UDP to another port, IP fragments: other traffic
  Malformed,  // the frame is (or may be) RoCEv2 but breaks a rule, or is cut inside a header
  Dc,         // Mellanox/NVIDIA DC transport (RD opcode range), decoded by decode_frame_all()
};

std::string to_string(Verdict v);
Verdict verdict_of(proto::ParseError e);

// True when the parser had read the BTH before it stopped with `e`, so packet.bth and
// packet.info describe the frame even though it was rejected.
bool bth_decoded(proto::ParseError e);

struct DecodedFrame {
  proto::ParseError error = proto::ParseError::None;
  Verdict verdict = Verdict::Roce;
  std::size_t ip_offset = 0;  // where the IP header starts in the record (packet offsets count from it when !packet.has_l2)
  proto::Packet packet{};
  // How far the headers were read, whatever the verdict: the IP header (packet.ipv4/ipv6 hold
  // it) and the UDP header (packet.udp_* hold it).
  bool ip_read = false;
  bool udp_read = false;
  // decode_frame_all() only: RoCEv1 frames decoded past the GRH (packet.ipv6 holds the GIDs;
  // verdict stays RoceV1), and DC frames (verdict Dc; packet.info stays null, dc.info names them).
  bool rocev1_decoded = false;
  bool dc_decoded = false;
  proto::DcHeaders dc{};
};

// Strips the link header and parses as the engine does (RoCEv2 only); never reads outside
// `record`.
void decode_frame(LinkType link, proto::ByteSpan record, const proto::ParseOptions& opts, DecodedFrame& out) noexcept;

// The same, then goes on where the engine's parser stops for tools that show captures: the
// BTH and the rest of RoCEv1 frames, and DC opcodes (dc_transport.hpp). A RoCEv1 frame keeps
// verdict RoceV1 with error None when it decodes cleanly (Malformed with the reason when not);
// a DC frame gets verdict Dc.
void decode_frame_all(LinkType link, proto::ByteSpan record, const proto::ParseOptions& opts, DecodedFrame& out) noexcept;

}  // namespace roce::capture
