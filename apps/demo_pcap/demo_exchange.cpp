#include "apps/demo_pcap/demo_exchange.hpp"

#include <stdexcept>

#include "protocol/aeth.hpp"
#include "protocol/builder.hpp"
#include "protocol/udp_sport.hpp"

namespace roce::demo {
namespace {

using namespace roce::proto;

struct Host {
  MacAddr mac;
  Ipv4Addr ip;
  std::uint32_t qpn;
};

constexpr Host kRequester{{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}, {10, 0, 0, 1}, 0x000011};
constexpr Host kResponder{{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}, {10, 0, 0, 2}, 0x000012};
constexpr std::uint64_t kRemoteVa = 0x00007f5a3c001000;
constexpr std::uint32_t kRkey = 0x00001a2b;
constexpr std::uint32_t kMessageBytes = 2500;  // FIRST 1024 + MIDDLE 1024 + LAST 452 at PMTU 1024
constexpr std::uint32_t kFirstPsn = 0x00a000;

// The ECN bits say ECT(0): DCQCN traffic is ECN-capable so switches mark rather than drop.
constexpr std::uint8_t kTosEct0 = 0x02;
constexpr std::uint8_t kTosCe = 0x03;
// CNPs are usually sent at a high priority; 0xC2 is DSCP 48 + ECT(0), as a ConnectX-4 Lx sends.
constexpr std::uint8_t kTosCnp = 0xC2;

FrameSpec spec_from(const Host& from, const Host& to, Opcode op, std::uint32_t psn) {
  FrameSpec s;
  s.eth.src = from.mac;
  s.eth.dst = to.mac;
  s.ipv4.src = from.ip;
  s.ipv4.dst = to.ip;
  s.ipv4.tos = kTosEct0;
  s.udp_src_port = udp_sport(SportScheme::RxeLegacy, from.qpn, to.qpn);
  s.bth.opcode = raw(op);
  s.bth.pkey.set(Bth::kDefaultPkey);
  s.bth.dest_qp.set(to.qpn);
  s.bth.psn.set(psn);
  s.pmtu = kDemoPmtu;
  return s;
}

// Readable bytes, so a hex dump of the demo shows where the payload sits.
std::vector<std::byte> payload(std::uint32_t len, std::uint32_t offset) {
  static constexpr std::string_view kText = "rocev2-dp demo payload. ";
  std::vector<std::byte> p(len);
  for (std::uint32_t i = 0; i < len; ++i) p[i] = static_cast<std::byte>(kText[(offset + i) % kText.size()]);
  return p;
}

class Exchange {
 public:
  void add(std::string what, const FrameSpec& s, std::uint32_t payload_len = 0, std::uint32_t payload_offset = 0) {
    const auto data = payload(payload_len, payload_offset);
    std::vector<std::byte> out(layout_frame(s, payload_len).length);
    const FrameLayout l = build_frame(s, data, out, CrcBackend::Isal);
    if (!l.ok()) throw std::logic_error("demo frame '" + what + "' does not build: " + to_string(l.error));
    frames_.push_back({std::move(what), std::move(out)});
  }
  std::vector<DemoFrame> take() { return std::move(frames_); }

 private:
  std::vector<DemoFrame> frames_;
};

FrameSpec with_reth(FrameSpec s, std::uint32_t length) {
  s.ext.reth.va.set(kRemoteVa);
  s.ext.reth.rkey.set(kRkey);
  s.ext.reth.dma_length.set(length);
  return s;
}

FrameSpec with_aeth(FrameSpec s, Syndrome syndrome, std::uint32_t msn) {
  s.ext.aeth.syndrome = syndrome.raw;
  s.ext.aeth.msn.set(msn);
  return s;
}

FrameSpec ack_requested(FrameSpec s) {
  s.bth.set_ack_requested(true);
  return s;
}

}  // namespace

std::vector<DemoFrame> demo_exchange() {
  const Host& a = kRequester;
  const Host& b = kResponder;
  const Syndrome credits = Syndrome::ack(credit_code_for(32));
  std::uint32_t psn = kFirstPsn;
  Exchange x;

  // RDMA WRITE of 2500 bytes: FIRST carries the RETH, LAST asks for the ACK.
  x.add("WRITE_FIRST", with_reth(spec_from(a, b, Opcode::RcWriteFirst, psn), kMessageBytes), 1024, 0);
  x.add("WRITE_MIDDLE", spec_from(a, b, Opcode::RcWriteMiddle, psn + 1), 1024, 1024);
  x.add("WRITE_LAST", ack_requested(spec_from(a, b, Opcode::RcWriteLast, psn + 2)), 452, 2048);
  x.add("ACK of the write (MSN 1)", with_aeth(spec_from(b, a, Opcode::RcAck, psn + 2), credits, 1));
  psn += 3;

  // An 18-byte WRITE_ONLY (PadCnt 2) that a congested switch marked CE: the responder answers
  // with a CNP to the requester's QP (BECN set, PSN 0) besides the ACK.
  FrameSpec marked = ack_requested(with_reth(spec_from(a, b, Opcode::RcWriteOnly, psn), 18));
  marked.ipv4.tos = kTosCe;
  x.add("WRITE_ONLY, IP ECN CE", marked, 18, 0);
  FrameSpec cnp = spec_from(b, a, Opcode::Cnp, 0);
  cnp.ipv4.tos = kTosCnp;
  cnp.bth.set_becn(true);
  x.add("CNP for the requester's QP", cnp);
  x.add("ACK of the small write (MSN 2)", with_aeth(spec_from(b, a, Opcode::RcAck, psn), credits, 2));
  psn += 1;

  // RDMA READ of 2500 bytes: the request takes one PSN per response packet (3).
  x.add("READ_REQUEST", ack_requested(with_reth(spec_from(a, b, Opcode::RcReadRequest, psn), kMessageBytes)));
  x.add("READ_RESPONSE_FIRST (MSN 3)",
        with_aeth(spec_from(b, a, Opcode::RcReadResponseFirst, psn), credits, 3), 1024, 0);
  x.add("READ_RESPONSE_MIDDLE", spec_from(b, a, Opcode::RcReadResponseMiddle, psn + 1), 1024, 1024);
  x.add("READ_RESPONSE_LAST (MSN 3)", with_aeth(spec_from(b, a, Opcode::RcReadResponseLast, psn + 2), credits, 3),
        452, 2048);
  return x.take();
}

}  // namespace roce::demo
