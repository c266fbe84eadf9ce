// CPU cycles per packet on the engine's own paths, without a PMD: a requester engine and a
// responder engine exchange frames through memory on this thread, and rte_rdtsc brackets each
// call: transmit() of the requester (data packets), receive() of the responder (data), the
// responder's transmit() (ACKs) and the requester's receive() (ACKs). The responder answers each
// exchange's frames with one coalesced ACK, so an ACK's cost grows with the messages it
// completes: the 64 B case runs with 32 frames per exchange (one ACK completes 32 WRITEs) and
// with one (one ACK per WRITE), and every figure notes the messages each ACK completed.
#include <rte_cycles.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <vector>

#include "bench/suite/big_buffer.hpp"
#include "bench/suite/cases.hpp"
#include "bench/suite/rig.hpp"

namespace roce::bench {
namespace {

constexpr proto::MacAddr kMacA{0x02, 0, 0, 0, 0x0D, 0x01};
constexpr proto::MacAddr kMacB{0x02, 0, 0, 0, 0x0D, 0x02};
constexpr proto::Ipv4Addr kIpA{10, 0, 13, 1};
constexpr proto::Ipv4Addr kIpB{10, 0, 13, 2};
constexpr unsigned kBurst = 32;
constexpr std::uint32_t kFrameBytes = 4096 + 512;

rdma::EngineConfig config_of(proto::MacAddr mac, proto::Ipv4Addr ip, proto::MacAddr peer, const rdma::TransportTuning& tuning) {
  rdma::EngineConfig cfg;
  cfg.tuning = tuning;
  cfg.path.local.mac = mac;
  cfg.path.local.ip = rdma::IpAddress::ipv4(ip);
  cfg.path.resolve_mac = [peer](const rdma::IpAddress&) { return std::optional<proto::MacAddr>(peer); };
  return cfg;
}

struct Totals {
  std::uint64_t tx_data_cycles = 0, rx_data_cycles = 0, tx_ack_cycles = 0, rx_ack_cycles = 0;
  std::uint64_t data = 0, acks = 0;
};

}  // namespace

bool cycles_per_packet(const SuiteConfig& c, Results& out) {
  struct Shape {
    std::uint32_t payload, message;
    ibv_mtu mtu;
    unsigned burst;  // data frames per exchange (the responder ACKs each exchange once)
    // Selective repeat (docs/loss.md, part 2): each exchange's first frame arrives last, so the
    // rest wait behind a hole; `placement`: held WRITE MIDDLEs placed at once (else copied whole).
    bool hole = false;
    bool placement = true;
  };
  std::vector<std::byte> src(1u << 20, std::byte{7});
  std::span<std::byte> dst = big_buffers(c.big_bytes).b;
  for (const Shape shape : {Shape{64, 64, IBV_MTU_1024, kBurst}, Shape{64, 64, IBV_MTU_1024, 1},
                            Shape{1024, 65536, IBV_MTU_1024, kBurst}, Shape{4096, 65536, IBV_MTU_4096, kBurst},
                            Shape{4096, 65536, IBV_MTU_4096, kBurst, true, true}, Shape{4096, 65536, IBV_MTU_4096, kBurst, true, false}}) {
    rdma::MrTable mrs;
    rdma::TransportTuning tuning = c.tuning;
    tuning.reorder_placement = shape.placement;
    rdma::Engine ea(config_of(kMacA, kIpA, kMacB, tuning), mrs);
    rdma::Engine eb(config_of(kMacB, kIpB, kMacA, tuning), mrs);
    const rdma::PdHandle pa = ea.alloc_pd(), pb = eb.alloc_pd();
    auto smr = mrs.register_region(pa, src.data(), src.size(), IBV_ACCESS_LOCAL_WRITE);
    auto dmr = mrs.register_region(pb, dst.data(), dst.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    auto cqa = ea.create_cq(4096), cqb = eb.create_cq(4096);
    if (!smr.ok() || !dmr.ok() || !cqa.ok() || !cqb.ok()) return false;
    rdma::QueuePair* qa = make_qp(ea, pa, *cqa, 1024);
    rdma::QueuePair* qb = make_qp(eb, pb, *cqb, 1024);
    const QpSetOptions qo{1, shape.mtu, 1024, 14, shape.hole ? 64u : 0u};
    if (!qa || !qb || !bring_up(ea, qa, qb->qpn(), kIpB, qo, 0x2000, 0x1000) || !bring_up(eb, qb, qa->qpn(), kIpA, qo, 0x1000, 0x2000))
      return false;

    std::vector<std::byte> storage(2 * kBurst * kFrameBytes);
    std::array<rdma::TxFrame, kBurst> data_frames, ack_frames;
    for (unsigned i = 0; i < kBurst; ++i) {
      data_frames[i] = rdma::TxFrame{storage.data() + i * kFrameBytes, kFrameBytes, 0};
      ack_frames[i] = rdma::TxFrame{storage.data() + (kBurst + i) * kFrameBytes, kFrameBytes, 0};
    }
    const std::uint64_t slots = dst.size() / shape.message;
    const std::uint32_t batch = std::max<std::uint32_t>(1, shape.burst * shape.payload / shape.message);
    const std::span<rdma::TxFrame> data_span = std::span(data_frames).first(shape.burst);
    std::uint64_t posted = 0, completed = 0, slot = 0;
    const double ns_per_cycle = 1e9 / static_cast<double>(rte_get_tsc_hz());
    const std::uint64_t tsc0 = rte_rdtsc();
    auto now = [&] { return static_cast<Nanos>(static_cast<double>(rte_rdtsc() - tsc0) * ns_per_cycle); };

    Figure tx{"cycles", {}, "cycles/packet", {}, {}};
    tx.with("burst", shape.burst);
    if (shape.hole) tx.with("behind_a_hole", shape.placement ? "placed" : "copied");
    Figure rx = tx, txack = tx, rxack = tx;
    tx.with("path", "requester transmit (data)").with("payload", shape.payload);
    rx.with("path", "responder receive (data)").with("payload", shape.payload);
    txack.with("path", "responder transmit (ACK)").with("payload", shape.payload);
    rxack.with("path", "requester receive (ACK)").with("payload", shape.payload);
    for (unsigned run = 0; run <= c.runs; ++run) {  // run 0 warms up
      Totals t;
      const auto t0 = std::chrono::steady_clock::now();
      while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < c.window / 2) {
        while (posted - completed < 4 * batch) {
          std::array<ibv_sge, kBurst> sg;
          std::array<ibv_send_wr, kBurst> wr{};
          for (unsigned k = 0; k < batch; ++k) {
            sg[k] = ibv_sge{reinterpret_cast<std::uint64_t>(src.data()), shape.message, (*smr)->lkey()};
            wr[k].wr_id = posted + k + 1;
            wr[k].opcode = IBV_WR_RDMA_WRITE;
            wr[k].sg_list = &sg[k];
            wr[k].num_sge = 1;
            wr[k].send_flags = k + 1 == batch ? IBV_SEND_SIGNALED : 0;
            wr[k].wr.rdma.remote_addr = reinterpret_cast<std::uint64_t>(dst.data() + (slot++ % slots) * shape.message);
            wr[k].wr.rdma.rkey = (*dmr)->rkey();
            wr[k].next = k + 1 == batch ? nullptr : &wr[k + 1];
          }
          ibv_send_wr* bad = nullptr;
          if (ea.post_send(qa, wr.data(), &bad) != 0) return false;
          posted += batch;
        }
        std::uint64_t c0 = rte_rdtsc();
        const std::size_t n = ea.transmit(data_span, now());
        std::uint64_t c1 = rte_rdtsc();
        t.tx_data_cycles += c1 - c0;
        t.data += n;
        const Nanos at = now();
        c0 = rte_rdtsc();
        for (std::size_t i = 0; i < n; ++i) {
          const std::size_t j = shape.hole ? (i + 1) % n : i;  // the first frame last
          eb.receive({data_frames[j].data, data_frames[j].length}, at);
        }
        c1 = rte_rdtsc();
        t.rx_data_cycles += c1 - c0;
        c0 = rte_rdtsc();
        const std::size_t m = eb.transmit(ack_frames, at);
        c1 = rte_rdtsc();
        t.tx_ack_cycles += c1 - c0;
        t.acks += m;
        c0 = rte_rdtsc();
        for (std::size_t i = 0; i < m; ++i) ea.receive({ack_frames[i].data, ack_frames[i].length}, at);
        c1 = rte_rdtsc();
        t.rx_ack_cycles += c1 - c0;
        ibv_wc wc[16];
        int k;
        while ((k = ea.poll_cq(*cqa, 16, wc)) > 0)
          for (int i = 0; i < k; ++i) {
            if (wc[i].status != IBV_WC_SUCCESS) return false;
            completed = wc[i].wr_id;
          }
        ea.advance(now());
        eb.advance(now());
      }
      if (run == 0 || t.data == 0) continue;
      tx.samples.push_back(static_cast<double>(t.tx_data_cycles) / static_cast<double>(t.data));
      rx.samples.push_back(static_cast<double>(t.rx_data_cycles) / static_cast<double>(t.data));
      if (t.acks) {
        txack.samples.push_back(static_cast<double>(t.tx_ack_cycles) / static_cast<double>(t.acks));
        rxack.samples.push_back(static_cast<double>(t.rx_ack_cycles) / static_cast<double>(t.acks));
      }
      txack.note("acks_per_data_packet", static_cast<double>(t.acks) / static_cast<double>(t.data));
      if (t.acks)
        rxack.note("messages_per_ack", static_cast<double>(t.data) * shape.payload / shape.message / static_cast<double>(t.acks));
    }
    rxack.note("icrc_template_misses", static_cast<double>(ea.icrc_template_misses() + eb.icrc_template_misses()));
    const Health h = health_of(eb);
    if (shape.hole) {
      rx.note("held_behind_hole", static_cast<double>(h.held));
      rx.note("placed_of_held", h.held ? static_cast<double>(h.placed) / static_cast<double>(h.held) : 0.0);
    }
    if (h.drops + h.parse_drops + h.errors + health_of(ea).retransmitted != 0)
      std::fprintf(stderr, "cycles: unexpected drops/errors/retransmissions\n");
    out.add(std::move(tx));
    out.add(std::move(rx));
    out.add(std::move(txack));
    out.add(std::move(rxack));
  }
  return true;
}

}  // namespace roce::bench
