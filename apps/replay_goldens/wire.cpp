#include "apps/replay_goldens/wire.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "protocol/udp_sport.hpp"

namespace roce::goldens {

using namespace roce::proto;

namespace {

std::int64_t ns(double at_us) { return std::llround(at_us * 1000.0); }

// CNPs leave with DSCP 48 + ECT(0), UDP source port 0 (what a ConnectX-4 Lx sends and the
// engine's defaults reproduce); not compared by the replay, written for a faithful picture.
constexpr std::uint8_t kCnpTos = 48 << 2 | 2;

}  // namespace

std::vector<std::byte> data(std::size_t n, std::uint8_t seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(seed + i * 13);
  return v;
}

std::vector<std::byte> pattern(std::size_t offset, std::size_t n) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((offset + i) * 7 + 3);
  return v;
}

std::vector<std::byte> le64(std::uint64_t v) {
  std::vector<std::byte> out(8);
  for (std::size_t i = 0; i < 8; ++i) out[i] = static_cast<std::byte>(v >> (8 * i));
  return out;
}

std::uint64_t read_le64(const std::vector<std::byte>& mem, std::size_t offset) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8; ++i) v |= std::uint64_t{std::to_integer<std::uint8_t>(mem[offset + i])} << (8 * i);
  return v;
}

ExtHeaders reth(std::uint64_t va, std::uint32_t rkey, std::uint32_t len) {
  ExtHeaders e;
  e.reth = Reth{Be64::of(va), Be32::of(rkey), Be32::of(len)};
  return e;
}

ExtHeaders atomic_eth(std::uint64_t va, std::uint32_t rkey, std::uint64_t swap_add, std::uint64_t compare) {
  ExtHeaders e;
  e.atomic = AtomicEth{Be64::of(va), Be32::of(rkey), Be64::of(swap_add), Be64::of(compare)};
  return e;
}

ExtHeaders imm(std::uint32_t value) {
  ExtHeaders e;
  const Be32 v = Be32::of(value);
  std::memcpy(e.imm.bytes.data(), v.bytes.data(), 4);
  return e;
}

std::vector<std::byte> build(const Host& from, const Host& to, const Packet& p) {
  FrameSpec s;
  s.eth.src = from.mac;
  s.eth.dst = to.mac;
  s.ipv4.src = from.ip;
  s.ipv4.dst = to.ip;
  s.ipv4.ttl = 64;
  s.set_ecn(p.ecn);
  s.udp_src_port = udp_sport(SportScheme::FlowLabel, from.qpn, to.qpn);
  s.bth.opcode = raw(p.op);
  s.bth.pkey.set(Bth::kDefaultPkey);
  s.bth.dest_qp.set(to.qpn);
  s.bth.psn.set(p.psn);
  s.bth.set_ack_requested(p.ack_req);
  s.ext = p.ext;
  s.pmtu = kPmtu;
  std::vector<std::byte> out(layout_frame(s, static_cast<std::uint32_t>(p.payload.size())).length + 64);
  const FrameLayout l = build_frame(s, p.payload, out, CrcBackend::Isal);
  if (!l.ok()) throw std::logic_error("golden frame " + opcode_name(raw(p.op)) + " does not build: " + to_string(l.error));
  out.resize(l.length);
  return out;
}

void Exchange::request(double at_us, Opcode op, std::uint32_t psn, const ExtHeaders& ext, std::vector<std::byte> payload,
                       bool ack_req, Ecn ecn) {
  in_.push_back({ns(at_us), build(kPeer, kUs, Packet{op, psn, ext, std::move(payload), ack_req, ecn})});
}

void Exchange::raw_in(double at_us, std::vector<std::byte> bytes) { in_.push_back({ns(at_us), std::move(bytes)}); }

void Exchange::ack(double at_us, std::uint32_t psn, std::uint32_t msn, Syndrome s) {
  ExtHeaders e;
  e.aeth = Aeth{s.raw, Be24::of(msn)};
  out_.push_back({ns(at_us), build(kUs, kPeer, Packet{Opcode::RcAck, psn, e})});
}

void Exchange::read_response(double at_us, Opcode op, std::uint32_t psn, std::uint32_t msn, std::vector<std::byte> payload) {
  ExtHeaders e;
  e.aeth = Aeth{Syndrome::ack().raw, Be24::of(msn)};
  out_.push_back({ns(at_us), build(kUs, kPeer, Packet{op, psn, e, std::move(payload)})});
}

void Exchange::read_responses(double at_us, std::uint32_t psn, std::uint32_t msn, const std::vector<std::byte>& bytes) {
  const std::size_t n = bytes.empty() ? 1 : (bytes.size() + kPmtu - 1) / kPmtu;
  for (std::size_t k = 0; k < n; ++k) {
    const bool first = k == 0, last = k + 1 == n;
    const Opcode op = first ? (last ? Opcode::RcReadResponseOnly : Opcode::RcReadResponseFirst)
                            : (last ? Opcode::RcReadResponseLast : Opcode::RcReadResponseMiddle);
    const std::size_t at = k * kPmtu, len = std::min<std::size_t>(kPmtu, bytes.size() - at);
    std::vector<std::byte> part(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                                bytes.begin() + static_cast<std::ptrdiff_t>(at + len));
    if (op == Opcode::RcReadResponseMiddle)  // MIDDLE carries no AETH
      out_.push_back({ns(at_us), build(kUs, kPeer, Packet{op, (psn + static_cast<std::uint32_t>(k)) & 0xFFFFFF, {}, std::move(part)})});
    else
      read_response(at_us, op, (psn + static_cast<std::uint32_t>(k)) & 0xFFFFFF, msn, std::move(part));
  }
}

void Exchange::atomic_ack(double at_us, std::uint32_t psn, std::uint32_t msn, std::uint64_t original) {
  ExtHeaders e;
  e.aeth = Aeth{Syndrome::ack().raw, Be24::of(msn)};
  e.atomic_ack.original_data.set(original);
  out_.push_back({ns(at_us), build(kUs, kPeer, Packet{Opcode::RcAtomicAck, psn, e})});
}

void Exchange::cnp(double at_us) {
  FrameSpec s;
  s.eth.src = kUs.mac;
  s.eth.dst = kPeer.mac;
  s.ipv4.src = kUs.ip;
  s.ipv4.dst = kPeer.ip;
  s.ipv4.tos = kCnpTos;
  s.udp_src_port = 0;
  s.bth.opcode = raw(Opcode::Cnp);
  s.bth.pkey.set(Bth::kDefaultPkey);
  s.bth.set_becn(true);
  s.bth.dest_qp.set(kPeer.qpn);  // the QP whose sending is to slow down
  std::vector<std::byte> out(layout_frame(s, 0).length);
  if (!build_frame(s, {}, out, CrcBackend::Isal).ok()) throw std::logic_error("CNP does not build");
  out_.push_back({ns(at_us), std::move(out)});
}

void Exchange::our_request(double at_us, const Packet& p) { out_.push_back({ns(at_us), build(kUs, kPeer, p)}); }

void Exchange::peer_response(double at_us, const Packet& p) { in_.push_back({ns(at_us), build(kPeer, kUs, p)}); }

}  // namespace roce::goldens
