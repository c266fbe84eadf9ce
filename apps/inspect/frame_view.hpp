// What roce-inspect knows about one capture record: the decoder's result flattened into plain
// values (no spans into the reader's buffer, so a batch of views can be made in parallel and
// printed later), plus what the flow analysis adds. Every output (table, fields, JSON, filter,
// summary, plot) reads a FrameView through the field table (fields.hpp), so they agree.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "capture/capture_reader.hpp"
#include "capture/frame_decoder.hpp"
#include "apps/inspect/mad_hook.hpp"
#include "apps/inspect/nvme_hook.hpp"
#include "protocol/opcode_space.hpp"

namespace roce::inspect {

// An IPv4 or IPv6 address (or a RoCEv1 GID) without allocation.
struct IpView {
  proto::IpVersion version = proto::IpVersion::V4;
  std::array<std::uint8_t, 16> bytes{};
  std::string str() const;
  friend bool operator==(const IpView&, const IpView&) = default;
};

enum class FrameFlag : std::uint16_t {
  Cut = 1 << 0,             // the snap length cut the frame (caplen < len)
  IpBeyondFrame = 1 << 1,   // the IP total length runs past the frame as it was on the wire
  Retransmission = 1 << 2,  // a request (or READ response) PSN this flow already carried
  Duplicate = 1 << 3,       // a retransmitted request whose PSN the responder had already acknowledged
  Gsi = 1 << 4,             // a UD datagram to or from QP1 (management datagrams: CM, SA)
};

struct FrameView {
  std::uint32_t file = 0;  // which of the files given
  std::uint64_t index = 0; // 1-based within its file, as tshark numbers frames
  std::int64_t ts_ns = 0;  // capture time, ns since the epoch
  std::int64_t rel_ns = 0; // since the first frame of its file
  std::uint32_t caplen = 0;
  std::uint32_t wire_len = 0;
  capture::Verdict verdict = capture::Verdict::Roce;
  proto::ParseError error = proto::ParseError::None;
  std::uint16_t flags = 0;

  bool has_eth = false;
  proto::MacAddr eth_src{}, eth_dst{};
  std::optional<std::uint16_t> vlan_id;  // outermost tag

  bool has_ip = false;  // IPv4/IPv6, or the GRH of RoCEv1
  bool rocev1 = false;
  IpView ip_src, ip_dst;
  std::uint8_t ip_tclass = 0;  // DSCP << 2 | ECN
  std::uint8_t ip_ttl = 0;
  std::uint32_t ip_len = 0;    // IPv4 total length, IPv6/GRH header + payload length

  bool has_udp = false;
  std::uint16_t udp_sport = 0, udp_dport = 0, udp_len = 0;

  bool has_bth = false;
  proto::Bth bth{};
  proto::OpcodeKind opcode_kind = proto::OpcodeKind::Known;
  std::uint16_t headers = 0;    // proto::ExtHeader bits decoded (not CnpReserved)
  proto::ExtHeaders ext{};
  bool dc = false;              // DC transport: dct_eth (and maybe connect_eth) are set
  std::uint64_t dct_eth = 0;
  std::optional<std::array<std::uint8_t, proto::kDcConnectEthBytes>> dc_connect;

  std::optional<std::uint32_t> payload_len;  // from the headers' lengths
  std::uint32_t payload_captured = 0;        // of it, bytes the capture holds
  std::optional<proto::IcrcStatus> icrc;
  std::optional<std::uint32_t> icrc_value;   // as the CRC value (the wire stores it LSB first)

  std::optional<MadView> mad;  // decoded management datagram (GSI frames; mad_hook.hpp)
  std::optional<NvmeView> nvme;  // an NVMe/RDMA capsule in an RC SEND (nvme_hook.hpp)

  bool has(proto::ExtHeader h) const { return headers & proto::header_bit(h); }
  bool flag(FrameFlag f) const { return flags & static_cast<std::uint16_t>(f); }
  void set(FrameFlag f) { flags = static_cast<std::uint16_t>(flags | static_cast<std::uint16_t>(f)); }
  const std::string& opcode_name() const;
  std::string transport() const;  // RC, UC, UD, CNP, DC, XRC, reserved, vendor
  std::string reason() const;     // "ok" or the parser's reason
  bool is_nak() const;            // an AETH with an RNR NAK or NAK syndrome
  bool is_cnp() const { return has_bth && bth.opcode == 0x81; }
  bool is_request() const;        // requester -> responder (SEND, WRITE, READ request, atomics)
  bool is_ce() const { return has_ip && (ip_tclass & 3) == 3; }
};

// `rec` and `frame` as the reader and decode_frame_all() left them.
FrameView make_frame_view(const capture::CaptureRecord& rec, const capture::DecodedFrame& frame);

}  // namespace roce::inspect
