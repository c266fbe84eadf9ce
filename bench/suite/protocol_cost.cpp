// The protocol layer's own work on the frames of a 64 B WRITE exchange, timed in the same
// process as the transport figures it bounds: building and sealing the WRITE_ONLY and its ACK,
// and parsing and checking (ICRC included) each. A transport that computes the ICRC in software
// does at least this per message, so the 64 B message rate and round trip are divided by these
// (issue 26), not by raw forwarding, which moves mbuf pointers only.
#include <alloca.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
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

// Where the timed loops' stack sits. A load whose address agrees with an older store's in bits
// 0-11 waits for that store (4K aliasing): the build path's stack temporaries against the frame
// it writes cost build+seal 7-14 % at some stack offsets (bands of 80-144 bytes). ASLR moves the
// stack in 16-byte steps per process and the heap's layout moves with the binary, so a floor
// measured at one placement moved with both (docs/perf-changes.md 41). The frames sit at fixed
// offsets of one page, the rounds take turns at kPlacements stack offsets spread over a page,
// and each step's floor is its best placement's median chunk: the code's cost where no accident
// of placement slows it, and a chunk the host descheduled does not count.
constexpr unsigned kPlacements = 8;
constexpr std::size_t kPage = 4096;

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

// The frames and the state the four steps work on; built once per process. Static and
// page-aligned, so the frames' page offsets are the same in every binary and process.
struct Material {
  static constexpr std::size_t kSlot = 256;  // per buffer: frames, then the payload
  alignas(kPage) std::array<std::byte, 5 * kSlot> arena{};
  proto::FrameSpec specs[2] = {write_spec(), ack_spec()};
  proto::ByteSpan payload{arena.data() + 4 * kSlot, 64};
  std::array<proto::MutableByteSpan, 2> scratch = {slot(0), slot(1)};
  std::array<proto::ByteSpan, 2> built;
  proto::ParseOptions po;  // ISA-L, ICRC checked: what Engine::receive asks for at 64 B
  bool ok = true;

  Material() {
    po.mtu_rules = false;
    for (std::size_t i = 0; i < payload.size(); ++i) arena[4 * kSlot + i] = static_cast<std::byte>(i * 7 + 1);
    for (int f = 0; f < 2; ++f) {
      const proto::FrameLayout l = proto::build_frame(specs[f], payload_of(f), slot(2 + f), proto::CrcBackend::Isal);
      ok = ok && l.ok();
      built[f] = slot(2 + f).first(l.length);
    }
  }
  proto::MutableByteSpan slot(std::size_t i) { return proto::MutableByteSpan(arena).subspan(i * kSlot, kSlot); }
  proto::ByteSpan payload_of(int f) const { return f == 0 ? payload : proto::ByteSpan(); }
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

// One turn of the four steps, kChunk calls each: what the timed loops work on and their times.
struct Round {
  Material& m;
  bool icrc_linear;
  std::uint64_t sink = 0;
  double ns[4] = {};  // per call, this turn
};

// What the steps write besides the frames (the parsed packet, the ICRC templates) is in this
// frame, so it moves with the placement too.
__attribute__((noinline)) void timed_round(Round& r) {
  Material& m = r.m;
  // The headers' share of the ICRC as the engine takes it (TransportTuning::icrc_linear): both
  // frames' flows cached, as a one-QP exchange has them (two misses a turn).
  proto::IcrcHeaderCache cache;
  proto::IcrcHeaderCache* templates = r.icrc_linear ? &cache : nullptr;
  proto::ParseOptions po = m.po;
  po.icrc_cache = templates;
  proto::Packet pkt;
  for (int i = 0; i < 4; ++i) {
    const int f = i / 2;
    const auto t0 = Clock::now();
    if (i % 2 == 0) {
      for (unsigned k = 0; k < kChunk; ++k) {
        const proto::FrameLayout l = proto::write_headers(m.specs[f], static_cast<std::uint32_t>(m.payload_of(f).size()), m.scratch[f]);
        proto::place_and_seal(m.specs[f], l, m.scratch[f], proto::CrcBackend::Isal, m.payload_of(f).data(), templates);
        r.sink += l.length;
      }
    } else {
      for (unsigned k = 0; k < kChunk; ++k) {
        r.sink += static_cast<unsigned>(proto::parse_frame(m.built[f], po, pkt));
        r.sink += static_cast<unsigned>(pkt.icrc_status);
      }
    }
    r.ns[i] = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / kChunk;
  }
}

// timed_round with the stack moved down to `offset` in its page (plus this build's fixed frame
// sizes): the same code, its stack temporaries at another page offset.
__attribute__((noinline)) void round_at(std::size_t offset, Round& r) {
  const auto here = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  void* gap = alloca(((here - offset) & (kPage - 1)) + 16);
  asm volatile("" : : "r"(gap) : "memory");
  timed_round(r);
  asm volatile("" : : "r"(gap) : "memory");  // no tail call: the gap stays under timed_round
}

double median_of(std::vector<double>& v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace

ProtocolCost measure_protocol_cost(double seconds, bool icrc_linear) {
  Material& m = material();
  Round r{m, icrc_linear};
  std::array<std::array<std::vector<double>, 4>, kPlacements> chunks;  // [placement][step]
  // A median needs a few chunks per placement even where the host gives this thread a tenth of
  // a core (a sweep is about 2 ms of CPU).
  constexpr unsigned kMinSweeps = 9;
  unsigned sweeps = 0;
  const auto w0 = Clock::now();
  do {
    for (unsigned p = 0; p < kPlacements; ++p) {
      round_at(p * (kPage / kPlacements), r);
      for (int i = 0; i < 4; ++i) chunks[p][i].push_back(r.ns[i]);
    }
    ++sweeps;
  } while (sweeps < kMinSweeps || std::chrono::duration<double>(Clock::now() - w0).count() < seconds);
  ProtocolCost c;
  double* best[4] = {&c.write_build, &c.write_parse, &c.ack_build, &c.ack_parse};
  for (int i = 0; i < 4; ++i) {
    *best[i] = 1e300;
    for (auto& placement : chunks) {
      const double med = median_of(placement[i]);
      *best[i] = std::min(*best[i], med);
      if (i == 0) c.write_build_worst = std::max(c.write_build_worst, med);
    }
  }
  c.valid = m.verified() && r.sink != 0;
  return c;
}

bool protocol_cost(const SuiteConfig& c, Results& out) {
  std::array<Figure, 4> figs;
  for (int i = 0; i < 4; ++i) {
    figs[i] = Figure{"protocol_cost", {}, "ns/frame", {}, {}};
    figs[i].with("frame", kFrame[i / 2]).with("step", kStep[i % 2]);
  }
  std::vector<double> worst;
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
    worst.push_back(pc.write_build_worst);
  }
  // How far the WRITE's build+seal moved with its stack placement (the worst of the eight).
  figs[0].note("worst_placement", Figure{"", {}, "", worst, {}}.median());
  for (int i = 0; i < 4; ++i) {
    std::fprintf(stderr, "  protocol %s %s: %.1f ns\n", kFrame[i / 2], kStep[i % 2], figs[i].median());
    out.add(std::move(figs[i]));
  }
  return true;
}

}  // namespace roce::bench
