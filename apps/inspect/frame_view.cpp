#include "apps/inspect/frame_view.hpp"

#include <arpa/inet.h>

#include <cstring>

#include "protocol/aeth.hpp"

namespace roce::inspect {
namespace {

constexpr std::int64_t kNanosPerSecond = 1'000'000'000;
constexpr std::uint32_t kGsiQp = 1;

IpView ipv4(const proto::Ipv4Addr& a) {
  IpView v;
  v.version = proto::IpVersion::V4;
  std::memcpy(v.bytes.data(), a.data(), a.size());
  return v;
}

IpView ipv6(const proto::Ipv6Addr& a) {
  IpView v;
  v.version = proto::IpVersion::V6;
  std::memcpy(v.bytes.data(), a.data(), a.size());
  return v;
}

// Opcode names for every opcode byte and SE bit (DC 0x55 depends on SE), made once.
struct OpcodeNames {
  std::array<std::string, 512> names;
  std::array<proto::OpcodeKind, 512> kinds{};
  OpcodeNames() {
    for (unsigned i = 0; i < 512; ++i) {
      const auto d = proto::describe_opcode(static_cast<std::uint8_t>(i & 0xFF), i >= 256);
      names[i] = d.name;
      kinds[i] = d.kind;
    }
  }
  static const OpcodeNames& get() {
    static const OpcodeNames n;
    return n;
  }
  static unsigned slot(const proto::Bth& b) { return b.opcode + (b.se() ? 256u : 0u); }
};

bool bth_read(const capture::DecodedFrame& f) { return capture::bth_decoded(f.error) || f.dc_decoded; }

}  // namespace

// inet_ntop's forms (::ffff:172.17.242.47), as tshark and ip(8) print addresses.
std::string IpView::str() const {
  char buf[INET6_ADDRSTRLEN];
  const int af = version == proto::IpVersion::V4 ? AF_INET : AF_INET6;
  return inet_ntop(af, bytes.data(), buf, sizeof buf) ? buf : "?";
}

const std::string& FrameView::opcode_name() const { return OpcodeNames::get().names[OpcodeNames::slot(bth)]; }

std::string FrameView::transport() const {
  switch (opcode_kind) {
    case proto::OpcodeKind::Dc: return "DC";
    case proto::OpcodeKind::Xrc: return "XRC";
    case proto::OpcodeKind::Reserved: return "reserved";
    case proto::OpcodeKind::Vendor: return "vendor";
    case proto::OpcodeKind::Known: break;
  }
  return proto::to_string(proto::opcode_info(bth.opcode).transport);
}

std::string FrameView::reason() const { return proto::to_string(error); }

bool FrameView::is_nak() const {
  if (!has(proto::ExtHeader::Aeth)) return false;
  const proto::Syndrome s{ext.aeth.syndrome};
  return s.is_nak() || s.is_rnr_nak();
}

bool FrameView::is_request() const {
  if (!has_bth || error != proto::ParseError::None) return false;
  if (dc) return proto::dc_opcode_info(bth.opcode, bth.se()).is_request;
  const proto::OpcodeInfo& info = proto::opcode_info(bth.opcode);
  return info.valid && info.is_request;
}

FrameView make_frame_view(const capture::CaptureRecord& rec, const capture::DecodedFrame& frame) {
  FrameView v;
  v.index = rec.index;
  v.ts_ns = rec.ts_sec * kNanosPerSecond + rec.ts_nsec;
  v.caplen = rec.caplen;
  v.wire_len = rec.wire_len;
  v.verdict = frame.verdict;
  v.error = frame.error;
  if (rec.snap_truncated()) v.set(FrameFlag::Cut);
  const proto::Packet& p = frame.packet;

  if (p.has_l2) {
    v.has_eth = true;
    v.eth_src = p.eth.src;
    v.eth_dst = p.eth.dst;
    if (p.eth.vlan_count) v.vlan_id = static_cast<std::uint16_t>(p.eth.vlan_tci[0] & 0x0FFF);
  }
  if (frame.ip_read || frame.rocev1_decoded) {
    v.has_ip = true;
    v.rocev1 = frame.rocev1_decoded;
    if (p.ip_version == proto::IpVersion::V4) {
      v.ip_src = ipv4(p.ipv4.src);
      v.ip_dst = ipv4(p.ipv4.dst);
      v.ip_tclass = p.ipv4.tos;
      v.ip_ttl = p.ipv4.ttl;
      v.ip_len = p.datagram_end ? static_cast<std::uint32_t>(p.datagram_end - p.l3_offset) : 0;
    } else {
      v.ip_src = ipv6(p.ipv6.src);
      v.ip_dst = ipv6(p.ipv6.dst);
      v.ip_tclass = p.ipv6.traffic_class;
      v.ip_ttl = p.ipv6.hop_limit;
      v.ip_len = p.datagram_end ? static_cast<std::uint32_t>(p.datagram_end - p.l3_offset) : 0;
    }
  }
  if (frame.udp_read && !frame.rocev1_decoded) {
    v.has_udp = true;
    v.udp_sport = p.udp_src_port;
    v.udp_dport = p.udp_dst_port;
    v.udp_len = p.udp_length;
  }
  if (!bth_read(frame)) return v;
  v.has_bth = true;
  v.bth = p.bth;
  v.opcode_kind = OpcodeNames::get().kinds[OpcodeNames::slot(p.bth)];
  if (frame.error != proto::ParseError::None) return v;

  if (frame.dc_decoded) {
    v.dc = true;
    v.dct_eth = frame.dc.dct_eth;
    if (frame.dc.has_connect_eth) v.dc_connect = frame.dc.connect_eth;
    v.headers = frame.dc.info.headers;
  } else if (p.info) {
    v.headers = static_cast<std::uint16_t>(p.info->headers & ~proto::header_bit(proto::ExtHeader::CnpReserved));
  }
  v.ext = p.ext;
  v.payload_len = p.payload_length;
  v.payload_captured = static_cast<std::uint32_t>(p.payload.size());
  v.icrc = p.icrc_status;
  if (!p.snap_truncated) v.icrc_value = p.icrc;
  // A record that claims to be whole but ends before the IP datagram does: the sniffer wrote
  // the cut length as the frame length (tshark: "IPv4 total length exceeds packet length").
  if (p.snap_truncated && !rec.snap_truncated()) v.set(FrameFlag::IpBeyondFrame);
  if (v.has(proto::ExtHeader::Deth) && (v.bth.dest_qp.get() == kGsiQp || v.ext.deth.source_qp() == kGsiQp))
    v.set(FrameFlag::Gsi);
  return v;
}

}  // namespace roce::inspect
