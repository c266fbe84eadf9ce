// interop_capture_check: reads the capture of one interop case and checks, with the project's
// own parser, every RoCEv2 frame our engine sent (and every frame the rxe peer sent): it must
// decode cleanly at the case's path MTU with a correct ICRC, carry TTL (hop limit) 64, DF (IPv4),
// UDP checksum 0,
// and keep one UDP source port per QP. It also prints what differs between the two sides:
// opcodes, ACK coalescing, NAKs, retransmitted PSNs, the UDP source port scheme, ECN.
//
//   interop_capture_check FILE.pcap --ours IP --peer IP [--pmtu N] [--one-way ours|peer]
// IP: both IPv4 or both IPv6 (then the RoCEv2 frames are the IPv6 ones, ICMPv6 counts as other).
// --one-way: only that side sends RoCEv2 (UC and UD bandwidth tests: nothing is acknowledged).
// Exit: 0 all of our frames (and the peer's) passed, 1 some did not, 2 usage or read error.
#include <arpa/inet.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "capture/capture_reader.hpp"
#include "capture/frame_decoder.hpp"
#include "protocol/aeth.hpp"
#include "protocol/udp_sport.hpp"

using namespace roce;

namespace {

struct Address {
  proto::IpVersion version = proto::IpVersion::V4;
  proto::Ipv4Addr v4{};
  proto::Ipv6Addr v6{};
};

struct Side {
  explicit Side(const char* n) : name(n) {}
  const char* name;
  Address ip{};
  std::uint64_t frames = 0, arp = 0, other = 0, bad = 0;
  std::uint64_t requests = 0, acks = 0, naks = 0, rnr_naks = 0, retransmitted = 0, nonzero_udp_csum = 0;
  std::map<std::string, std::uint64_t> opcodes, ecn, ttl, problems;
  std::map<std::uint8_t, std::uint64_t> credit_codes;
  std::map<std::uint32_t, std::set<std::uint16_t>> sports;      // per destination QP
  std::map<std::uint32_t, std::set<std::uint32_t>> psns_seen;   // request PSNs per destination QP
  std::vector<std::string> first_bad;
};

void problem(Side& s, const std::string& what, std::uint64_t frame) {
  ++s.problems[what];
  if (s.first_bad.size() < 5) s.first_bad.push_back("frame " + std::to_string(frame) + ": " + what);
}

void account(Side& s, const capture::DecodedFrame& d, std::uint64_t frame) {
  const proto::Packet& p = d.packet;
  ++s.frames;
  if (d.verdict != capture::Verdict::Roce) {
    ++s.bad;
    problem(s, "not a clean RoCEv2 frame: " + proto::to_string(d.error), frame);
    return;
  }
  if (p.icrc_status != proto::IcrcStatus::Ok) {
    ++s.bad;
    problem(s, "ICRC " + proto::to_string(p.icrc_status), frame);
  }
  const bool v4 = p.ip_version == proto::IpVersion::V4;
  if (v4 && !(p.ipv4.flags_fragment & proto::Ipv4Header::kDontFragment)) problem(s, "DF not set", frame);
  if (v4 && !p.ipv4_checksum_ok) problem(s, "IPv4 header checksum wrong", frame);
  if (p.udp_checksum != 0) ++s.nonzero_udp_csum;
  ++s.ttl[std::to_string(v4 ? p.ipv4.ttl : p.ipv6.hop_limit)];
  ++s.ecn[proto::to_string(p.ecn())];
  ++s.opcodes[p.info->name];
  s.sports[p.dest_qp()].insert(p.udp_src_port);
  if (p.info->is_request) {
    ++s.requests;
    if (!s.psns_seen[p.dest_qp()].insert(p.psn()).second) ++s.retransmitted;
  }
  if (p.info->has(proto::ExtHeader::Aeth)) {
    const proto::Syndrome syn{p.ext.aeth.syndrome};
    if (syn.is_nak()) ++s.naks;
    if (syn.is_rnr_nak()) ++s.rnr_naks;
    if (syn.is_ack() && p.info->operation == proto::Operation::Ack) {
      ++s.acks;
      ++s.credit_codes[syn.value()];
    }
  }
}

std::string join(const std::map<std::string, std::uint64_t>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += (s.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return s.empty() ? "-" : s;
}

// Which formula gives `sport` for a QP `lqpn` talking to `rqpn`.
std::string sport_scheme(std::uint16_t sport, std::uint32_t lqpn, std::uint32_t rqpn) {
  if (sport == proto::udp_sport(proto::SportScheme::FlowLabel, lqpn, rqpn)) return "flow-label(lqpn*rqpn)";
  if (sport == proto::rxe_legacy_sport(lqpn)) return "hash_32(lqpn)";
  return "other";
}

void print_side(const Side& s) {
  std::printf("%s: %llu frames (%llu RoCEv2 problems, %llu ARP, %llu other)\n", s.name,
              static_cast<unsigned long long>(s.frames), static_cast<unsigned long long>(s.bad),
              static_cast<unsigned long long>(s.arp), static_cast<unsigned long long>(s.other));
  std::printf("  opcodes: %s\n", join(s.opcodes).c_str());
  std::printf("  requests %llu, retransmitted PSNs %llu, ACKs %llu, NAKs %llu, RNR NAKs %llu\n",
              static_cast<unsigned long long>(s.requests), static_cast<unsigned long long>(s.retransmitted),
              static_cast<unsigned long long>(s.acks), static_cast<unsigned long long>(s.naks),
              static_cast<unsigned long long>(s.rnr_naks));
  std::string credits;
  for (const auto& [c, n] : s.credit_codes) credits += (credits.empty() ? "" : " ") + std::to_string(c) + ":" + std::to_string(n);
  std::printf("  ACK credit codes: %s; TTL %s; ECN %s; UDP checksum non-zero %llu\n", credits.empty() ? "-" : credits.c_str(),
              join(s.ttl).c_str(), join(s.ecn).c_str(), static_cast<unsigned long long>(s.nonzero_udp_csum));
  for (const auto& [k, v] : s.problems) std::printf("  PROBLEM %s: %llu\n", k.c_str(), static_cast<unsigned long long>(v));
  for (const auto& b : s.first_bad) std::printf("    %s\n", b.c_str());
}

bool parse_ip(const char* text, Address& out) {
  if (::inet_pton(AF_INET, text, out.v4.data()) == 1) {
    out.version = proto::IpVersion::V4;
    return true;
  }
  out.version = proto::IpVersion::V6;
  return ::inet_pton(AF_INET6, text, out.v6.data()) == 1;
}

bool is_from(const proto::Packet& p, const Address& ip) {
  if (p.ip_version != ip.version) return false;
  return ip.version == proto::IpVersion::V4 ? p.ipv4.src == ip.v4 : p.ipv6.src == ip.v6;
}

}  // namespace

constexpr const char* kUsage = "usage: interop_capture_check FILE --ours IP --peer IP [--pmtu N] [--one-way ours|peer]\n";

int main(int argc, char** argv) {
  Side ours("ours"), peer("peer");
  std::string path;
  proto::ParseOptions opts;
  bool have_ours = false, have_peer = false;
  std::string one_way;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--ours" && i + 1 < argc) have_ours = parse_ip(argv[++i], ours.ip);
    else if (a == "--peer" && i + 1 < argc) have_peer = parse_ip(argv[++i], peer.ip);
    else if (a == "--pmtu" && i + 1 < argc) opts.pmtu = static_cast<std::uint32_t>(std::stoul(argv[++i]));
    else if (a == "--one-way" && i + 1 < argc && (std::string(argv[i + 1]) == "ours" || std::string(argv[i + 1]) == "peer"))
      one_way = argv[++i];
    else if (path.empty() && a[0] != '-') path = a;
    else return std::fprintf(stderr, "%s", kUsage), 2;
  }
  if (path.empty() || !have_ours || !have_peer || ours.ip.version != peer.ip.version)
    return std::fprintf(stderr, "%s", kUsage), 2;
  capture::CaptureReader reader;
  if (!reader.open(path)) return std::fprintf(stderr, "%s: %s\n", path.c_str(), reader.error().c_str()), 2;

  std::map<std::string, Side*> by_mac;  // learnt from the RoCEv2 frames, to place ARP and the rest
  capture::CaptureRecord rec;
  capture::DecodedFrame d;
  capture::ReadStatus st;
  while ((st = reader.next(rec)) == capture::ReadStatus::Record) {
    capture::decode_frame(reader.link_type(), rec.data, opts, d);
    const proto::Packet& p = d.packet;
    Side* side = nullptr;
    if (p.l4_offset != 0) side = is_from(p, ours.ip) ? &ours : is_from(p, peer.ip) ? &peer : nullptr;
    const bool roce = d.verdict == capture::Verdict::Roce || (d.verdict == capture::Verdict::Malformed && p.udp_dst_port == proto::kRoceV2Port);
    if (side && roce) {
      by_mac[proto::mac_to_string(p.eth.src)] = side;
      account(*side, d, rec.index);
      continue;
    }
    if (rec.data.size() < 14) continue;
    proto::MacAddr src;
    std::memcpy(src.data(), rec.data.data() + 6, 6);
    const auto it = by_mac.find(proto::mac_to_string(src));
    if (it == by_mac.end()) continue;
    const bool arp = std::to_integer<int>(rec.data[12]) == 0x08 && std::to_integer<int>(rec.data[13]) == 0x06;
    ++(arp ? it->second->arp : it->second->other);
  }
  if (st == capture::ReadStatus::Error) std::printf("capture ends mid-record: %s\n", reader.error().c_str());

  print_side(ours);
  print_side(peer);
  // ACK coalescing: how many requests each side acknowledges per ACK.
  if (ours.acks) std::printf("ack coalescing: ours %.2f requests per ACK", double(peer.requests) / double(ours.acks));
  else std::printf("ack coalescing: ours - ");
  if (peer.acks) std::printf(", rxe %.2f requests per ACK\n", double(ours.requests) / double(peer.acks));
  else std::printf(", rxe -\n");
  // UDP source ports: one per QP, and which formula made them (a single QP pair: the QPNs are
  // each side's destination QP).
  const bool ours_send = one_way != "peer", peer_sends = one_way != "ours";
  bool ok = ours.bad == 0 && peer.bad == 0 && (ours.frames > 0 || !ours_send) && (peer.frames > 0 || !peer_sends);
  for (Side* s : {&ours, &peer})
    for (const auto& [qp, ports] : s->sports)
      if (ports.size() != 1) {
        std::printf("PROBLEM %s: %zu UDP source ports towards QP 0x%06x\n", s->name, ports.size(), qp);
        if (s == &ours) ok = false;
      }
  if (ours.sports.size() == 1 && peer.sports.size() == 1) {
    const std::uint32_t peer_qpn = ours.sports.begin()->first, our_qpn = peer.sports.begin()->first;
    const std::uint16_t osp = *ours.sports.begin()->second.begin(), psp = *peer.sports.begin()->second.begin();
    std::printf("udp source ports: ours %u (QP 0x%06x, %s), rxe %u (QP 0x%06x, %s)\n", osp, our_qpn,
                sport_scheme(osp, our_qpn, peer_qpn).c_str(), psp, peer_qpn, sport_scheme(psp, peer_qpn, our_qpn).c_str());
  }
  for (const auto& [k, v] : ours.problems) (void)v, ok = ok && k.rfind("DF", 0) != 0 && k.rfind("IPv4", 0) != 0;
  if (ours.ttl.size() != 1 || ours.ttl.count("64") == 0) ok = ours.frames == 0 ? ok : (std::printf("PROBLEM ours: TTL not always 64\n"), false);
  if (ours.nonzero_udp_csum) ok = (std::printf("PROBLEM ours: UDP checksum not 0\n"), false);
  if (ours.frames == 0 && ours_send) std::printf("PROBLEM: no RoCEv2 frame of ours in the capture\n");
  if (peer.frames == 0 && peer_sends) std::printf("PROBLEM: no RoCEv2 frame of the peer in the capture\n");
  if (!one_way.empty()) std::printf("one-way test: only %s sends\n", one_way == "ours" ? "ours" : "the peer");
  std::printf("capture check: %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
