// What one dataplane worker achieves on RDMA WRITEs, next to two references measured in the
// same run on the same frames:
//   baseline  a raw forwarder on a net_ring port: rx burst, swap MACs, tx burst back out;
//   ceiling   per frame, memcpy into a buffer larger than the LLC plus ISA-L crc32_gzip_refl
//             over it: the copy and the ICRC the receive path cannot avoid.
// Measured (each from frames pre-loaded into the port's RX ring, timing only the consumer):
//   responder  one run-to-completion worker taking WRITEs (parse, ICRC check, copy into
//              registered memory, ACKs out);
//   end-to-end a requester dataplane and a responder dataplane, one worker each, stepped
//              alternately on this one thread: verbs post/poll, both sides' packet work.
// For 64 B WRITE_ONLY messages (message rate) and 64 KiB messages at a 4 KiB path MTU
// (goodput). Prints figures and ratios, asserts none of them; fails only if the transport
// misbehaves (drops, NAKs, wrong memory).
//
//   dataplane_bench [EAL args -- ] [--seconds S]   (default EAL: --no-huge --no-pci -m 1024)
#include <isa-l/crc.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/dataplane.hpp"
#include "dataplane/eal.hpp"
#include "dataplane/ring_port.hpp"
#include "protocol/builder.hpp"

namespace {

using namespace roce;
using namespace roce::dp;
using proto::Opcode;
using Clock = std::chrono::steady_clock;

constexpr unsigned kRound = 2048;  // frames pre-loaded per timed round (the rings hold 4096)
constexpr proto::MacAddr kPeerMac{0x02, 0, 0, 0, 0x0B, 0x02};
constexpr proto::Ipv4Addr kPeerIp{10, 0, 11, 2};
constexpr proto::MacAddr kDutMac{0x02, 0, 0, 0, 0x0B, 0x01};
constexpr proto::Ipv4Addr kDutIp{10, 0, 11, 1};
constexpr std::uint32_t kPeerQpn = 0x4242;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Workload {
  const char* name;
  std::uint32_t payload;       // bytes per packet
  std::uint32_t message;       // bytes per WRITE
  ibv_mtu mtu;
  std::uint32_t pmtu() const { return 256u << (mtu - 1); }
  std::uint32_t packets_per_message() const { return message / payload; }
};

// Timed samples of a few thousand packets each; the figure is their median rate, so a sample
// that lost its CPU to another process does not drag it down.
struct Figure {
  double seconds = 0;  // sum over samples
  std::uint64_t packets = 0;
  std::uint32_t payload = 0;  // bytes per packet
  std::vector<double> rates;  // packets per second of each sample
  void add(double s, std::uint64_t n) {
    seconds += s;
    packets += n;
    if (s > 0) rates.push_back(static_cast<double>(n) / s);
  }
  double pps() const {
    if (rates.empty()) return 0;
    std::vector<double> r = rates;
    std::nth_element(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(r.size() / 2), r.end());
    return r[r.size() / 2];
  }
  double mpps() const { return pps() / 1e6; }
  double gbps() const { return pps() * payload * 8 / 1e9; }
};

// A large registered target, touched once so page faults stay out of the timings.
struct BigBuffer {
  explicit BigBuffer(std::size_t n) : bytes(n) { std::memset(bytes.data(), 1, n); }
  std::vector<std::byte> bytes;
};

std::size_t llc_bytes() {
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return l3 > 0 ? static_cast<std::size_t>(l3) : 32u << 20;
}

// The WRITE request frames a peer sends for message `m` (its packets get PSNs from `psn`).
class WriteFrames {
 public:
  WriteFrames(const Workload& w, std::uint32_t dest_qpn, std::uint32_t rkey, std::byte* target, std::size_t target_len)
      : w_(w), target_(target), slots_(target_len / w.message) {
    spec_.eth.src = kPeerMac;
    spec_.eth.dst = kDutMac;
    spec_.ipv4.src = kPeerIp;
    spec_.ipv4.dst = kDutIp;
    spec_.udp_src_port = 0xC0DE;
    spec_.bth.pkey.set(0xFFFF);
    spec_.bth.dest_qp.set(dest_qpn);
    spec_.pmtu = w.pmtu();
    rkey_ = rkey;
    payload_.resize(w.payload);
    for (std::size_t i = 0; i < payload_.size(); ++i) payload_[i] = static_cast<std::byte>(i * 7 + 1);
  }
  // Packet `k` (counting from 0 over the whole run) into `out`; returns its length.
  std::size_t build(std::uint64_t k, std::span<std::byte> out) {
    const std::uint32_t ppm = w_.packets_per_message();
    const std::uint64_t m = k / ppm;
    const std::uint32_t i = static_cast<std::uint32_t>(k % ppm);
    proto::FrameSpec s = spec_;
    s.bth.psn.set(static_cast<std::uint32_t>(k & 0xFFFFFF));
    Opcode op = ppm == 1 ? Opcode::RcWriteOnly
                         : (i == 0 ? Opcode::RcWriteFirst : (i + 1 == ppm ? Opcode::RcWriteLast : Opcode::RcWriteMiddle));
    s.bth.opcode = proto::raw(op);
    s.bth.set_ack_requested(op == Opcode::RcWriteOnly || op == Opcode::RcWriteLast);
    if (i == 0) {
      const std::uint64_t va = reinterpret_cast<std::uint64_t>(target_ + (m % slots_) * w_.message);
      s.ext.reth = proto::Reth{proto::Be64::of(va), proto::Be32::of(rkey_), proto::Be32::of(w_.message)};
    }
    const auto l = proto::build_frame(s, payload_, out, proto::CrcBackend::Isal);
    return l.ok() ? l.length : 0;
  }

 private:
  Workload w_;
  std::byte* target_;
  std::size_t slots_;
  std::uint32_t rkey_ = 0;
  proto::FrameSpec spec_;
  std::vector<std::byte> payload_;
};

// Brings a QP to RTS towards `peer_qpn` at `peer_ip`, expecting `rq_psn` first.
bool bring_up(Engine& e, QueuePair* qp, std::uint32_t peer_qpn, proto::Ipv4Addr peer_ip, ibv_mtu mtu, std::uint32_t rq_psn,
              std::uint32_t sq_psn) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  if (!e.modify_qp(qp, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS).ok()) return false;
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = mtu;
  a.dest_qp_num = peer_qpn;
  a.rq_psn = rq_psn;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = gid_from_ip(IpAddress::ipv4(peer_ip));
  a.ah_attr.port_num = 1;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  if (!e.modify_qp(qp, a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
           .ok())
    return false;
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = sq_psn;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  return e.modify_qp(qp, a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                IBV_QP_MAX_QP_RD_ATOMIC)
      .ok();
}

QueuePair* make_qp(Engine& e, PdHandle pd, CompletionQueue** cq_out) {
  auto cq = e.create_cq(4096);
  if (!cq.ok()) return nullptr;
  QpInit init;
  init.send_cq = *cq;
  init.recv_cq = *cq;
  init.cap = ibv_qp_cap{1024, 16, 1, 1, 0};
  auto qp = e.create_qp(pd, init);
  *cq_out = *cq;
  return qp.ok() ? *qp : nullptr;
}

int g_unique = 0;
std::string unique(const char* base) { return base + std::to_string(g_unique++); }

std::unique_ptr<Dataplane> make_dataplane(const std::string& name, std::uint16_t port, proto::MacAddr mac, proto::Ipv4Addr ip) {
  DataplaneOptions o;
  o.name = name;
  o.port.name = std::to_string(port);
  o.mac = mac;
  o.ip = IpAddress::ipv4(ip);
  o.mbufs = 3 * kRound - 1;
  auto d = Dataplane::create(o);
  if (!d.ok()) {
    std::fprintf(stderr, "dataplane: %s\n", d.error().message.c_str());
    return nullptr;
  }
  return std::move(*d);
}

// Loads one round of frames into `rx_of`'s RX ring by transmitting them on `feeder`.
bool preload(std::uint16_t feeder, rte_mempool* pool, WriteFrames& frames, std::uint64_t first, unsigned n) {
  std::array<rte_mbuf*, kRound> m;
  if (rte_pktmbuf_alloc_bulk(pool, m.data(), n) != 0) return false;
  for (unsigned i = 0; i < n; ++i) {
    const std::size_t len = frames.build(first + i, {rte_pktmbuf_mtod(m[i], std::byte*), rte_pktmbuf_tailroom(m[i])});
    if (len == 0) return false;
    m[i]->data_len = static_cast<std::uint16_t>(len);
    m[i]->pkt_len = static_cast<std::uint32_t>(len);
  }
  unsigned sent = 0;
  while (sent < n) sent += rte_eth_tx_burst(feeder, 0, m.data() + sent, static_cast<std::uint16_t>(n - sent));
  return true;
}

void drain(std::uint16_t port) {
  std::array<rte_mbuf*, 32> m;
  while (const std::uint16_t n = rte_eth_rx_burst(port, 0, m.data(), 32)) rte_pktmbuf_free_bulk(m.data(), n);
}

// A raw feeder port and a fresh pool for it.
struct Feeder {
  RingPair ports;
  rte_mempool* pool = nullptr;
  ~Feeder() {
    if (pool) rte_mempool_free(pool);
  }
};

bool make_feeder(Feeder& f, bool open_both) {
  auto pair = make_ring_pair(unique("bfa"), unique("bfb"));
  if (!pair.ok()) return false;
  f.ports = *pair;
  f.pool = rte_pktmbuf_pool_create(unique("bfpool").c_str(), 3 * kRound - 1, 256, 0, 4096 + 512 + RTE_PKTMBUF_HEADROOM,
                                   SOCKET_ID_ANY);
  if (!f.pool) return false;
  PortOptions po;
  po.name = std::to_string(f.ports.a);
  if (!open_port(po, f.pool).ok()) return false;
  if (open_both) {
    po.name = std::to_string(f.ports.b);
    if (!open_port(po, f.pool).ok()) return false;
  }
  return true;
}

// (a) rx -> swap MACs -> tx on port b. The frames are built once; each round sends the ones
// that came back through port a out again.
Figure forward_baseline(const Workload& w, double budget) {
  Feeder f;
  if (!make_feeder(f, true)) return {};
  BigBuffer dummy(w.message);
  WriteFrames frames(w, 0x11, 0, dummy.bytes.data(), dummy.bytes.size());
  if (!preload(f.ports.a, f.pool, frames, 0, kRound)) return {};
  Figure fig;
  fig.payload = w.payload;
  std::array<rte_mbuf*, kRound> back;
  while (fig.seconds < budget) {
    unsigned done = 0;
    const auto t0 = Clock::now();
    std::array<rte_mbuf*, 32> m;
    while (done < kRound) {
      const std::uint16_t n = rte_eth_rx_burst(f.ports.b, 0, m.data(), 32);
      for (std::uint16_t i = 0; i < n; ++i) {
        auto* eth = rte_pktmbuf_mtod(m[i], rte_ether_hdr*);
        std::swap(eth->src_addr, eth->dst_addr);
      }
      std::uint16_t sent = 0;
      while (sent < n) sent += rte_eth_tx_burst(f.ports.b, 0, m.data() + sent, static_cast<std::uint16_t>(n - sent));
      done += n;
    }
    fig.add(seconds_since(t0), kRound);
    unsigned got = 0;
    while (got < kRound) got += rte_eth_rx_burst(f.ports.a, 0, back.data() + got, static_cast<std::uint16_t>(std::min(32u, kRound - got)));
    unsigned sent = 0;
    while (sent < kRound) sent += rte_eth_tx_burst(f.ports.a, 0, back.data() + sent, static_cast<std::uint16_t>(kRound - sent));
  }
  drain(f.ports.b);
  close_port(f.ports.a);
  close_port(f.ports.b);
  return fig;
}

// The ceiling: for the same frames, memcpy each into `big` (sequentially, wrapping) and run
// ISA-L's CRC-32 over the copy.
Figure memcpy_crc_ceiling(const Workload& w, BigBuffer& big, double budget) {
  BigBuffer dummy(w.message);
  WriteFrames frames(w, 0x11, 0, dummy.bytes.data(), dummy.bytes.size());
  std::vector<std::byte> src(std::size_t{kRound} * (w.payload + 128));
  std::vector<std::size_t> len(kRound), off(kRound);
  std::size_t at = 0;
  for (unsigned i = 0; i < kRound; ++i) {
    off[i] = at;
    len[i] = frames.build(i, {src.data() + at, w.payload + 128});
    at += len[i];
  }
  Figure fig;
  fig.payload = w.payload;
  std::size_t dst = 0;
  std::uint32_t sink = 0;
  while (fig.seconds < budget) {
    const auto t0 = Clock::now();
    for (unsigned i = 0; i < kRound; ++i) {
      if (dst + len[i] > big.bytes.size()) dst = 0;
      auto* d = reinterpret_cast<unsigned char*>(big.bytes.data() + dst);
      std::memcpy(d, src.data() + off[i], len[i]);
      sink ^= crc32_gzip_refl(0, d, len[i]);
      dst += (len[i] + 63) & ~std::size_t{63};
    }
    fig.add(seconds_since(t0), kRound);
  }
  if (sink == 0x12345678) std::puts("");  // keeps the CRCs from being optimised away
  return fig;
}

// Drops, NAKs and errors mean the figures are not of a working transport: the run fails.
// Retransmissions (a timeout while this thread was descheduled) are only reported.
bool healthy(const Engine& e, const QueuePair& qp, const char* what) {
  std::uint64_t parse = 0;
  for (std::size_t i = 1; i < static_cast<std::size_t>(proto::ParseError::Count); ++i)
    parse += e.parse_drops(static_cast<proto::ParseError>(i));
  std::uint64_t drops = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(EngineDrop::Count); ++i) drops += e.drops(static_cast<EngineDrop>(i));
  const Counters& c = qp.counters();
  const std::uint64_t errors = c.get(Counter::NaksSent) + c.get(Counter::NaksReceived) + c.get(Counter::RemoteAccessErrors) +
                               c.get(Counter::WcErrors) + c.get(Counter::OpcodeSequenceErrors);
  if (const std::uint64_t r = c.get(Counter::RetransmittedPkts) + c.get(Counter::DuplicateRequest))
    std::fprintf(stderr, "note: %s saw %llu retransmitted or duplicate packets\n", what, static_cast<unsigned long long>(r));
  if (parse + drops + errors == 0) return true;
  std::fprintf(stderr, "%s: the transport misbehaved: %llu drops, %llu parse drops, %llu NAKs/errors\n", what,
               static_cast<unsigned long long>(drops), static_cast<unsigned long long>(parse),
               static_cast<unsigned long long>(errors));
  return false;
}

// (b)/(c) one worker as responder: frames preloaded, the worker polled until it has taken
// them all and sent its ACKs.
Figure responder_worker(const Workload& w, BigBuffer& big, double budget, bool& ok) {
  Feeder f;
  if (!make_feeder(f, false)) return {};
  auto dut = make_dataplane(unique("bdut"), f.ports.b, kDutMac, kDutIp);
  if (!dut) return {};
  dut->arp().learn(kPeerIp, kPeerMac);
  Engine& e = dut->worker(0).engine();
  const PdHandle pd = e.alloc_pd();
  auto mr = dut->memory().register_region(pd, big.bytes.data(), big.bytes.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  CompletionQueue* cq = nullptr;
  QueuePair* qp = make_qp(e, pd, &cq);
  if (!qp || !mr.ok() || !bring_up(e, qp, kPeerQpn, kPeerIp, w.mtu, 0, 0)) {
    std::fprintf(stderr, "responder set-up failed\n");
    return {};
  }
  WriteFrames frames(w, qp->qpn(), (*mr)->rkey(), big.bytes.data(), big.bytes.size());
  Worker& worker = dut->worker(0);
  Figure fig;
  fig.payload = w.payload;
  std::uint64_t k = 0;
  while (fig.seconds < budget) {
    if (!preload(f.ports.a, f.pool, frames, k, kRound)) return {};
    const std::uint64_t target = worker.stats().rx_packets + kRound;
    const auto t0 = Clock::now();
    while (worker.stats().rx_packets < target || e.has_tx_work()) dut->poll_once();
    dut->flush();
    fig.add(seconds_since(t0), kRound);
    drain(f.ports.a);
    k += kRound;
  }
  ok = healthy(e, *qp, "responder") && qp->counters().get(Counter::RcvdPkts) == k;
  if (qp->counters().get(Counter::RcvdPkts) != k) std::fprintf(stderr, "responder took %llu of %llu packets\n",
                                                               static_cast<unsigned long long>(qp->counters().get(Counter::RcvdPkts)),
                                                               static_cast<unsigned long long>(k));
  worker.release_stash();
  close_port(f.ports.a);
  return fig;
}

// Requester and responder dataplanes stepped on this thread; `depth` WRITEs outstanding, one
// completion every 32.
Figure end_to_end(const Workload& w, BigBuffer& big, double budget, bool& ok) {
  auto pair = make_ring_pair(unique("bea"), unique("beb"));
  if (!pair.ok()) return {};
  auto req = make_dataplane(unique("breq"), pair->a, kPeerMac, kPeerIp);
  auto resp = make_dataplane(unique("bresp"), pair->b, kDutMac, kDutIp);
  if (!req || !resp) return {};
  req->arp().learn(kDutIp, kDutMac);
  resp->arp().learn(kPeerIp, kPeerMac);
  Engine& ea = req->worker(0).engine();
  Engine& eb = resp->worker(0).engine();
  std::vector<std::byte> src(w.message, std::byte{0x77});
  const PdHandle pa = ea.alloc_pd(), pb = eb.alloc_pd();
  auto smr = req->memory().register_region(pa, src.data(), src.size(), IBV_ACCESS_LOCAL_WRITE);
  auto dmr = resp->memory().register_region(pb, big.bytes.data(), big.bytes.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  CompletionQueue *cqa = nullptr, *cqb = nullptr;
  QueuePair* qa = make_qp(ea, pa, &cqa);
  QueuePair* qb = make_qp(eb, pb, &cqb);
  if (!qa || !qb || !smr.ok() || !dmr.ok() || !bring_up(ea, qa, qb->qpn(), kDutIp, w.mtu, 0x500, 0x100) ||
      !bring_up(eb, qb, qa->qpn(), kPeerIp, w.mtu, 0x100, 0x500)) {
    std::fprintf(stderr, "end-to-end set-up failed\n");
    return {};
  }
  const std::size_t slots = big.bytes.size() / w.message;
  const std::uint64_t depth = std::max<std::uint64_t>(32, std::min<std::uint64_t>(512, 512 * 1024 / w.message));
  std::uint64_t posted = 0, completed = 0;
  ibv_sge sg{reinterpret_cast<std::uint64_t>(src.data()), w.message, (*smr)->lkey()};
  const auto t0 = Clock::now();
  Figure fig;
  fig.payload = w.payload;
  ibv_wc wc[16];
  auto sample_start = t0;
  std::uint64_t sample_first = 0;
  while (seconds_since(t0) < budget) {
    while (posted - completed + 32 <= depth) {
      std::array<ibv_send_wr, 32> wr{};
      for (unsigned i = 0; i < 32; ++i) {
        wr[i].wr_id = posted + i;
        wr[i].opcode = IBV_WR_RDMA_WRITE;
        wr[i].sg_list = &sg;
        wr[i].num_sge = 1;
        wr[i].send_flags = i == 31 ? IBV_SEND_SIGNALED : 0;
        wr[i].wr.rdma.remote_addr = reinterpret_cast<std::uint64_t>(big.bytes.data() + ((posted + i) % slots) * w.message);
        wr[i].wr.rdma.rkey = (*dmr)->rkey();
        wr[i].next = i == 31 ? nullptr : &wr[i + 1];
      }
      ibv_send_wr* bad = nullptr;
      if (ea.post_send(qa, wr.data(), &bad) != 0) break;
      posted += 32;
    }
    req->poll_once();
    resp->poll_once();
    const int n = ea.poll_cq(cqa, 16, wc);
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        std::fprintf(stderr, "end-to-end: completion %s\n", ibv_wc_status_str(wc[i].status));
        ok = false;
        return {};
      }
      completed = wc[i].wr_id + 1;
    }
    if ((completed - sample_first) * w.packets_per_message() >= kRound) {
      fig.add(seconds_since(sample_start), (completed - sample_first) * w.packets_per_message());
      sample_start = Clock::now();
      sample_first = completed;
    }
  }
  // Let the rest finish so both sides end clean.
  const auto t1 = Clock::now();
  while (completed < posted && seconds_since(t1) < 5) {
    req->poll_once();
    resp->poll_once();
    const int n = ea.poll_cq(cqa, 16, wc);
    for (int i = 0; i < n; ++i) completed = wc[i].wr_id + 1;
  }
  ok = completed == posted && healthy(ea, *qa, "end-to-end requester") && healthy(eb, *qb, "end-to-end responder") &&
       std::all_of(big.bytes.begin(), big.bytes.begin() + w.message, [](std::byte b) { return b == std::byte{0x77}; });
  return fig;
}

std::string fixed(double v, int digits) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string prefix = "--file-prefix=roce_dp_bench_" + std::to_string(getpid());
  const SplitArgs args = split_args(argc, argv, {"--no-huge", "--no-pci", "-m", "1024", prefix, "--log-level=error", "--no-telemetry"});
  double seconds = 0.25;  // per figure
  for (std::size_t i = 1; i + 1 < args.app.size(); ++i)
    if (args.app[i] == "--seconds") seconds = std::stod(args.app[i + 1]);
  if (const auto s = Eal::init(args.eal); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.error().message.c_str());
    return 1;
  }
  const std::size_t llc = llc_bytes();
  const std::size_t big_len = std::clamp<std::size_t>(llc + (64u << 20), 128u << 20, 1u << 30);
  BigBuffer big(big_len);

  const Workload workloads[] = {
      {"64 B WRITE_ONLY", 64, 64, IBV_MTU_1024},
      {"64 KiB WRITE, 4 KiB MTU", 4096, 65536, IBV_MTU_4096},
  };
  bool ok = true;
  std::printf("dataplane_bench: one thread, net_ring ports, %u-frame rounds, %.2f s per figure; target and ceiling buffer %zu MiB "
              "(reported LLC %zu MiB)\n\n",
              kRound, seconds, big_len >> 20, llc >> 20);
  std::printf("| workload | measurement | Mpps | payload Gbit/s | ns/packet | vs forwarding | vs memcpy+ICRC |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|\n");
  for (const Workload& w : workloads) {
    const Figure base = forward_baseline(w, seconds);
    const Figure ceil = memcpy_crc_ceiling(w, big, seconds);
    bool resp_ok = false, e2e_ok = false;
    const Figure resp = responder_worker(w, big, seconds, resp_ok);
    const Figure e2e = end_to_end(w, big, seconds, e2e_ok);
    ok = ok && resp_ok && e2e_ok && base.packets && ceil.packets;
    const auto row = [&](const char* what, const Figure& f) {
      std::printf("| %s | %s | %s | %s | %s | %s | %s |\n", w.name, what, fixed(f.mpps(), 3).c_str(), fixed(f.gbps(), 2).c_str(),
                  fixed(f.packets ? 1e3 / f.mpps() : 0, 1).c_str(), fixed(base.mpps() > 0 ? f.mpps() / base.mpps() : 0, 3).c_str(),
                  fixed(ceil.mpps() > 0 ? f.mpps() / ceil.mpps() : 0, 3).c_str());
    };
    row("baseline: rx -> tx forwarding", base);
    row("ceiling: memcpy + ISA-L CRC-32", ceil);
    row("responder worker", resp);
    row("end to end (requester + responder, 1 thread)", e2e);
  }
  std::printf("\nMedians of %u-packet samples. Mpps counts packets (= messages for 64 B); payload Gbit/s counts WRITE\n"
              "payload only; ratios are of packet rates. 4 KiB pages (--no-huge): TLB misses are part of every figure.\n",
              kRound);
  Eal::cleanup();
  return ok ? 0 : 1;
}
