#include "apps/replay_goldens/cases.hpp"

#include <cstdio>
#include <cstring>

namespace roce::goldens {

using namespace roce::proto;
using O = Opcode;

namespace {

constexpr std::uint32_t kEpsn = 0x001000;           // the responder's first expected PSN
constexpr std::uint64_t kVa = 0x00007f0000001000;   // what the peer calls byte 0 of our region
constexpr std::uint32_t kRkey = 0x1234;             // the R_Key the peer was given for it
constexpr std::size_t kRegionBytes = 4096;
constexpr std::uint8_t kMinRnrTimer = 14;           // 1.28 ms

std::string hex(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

std::vector<std::byte> slice(const std::vector<std::byte>& v, std::size_t at, std::size_t n) {
  return {v.begin() + static_cast<std::ptrdiff_t>(at), v.begin() + static_cast<std::ptrdiff_t>(at + n)};
}

void place(std::vector<std::byte>& mem, std::size_t at, const std::vector<std::byte>& bytes) {
  std::copy(bytes.begin(), bytes.end(), mem.begin() + static_cast<std::ptrdiff_t>(at));
}

struct Text {
  std::string tail_us = "0";
  std::uint32_t rq_psn = kEpsn;
  std::string replay_extra;
  std::string qp_extra;
  std::string sections;  // [recv], [wr], [dcqcn] ...
  std::string expect;    // lines of [expect]
};

std::string scenario_text(const std::string& name, const std::string& pins, const Text& t) {
  std::string s = "# " + name + ": " + pins + "\n";
  s += "# Written by roce-make-replay-goldens (scripts/make_replay_goldens.sh); do not edit.\n";
  s += "[replay]\nstart = " + std::to_string(kStartSec) + ".000000\ntail_us = " + t.tail_us + "\n" + t.replay_extra;
  s += "\n[local]\nmac = 02:00:00:00:00:01\nip = 10.0.0.1\n";
  s += "\n[qp responder]\ntype = rc\nqpn = " + hex(kUs.qpn) + "\npeer_qpn = " + hex(kPeer.qpn) +
       "\npeer_ip = 10.0.0.2\npeer_mac = 02:00:00:00:00:02\nrq_psn = " + hex(t.rq_psn) +
       "\nsq_psn = 0x500\nmtu = 1024\naccess = remote_write, remote_read, remote_atomic\nmax_dest_rd_atomic = 4\n"
       "min_rnr_timer = " + std::to_string(kMinRnrTimer) + "\n" + t.qp_extra;
  s += "\n[mr data]\nsize = " + std::to_string(kRegionBytes) +
       "\nfill = pattern\naccess = local_write, remote_write, remote_read, remote_atomic\nrkey = " + hex(kRkey) +
       "\nva = " + hex(kVa) + "\n";
  s += t.sections;
  if (!t.expect.empty()) s += "\n[expect]\n" + t.expect;
  return s;
}

// WRITE (three packets), SEND with immediate, READ of what the WRITE placed, FETCH_ADD, and a
// READ of what the atomic left.
GoldenCase inorder_write_send_read() {
  GoldenCase c{"inorder_write_send_read",
               "in-order WRITE (FIRST/MIDDLE/LAST), SEND with immediate, READ, FETCH_ADD: one ACK per AckReq "
               "packet carrying its PSN and the MSN counting completed messages; READ responses segmented at the "
               "path MTU with AETH on FIRST/LAST only, returning what the WRITE placed; the atomic ACK with the "
               "word before the add, and the added word read back",
               {}, {}};
  Exchange& x = c.frames;
  auto mem = pattern(0, kRegionBytes);
  const std::uint32_t e = kEpsn;
  const auto w = data(2500, 0x40);
  x.request(0, O::RcWriteFirst, e, reth(kVa + 100, kRkey, 2500), slice(w, 0, 1024), false);
  x.request(10, O::RcWriteMiddle, e + 1, {}, slice(w, 1024, 1024), false);
  x.request(20, O::RcWriteLast, e + 2, {}, slice(w, 2048, 452));
  x.ack(20, e + 2, 1);
  place(mem, 100, w);
  x.request(30, O::RcSendOnlyImm, e + 3, imm(0xDEADBEEF), data(100, 0x90));
  x.ack(30, e + 3, 2);
  x.request(40, O::RcReadRequest, e + 4, reth(kVa + 100, kRkey, 2500));
  x.read_responses(40, e + 4, 3, slice(mem, 100, 2500));  // PSNs e+4..e+6
  const std::uint64_t before = read_le64(mem, 3000);
  x.request(50, O::RcFetchAdd, e + 7, atomic_eth(kVa + 3000, kRkey, 5, 0));
  x.atomic_ack(50, e + 7, 4, before);
  place(mem, 3000, le64(before + 5));
  x.request(60, O::RcReadRequest, e + 8, reth(kVa + 3000, kRkey, 8));
  x.read_responses(60, e + 8, 5, le64(before + 5));
  Text t;
  t.sections = "\n[recv]\nqp = responder\ncount = 1\nsize = 256\n";
  t.expect = "wc.ok = 1\ncounter.acks_sent = 2\ncounter.read_responses_sent = 4\ncounter.atomic_acks_sent = 1\n";
  c.scenario = scenario_text(c.name, c.pins, t);
  return c;
}

// The PSNs wrap from 0xFFFFFF to 0 in the middle of it.
GoldenCase gap_nak() {
  GoldenCase c{"gap_nak",
               "a gap in the PSNs gets one NAK PSN sequence error carrying the expected PSN and the current MSN; "
               "later requests get no answer until the missing PSN comes; the retransmitted requests are then "
               "executed and ACKed in order (across the PSN wrap at 0xFFFFFF)",
               {}, {}};
  Exchange& x = c.frames;
  constexpr std::uint32_t e = 0xFFFFFE;
  auto psn = [](std::uint32_t k) { return (e + k) & 0xFFFFFF; };
  auto write = [&](double at, std::uint32_t k) {
    x.request(at, O::RcWriteOnly, psn(k), reth(kVa + 8 * k, kRkey, 8), data(8, static_cast<std::uint8_t>(k)));
  };
  auto mem = pattern(0, 64);
  write(0, 0);
  x.ack(0, psn(0), 1);
  write(10, 1);
  x.ack(10, psn(1), 2);
  write(20, 3);  // PSN e+2 was lost
  x.ack(20, psn(2), 2, Syndrome::nak(NakCode::PsnSequenceError));
  write(30, 4);
  write(40, 5);
  for (std::uint32_t k = 2; k <= 5; ++k) {
    write(100 + 10.0 * (k - 2), k);
    x.ack(100 + 10.0 * (k - 2), psn(k), k + 1);
  }
  for (std::uint32_t k = 0; k <= 5; ++k) place(mem, 8 * k, data(8, static_cast<std::uint8_t>(k)));
  x.request(140, O::RcReadRequest, psn(6), reth(kVa, kRkey, 48));
  x.read_responses(140, psn(6), 7, slice(mem, 0, 48));
  Text t;
  t.rq_psn = e;
  t.expect = "counter.out_of_seq_request = 3\ncounter.naks_sent = 1\n";
  c.scenario = scenario_text(c.name, c.pins, t);
  return c;
}

GoldenCase duplicate_send_write() {
  GoldenCase c{"duplicate_send_write",
               "a duplicate SEND or WRITE is not executed again (no second receive consumed, memory unchanged) but "
               "acknowledged again with the most recent PSN (expected PSN - 1) and the current MSN",
               {}, {}};
  Exchange& x = c.frames;
  const std::uint32_t e = kEpsn;
  const auto a = data(16, 0x22);
  x.request(0, O::RcSendOnly, e, {}, data(64, 0x11));
  x.ack(0, e, 1);
  x.request(10, O::RcWriteOnly, e + 1, reth(kVa + 256, kRkey, 16), a);
  x.ack(10, e + 1, 2);
  x.request(20, O::RcSendOnly, e, {}, data(64, 0x11));
  x.ack(20, e + 1, 2);
  x.request(30, O::RcWriteOnly, e + 1, reth(kVa + 256, kRkey, 16), data(16, 0x33));  // different bytes, same PSN
  x.ack(30, e + 1, 2);
  x.request(40, O::RcReadRequest, e + 2, reth(kVa + 256, kRkey, 16));
  x.read_responses(40, e + 2, 3, a);
  Text t;
  t.sections = "\n[recv]\nqp = responder\ncount = 2\nsize = 256\n";
  t.expect = "counter.duplicate_request = 2\nwc.ok = 1\n";
  c.scenario = scenario_text(c.name, c.pins, t);
  return c;
}

GoldenCase duplicate_read() {
  GoldenCase c{"duplicate_read",
               "a duplicate READ is executed again from memory as it is now, at the PSNs of the original, with the "
               "responder's current MSN in its AETH; a duplicate starting in the middle restarts at that PSN with a "
               "FIRST packet; new requests then carry on",
               {}, {}};
  Exchange& x = c.frames;
  auto mem = pattern(0, kRegionBytes);
  const std::uint32_t e = kEpsn;
  x.request(0, O::RcReadRequest, e, reth(kVa, kRkey, 2500));
  x.read_responses(0, e, 1, slice(mem, 0, 2500));  // e..e+2
  const auto cbytes = data(16, 0x55);
  x.request(10, O::RcWriteOnly, e + 3, reth(kVa, kRkey, 16), cbytes);
  x.ack(10, e + 3, 2);
  place(mem, 0, cbytes);
  x.request(20, O::RcReadRequest, e, reth(kVa, kRkey, 2500));
  x.read_responses(20, e, 2, slice(mem, 0, 2500));
  x.request(30, O::RcReadRequest, e + 1, reth(kVa + 1024, kRkey, 2500 - 1024));
  x.read_responses(30, e + 1, 2, slice(mem, 1024, 2500 - 1024));  // FIRST e+1, LAST e+2
  x.request(40, O::RcWriteOnly, e + 4, reth(kVa + 2600, kRkey, 8), data(8, 0x66));
  x.ack(40, e + 4, 3);
  Text t;
  t.expect = "counter.duplicate_read_reexecuted = 2\n";
  c.scenario = scenario_text(c.name, c.pins, t);
  return c;
}

GoldenCase duplicate_atomic() {
  GoldenCase c{"duplicate_atomic",
               "a duplicate FETCH_ADD or CMP_SWAP is answered from the saved result (the original value, the "
               "current MSN) and never executed twice: the word read back was changed once",
               {}, {}};
  Exchange& x = c.frames;
  auto mem = pattern(0, kRegionBytes);
  const std::uint32_t e = kEpsn;
  const std::uint64_t p = read_le64(mem, 64);
  const auto fetch_add = atomic_eth(kVa + 64, kRkey, 5, 0);
  x.request(0, O::RcFetchAdd, e, fetch_add);
  x.atomic_ack(0, e, 1, p);
  x.request(10, O::RcWriteOnly, e + 1, reth(kVa + 512, kRkey, 8), data(8, 0x44));
  x.ack(10, e + 1, 2);
  x.request(20, O::RcFetchAdd, e, fetch_add);
  x.atomic_ack(20, e, 2, p);
  x.request(30, O::RcReadRequest, e + 2, reth(kVa + 64, kRkey, 8));
  x.read_responses(30, e + 2, 3, le64(p + 5));
  constexpr std::uint64_t kSwap = 0x1122334455667788;
  const auto cmp_swap = atomic_eth(kVa + 64, kRkey, kSwap, p + 5);
  x.request(40, O::RcCmpSwap, e + 3, cmp_swap);
  x.atomic_ack(40, e + 3, 4, p + 5);
  x.request(50, O::RcCmpSwap, e + 3, cmp_swap);
  x.atomic_ack(50, e + 3, 4, p + 5);
  x.request(60, O::RcReadRequest, e + 4, reth(kVa + 64, kRkey, 8));
  x.read_responses(60, e + 4, 5, le64(kSwap));
  Text t;
  t.expect = "counter.duplicate_atomic_replayed = 2\n";
  c.scenario = scenario_text(c.name, c.pins, t);
  return c;
}

GoldenCase bad_rkey() {
  GoldenCase c{"bad_rkey",
               "a WRITE with an R_Key no region has gets NAK remote access error with its PSN and the current MSN; "
               "the QP then enters the error state and answers nothing more",
               {}, {}};
  Exchange& x = c.frames;
  const std::uint32_t e = kEpsn;
  x.request(0, O::RcWriteOnly, e, reth(kVa, kRkey, 8), data(8, 1));
  x.ack(0, e, 1);
  x.request(10, O::RcWriteOnly, e + 1, reth(kVa, 0xBAD0, 8), data(8, 2));
  x.ack(10, e + 1, 1, Syndrome::nak(NakCode::RemoteAccessError));
  x.request(20, O::RcWriteOnly, e + 2, reth(kVa + 8, kRkey, 8), data(8, 3));
  Text t;
  t.expect = "counter.remote_access_errors = 1\ncounter.bad_state_drops = 1\n";
  c.scenario = scenario_text(c.name, c.pins, t);
  return c;
}

GoldenCase bad_icrc() {
  GoldenCase c{"bad_icrc",
               "a request whose ICRC is wrong is dropped without an answer and counted (drop.icrc_bad); the same "
               "PSN with a good ICRC is then executed; a READ shows the bad frame's bytes never reached memory",
               {}, {}};
  Exchange& x = c.frames;
  const std::uint32_t e = kEpsn;
  auto bad = build(kPeer, kUs, Packet{O::RcWriteOnly, e, reth(kVa, kRkey, 32), data(32, 0xEE), true});
  bad.back() ^= std::byte{0xFF};
  x.raw_in(0, bad);
  x.request(10, O::RcWriteOnly, e, reth(kVa + 512, kRkey, 32), data(32, 0x21));
  x.ack(10, e, 1);
  x.request(20, O::RcReadRequest, e + 1, reth(kVa, kRkey, 32));
  x.read_responses(20, e + 1, 2, pattern(0, 32));
  Text t;
  t.expect = "drop.icrc_bad = 1\n";
  c.scenario = scenario_text(c.name, c.pins, t);
  return c;
}

// DCQCN notification point, spec 5.2: a CNP at once when none went in the last 50 us, else one
// at the end of that window; READ requests carry no data and trigger none.
GoldenCase ce_cnp() {
  GoldenCase c{"ce_cnp",
               "with DCQCN on, CE-marked data gets a CNP (BECN, PSN 0, to the sender's QP) at most once per 50 us "
               "per QP: at once when none went in the last 50 us, else one at the end of the window (a timer "
               "between frames); CE-marked READ requests and unmarked data get none",
               {}, {}};
  Exchange& x = c.frames;
  auto mem = pattern(0, kRegionBytes);
  const std::uint32_t e = kEpsn;
  auto write = [&](double at, std::uint32_t k, Ecn ecn) {
    x.request(at, O::RcWriteOnly, e + k, reth(kVa + 16 * k, kRkey, 16), data(16, static_cast<std::uint8_t>(k)), true, ecn);
    place(mem, 16 * k, data(16, static_cast<std::uint8_t>(k)));
    x.ack(at, e + k, k + 1);
  };
  write(0, 0, Ecn::Ce);
  x.cnp(0);
  write(10, 1, Ecn::Ce);
  write(20, 2, Ecn::Ce);
  write(30, 3, Ecn::Ce);
  x.cnp(50);
  write(120, 4, Ecn::Ce);
  x.cnp(120);
  x.request(130, O::RcReadRequest, e + 5, reth(kVa, kRkey, 16), {}, true, Ecn::Ce);
  x.read_responses(130, e + 5, 6, slice(mem, 0, 16));
  write(140, 6, Ecn::Ect0);
  Text t;
  t.tail_us = "200";
  t.sections = "\n[dcqcn]\nenabled = yes\nnp_interval_us = 50\nnp_mode = paper\n";
  t.expect = "counter.cnp_sent = 3\ncounter.ecn_ce_received = 6\n";
  c.scenario = scenario_text(c.name, c.pins, t);
  return c;
}

GoldenCase rnr_nak() {
  GoldenCase c{"rnr_nak",
               "a SEND with no receive posted gets an RNR NAK (syndrome 0x20 | min_rnr_timer) with its PSN and the "
               "current MSN, and the SEND behind it no answer; once a receive is posted the retried SENDs are "
               "executed and ACKed",
               {}, {}};
  Exchange& x = c.frames;
  const std::uint32_t e = kEpsn;
  x.request(0, O::RcSendOnly, e, {}, data(64, 1));
  x.ack(0, e, 0, Syndrome::rnr_nak(kMinRnrTimer));
  x.request(10, O::RcSendOnly, e + 1, {}, data(64, 2));
  x.request(200, O::RcSendOnly, e, {}, data(64, 1));
  x.ack(200, e, 1);
  x.request(210, O::RcSendOnly, e + 1, {}, data(64, 2));
  x.ack(210, e + 1, 2);
  Text t;
  t.sections = "\n[recv]\nqp = responder\ncount = 2\nsize = 256\nat_us = 100\n";
  t.expect = "counter.send_rnr_err = 1\nwc.ok = 2\n";
  c.scenario = scenario_text(c.name, c.pins, t);
  return c;
}

// RoCEv1: Ethernet type 0x8915, a 40-byte GRH (next header 0x1B), then the BTH and the rest of
// a RoCEv2 request's transport part.
std::vector<std::byte> rocev1(const Packet& p) {
  const auto v2 = build(kPeer, kUs, p);
  constexpr std::size_t kV2Transport = 14 + 20 + 8;
  const std::size_t transport = v2.size() - kV2Transport;
  std::vector<std::byte> f;
  f.reserve(14 + 40 + transport);
  auto put = [&f](std::initializer_list<std::uint8_t> bytes) {
    for (std::uint8_t b : bytes) f.push_back(static_cast<std::byte>(b));
  };
  auto put_mac = [&put](const MacAddr& m) { put({m[0], m[1], m[2], m[3], m[4], m[5]}); };
  auto put_gid = [&put](const Ipv4Addr& a) { put({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, a[0], a[1], a[2], a[3]}); };
  put_mac(kUs.mac);
  put_mac(kPeer.mac);
  put({0x89, 0x15});
  put({0x60, 0, 0, 0, static_cast<std::uint8_t>(transport >> 8), static_cast<std::uint8_t>(transport & 0xFF), 0x1B, 64});
  put_gid(kPeer.ip);
  put_gid(kUs.ip);
  f.insert(f.end(), v2.begin() + kV2Transport, v2.end());
  return f;
}

// An LLDP frame (EtherType 0x88CC): link-layer traffic every capture has. (ARP would reach
// the dataplane's ARP responder on the --dpdk path instead of the engine.)
std::vector<std::byte> lldp() {
  const std::uint8_t b[] = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x0E, 2, 0, 0, 0, 0, 2, 0x88, 0xCC,
                            0x02, 0x07, 0x04, 2, 0, 0, 0, 0, 2,  // chassis id: MAC
                            0x04, 0x02, 0x07, 0x31,              // port id: "1"
                            0x06, 0x02, 0x00, 0x78,              // TTL 120 s
                            0x00, 0x00};                          // end
  std::vector<std::byte> f(60);
  std::memcpy(f.data(), b, sizeof b);
  return f;
}

std::vector<std::byte> tcp_syn() {
  const std::uint8_t b[] = {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00,
                            0x45, 0x00, 0x00, 0x28, 0x12, 0x34, 0x40, 0x00, 64, 6, 0x00, 0x00, 10, 0, 0, 2, 10, 0, 0, 1,
                            0x9C, 0x40, 0x48, 0x53, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xFA, 0xF0, 0, 0, 0, 0};
  std::vector<std::byte> f(60);
  std::memcpy(f.data(), b, sizeof b);
  return f;
}

GoldenCase noise_rocev1() {
  GoldenCase c{"noise_rocev1",
               "RoCEv1 frames (EtherType 0x8915) carrying requests to our QP, LLDP, TCP, UDP to port 4792 and RoCEv2 "
               "for another IP are neither answered nor executed, each counted under its reason; the RoCEv2 requests "
               "between them are answered as usual",
               {}, {}};
  Exchange& x = c.frames;
  auto mem = pattern(0, kRegionBytes);
  const std::uint32_t e = kEpsn;
  x.raw_in(0, rocev1(Packet{O::RcWriteOnly, e, reth(kVa, kRkey, 8), data(8, 0xA1), true}));
  x.raw_in(10, lldp());
  x.request(20, O::RcWriteOnly, e, reth(kVa + 64, kRkey, 8), data(8, 0xB1));
  x.ack(20, e, 1);
  place(mem, 64, data(8, 0xB1));
  x.raw_in(30, tcp_syn());
  {
    FrameSpec s;  // a RoCE-looking packet to UDP port 4792
    s.eth.src = kPeer.mac;
    s.eth.dst = kUs.mac;
    s.ipv4.src = kPeer.ip;
    s.ipv4.dst = kUs.ip;
    s.udp_src_port = 0xC123;
    s.udp_dst_port = 4792;
    s.bth.opcode = raw(O::RcWriteOnly);
    s.bth.pkey.set(Bth::kDefaultPkey);
    s.bth.dest_qp.set(kUs.qpn);
    s.bth.psn.set(e + 1);
    s.ext = reth(kVa, kRkey, 8);
    const auto payload = data(8, 0xC1);
    std::vector<std::byte> f(layout_frame(s, 8).length);
    build_frame(s, payload, f, CrcBackend::Isal);
    x.raw_in(40, f);
  }
  const Host other{kUs.mac, {10, 0, 0, 3}, kUs.qpn};
  x.raw_in(50, build(kPeer, other, Packet{O::RcWriteOnly, e + 1, reth(kVa, kRkey, 8), data(8, 0xD1), true}));
  x.request(60, O::RcWriteOnly, e + 1, reth(kVa + 72, kRkey, 8), data(8, 0xB2));
  x.ack(60, e + 1, 2);
  place(mem, 72, data(8, 0xB2));
  x.raw_in(70, rocev1(Packet{O::RcSendOnly, e + 2, {}, data(16, 0xA2), true}));
  x.request(80, O::RcReadRequest, e + 2, reth(kVa, kRkey, 80));
  x.read_responses(80, e + 2, 3, slice(mem, 0, 80));
  Text t;
  t.expect = "parse.rocev1 = 2\nparse.not-ip = 1\nparse.not-udp = 1\nparse.not-udp-4791 = 1\ndrop.not_for_us = 1\n";
  c.scenario = scenario_text(c.name, c.pins, t);
  return c;
}

// Our QP as the requester: the frames out are our requests, the peer's responses come in.
GoldenCase requester_write_read() {
  GoldenCase c{"requester_write_read",
               "as requester: a WRITE, a READ and a SEND posted as work requests go out with consecutive PSNs from "
               "sq_psn (the READ taking one PSN per response packet), AckReq on the last packet of each message; "
               "the peer's ACK and READ responses complete them; the SEND nobody ACKs is sent again by the early "
               "retransmission timer: as a tail probe after max(5 us, 2 srtt, srtt + 4 rttvar) = 60 us (the WRITE's ACK gave "
               "an RTT sample of 20 us) plus the peer's ACK hold of a lone packet, 20 us, then as "
               "the oldest packet's probe 250 us later, doubling (0.5, 1 and 2 ms more), and after the local ACK timeout "
               "(4.096 us x 2^timeout), which the early ones do not postpone, as the oldest packet's probe again (a retry "
               "spent on one packet)",
               {}, {}};
  Exchange& x = c.frames;
  const auto mem = pattern(0, kRegionBytes);
  constexpr std::uint32_t s = 0x500;
  constexpr std::uint32_t kPeerRkey = 0x4321;
  constexpr std::uint8_t kTimeout = 10;  // 4.096 us << 10 = 4194.304 us
  x.our_request(0, Packet{O::RcWriteFirst, s, reth(0x10000, kPeerRkey, 1500), slice(mem, 0, 1024), false});
  x.our_request(0, Packet{O::RcWriteLast, s + 1, {}, slice(mem, 1024, 476), true});
  x.our_request(0, Packet{O::RcReadRequest, s + 2, reth(0x20000, kPeerRkey, 1500), {}, true});
  ExtHeaders ack1;
  ack1.aeth = Aeth{Syndrome::ack().raw, Be24::of(1)};
  x.peer_response(20, Packet{O::RcAck, s + 1, ack1});
  ExtHeaders r;
  r.aeth = Aeth{Syndrome::ack().raw, Be24::of(2)};
  x.peer_response(30, Packet{O::RcReadResponseFirst, s + 2, r, data(1024, 0x70)});
  x.peer_response(31, Packet{O::RcReadResponseLast, s + 3, r, data(476, 0x71)});
  x.our_request(50, Packet{O::RcSendOnly, s + 4, {}, slice(mem, 1024, 64), true});
  for (const int at : {80, 330, 830, 1830, 3830})
    x.our_request(50 + at, Packet{O::RcSendOnly, s + 4, {}, slice(mem, 1024, 64), true});
  x.our_request(50 + 4.096 * (1 << kTimeout), Packet{O::RcSendOnly, s + 4, {}, slice(mem, 1024, 64), true});
  ExtHeaders ack3;
  ack3.aeth = Aeth{Syndrome::ack().raw, Be24::of(3)};
  // Between the first retransmission (4244 us) and the second (8439 us), with milliseconds to
  // spare either side: on the DPDK path time is real and a poll may come late.
  x.peer_response(6500, Packet{O::RcAck, s + 4, ack3});
  Text t;
  t.tail_us = "1000";
  t.qp_extra = "timeout = " + std::to_string(kTimeout) + "\nretry_cnt = 7\nmax_rd_atomic = 4\n";
  t.sections =
      "\n[wr write]\nqp = responder\nopcode = write\nmr = data\noffset = 0\nlength = 1500\nremote_va = 0x10000\nrkey = " +
      hex(kPeerRkey) +
      "\nat_us = 0\n"
      "\n[wr read]\nqp = responder\nopcode = read\nmr = data\noffset = 2048\nlength = 1500\nremote_va = 0x20000\nrkey = " +
      hex(kPeerRkey) +
      "\nat_us = 0\n"
      "\n[wr send]\nqp = responder\nopcode = send\nmr = data\noffset = 1024\nlength = 64\nat_us = 50\n";
  t.expect = "wc.ok = 3\ncounter.retransmit_timeouts = 1\ncounter.tail_probes = 1\ncounter.oldest_probes = 5\ncounter.early_retransmits = 0\n";
  c.scenario = scenario_text(c.name, c.pins, t);
  return c;
}

}  // namespace

std::vector<GoldenCase> golden_cases() {
  std::vector<GoldenCase> v;
  v.push_back(inorder_write_send_read());
  v.push_back(gap_nak());
  v.push_back(duplicate_send_write());
  v.push_back(duplicate_read());
  v.push_back(duplicate_atomic());
  v.push_back(bad_rkey());
  v.push_back(bad_icrc());
  v.push_back(ce_cnp());
  v.push_back(rnr_nak());
  v.push_back(noise_rocev1());
  v.push_back(requester_write_read());
  return v;
}

}  // namespace roce::goldens
