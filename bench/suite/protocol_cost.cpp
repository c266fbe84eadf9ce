// The protocol layer's own work on the frames of a 64 B WRITE exchange, timed in the same
// process as the transport figures it bounds: building and sealing the WRITE_ONLY and its ACK,
// and parsing and checking (ICRC included) each. A transport that computes the ICRC in software
// does at least this per message, so the 64 B message rate and round trip are divided by these
// (issue 26), not by raw forwarding, which moves mbuf pointers only.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <vector>

#include "bench/suite/cases.hpp"
#include "bench/suite/frames.hpp"
#include "protocol/aeth.hpp"
#include "protocol/icrc_linear.hpp"
#include "protocol/parser.hpp"

namespace roce::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr unsigned kChunk = 2048;  // calls per timed chunk; the four steps take turns chunk by chunk

// One direction of the exchange: the peer's requests to us, or our answers to it.
proto::FrameSpec spec_of(bool from_peer, proto::Opcode op, std::uint32_t dest_qpn) {
  proto::FrameSpec s;
  s.eth.src = from_peer ? kPeerMac : kDutMac;
  s.eth.dst = from_peer ? kDutMac : kPeerMac;
  s.ipv4.src = from_peer ? kPeerIp : kDutIp;
  s.ipv4.dst = from_peer ? kDutIp : kPeerIp;
  s.udp_src_port = from_peer ? 0xC0DE : 0xC0DF;
  s.bth.opcode = proto::raw(op);
  s.bth.pkey.set(0xFFFF);
  s.bth.dest_qp.set(dest_qpn);
  s.bth.psn.set(0x123456);
  return s;
}

proto::FrameSpec write_spec() {
  proto::FrameSpec s = spec_of(true, proto::Opcode::RcWriteOnly, kPeerQpn);
  s.bth.set_ack_requested(true);
  s.ext.reth = proto::Reth{proto::Be64::of(0x7f0000001000), proto::Be32::of(0x2d5), proto::Be32::of(64)};
  return s;
}

proto::FrameSpec ack_spec() {
  proto::FrameSpec s = spec_of(false, proto::Opcode::RcAck, kPeerQpn + 1);
  s.ext.aeth = proto::Aeth{proto::Syndrome::ack().raw, proto::Be24::of(0x42)};
  return s;
}

constexpr const char* kFrame[2] = {"WRITE_ONLY 64 B", "ACK"};
constexpr const char* kStep[2] = {"build+seal", "parse+verify"};

// The frames and the state the four steps work on; built once per process.
struct Material {
  proto::FrameSpec specs[2] = {write_spec(), ack_spec()};
  std::vector<std::byte> payload = std::vector<std::byte>(64);
  std::array<std::vector<std::byte>, 2> built, scratch;
  proto::ParseOptions po;  // ISA-L, ICRC checked: what Engine::receive asks for at 64 B
  bool ok = true;

  Material() {
    po.mtu_rules = false;
    for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::byte>(i * 7 + 1);
    for (int f = 0; f < 2; ++f) {
      built[f].resize(256);
      scratch[f].resize(256);
      const proto::FrameLayout l = proto::build_frame(specs[f], payload_of(f), built[f], proto::CrcBackend::Isal);
      ok = ok && l.ok();
      built[f].resize(l.length);
    }
  }
  proto::ByteSpan payload_of(int f) const { return f == 0 ? proto::ByteSpan(payload) : proto::ByteSpan(); }
  // Every build gives the frame built first and both frames parse with a good ICRC, or the
  // figures are of something else.
  bool verified() {
    proto::Packet pkt;
    bool good = ok;
    for (int f = 0; f < 2; ++f) {
      good = good && std::equal(built[f].begin(), built[f].end(), scratch[f].begin()) &&
             proto::parse_frame(built[f], po, pkt) == proto::ParseError::None && pkt.icrc_status == proto::IcrcStatus::Ok;
    }
    return good;
  }
};

Material& material() {
  static Material m;
  return m;
}

}  // namespace

ProtocolCost measure_protocol_cost(double seconds, bool icrc_linear) {
  Material& m = material();
  // The headers' share of the ICRC as the engine takes it (TransportTuning::icrc_linear): both
  // frames' flows cached, as a one-QP exchange has them.
  proto::IcrcHeaderCache cache;
  proto::IcrcHeaderCache* templates = icrc_linear ? &cache : nullptr;
  proto::ParseOptions po = m.po;
  po.icrc_cache = templates;
  double ns[4] = {};
  std::uint64_t calls[4] = {};
  std::uint64_t sink = 0;
  proto::Packet pkt;
  const auto w0 = Clock::now();
  do {
    for (int i = 0; i < 4; ++i) {
      const int f = i / 2;
      const auto t0 = Clock::now();
      if (i % 2 == 0) {
        for (unsigned k = 0; k < kChunk; ++k) {
          const proto::FrameLayout l = proto::write_headers(m.specs[f], static_cast<std::uint32_t>(m.payload_of(f).size()), m.scratch[f]);
          proto::place_and_seal(m.specs[f], l, m.scratch[f], proto::CrcBackend::Isal, m.payload_of(f).data(), templates);
          sink += l.length;
        }
      } else {
        for (unsigned k = 0; k < kChunk; ++k) {
          sink += static_cast<unsigned>(proto::parse_frame(m.built[f], po, pkt));
          sink += static_cast<unsigned>(pkt.icrc_status);
        }
      }
      ns[i] += std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
      calls[i] += kChunk;
    }
  } while (std::chrono::duration<double>(Clock::now() - w0).count() < seconds);
  ProtocolCost c;
  c.write_build = ns[0] / static_cast<double>(calls[0]);
  c.write_parse = ns[1] / static_cast<double>(calls[1]);
  c.ack_build = ns[2] / static_cast<double>(calls[2]);
  c.ack_parse = ns[3] / static_cast<double>(calls[3]);
  c.valid = m.verified() && sink != 0;
  return c;
}

bool protocol_cost(const SuiteConfig& c, Results& out) {
  std::array<Figure, 4> figs;
  for (int i = 0; i < 4; ++i) {
    figs[i] = Figure{"protocol_cost", {}, "ns/frame", {}, {}};
    figs[i].with("frame", kFrame[i / 2]).with("step", kStep[i % 2]);
  }
  for (unsigned run = 0; run <= c.runs; ++run) {  // run 0 warms up
    const ProtocolCost pc = measure_protocol_cost(c.window / 2, c.tuning.icrc_linear);
    if (!pc.valid) {
      std::fprintf(stderr, "protocol cost: the frames did not build or parse as expected\n");
      return false;
    }
    if (run == 0) continue;
    figs[0].samples.push_back(pc.write_build);
    figs[1].samples.push_back(pc.write_parse);
    figs[2].samples.push_back(pc.ack_build);
    figs[3].samples.push_back(pc.ack_parse);
  }
  for (int i = 0; i < 4; ++i) {
    std::fprintf(stderr, "  protocol %s %s: %.1f ns\n", kFrame[i / 2], kStep[i % 2], figs[i].median());
    out.add(std::move(figs[i]));
  }
  return true;
}

}  // namespace roce::bench
