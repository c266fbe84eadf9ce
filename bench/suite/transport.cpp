// The transport's figures: a responder worker on preloaded frames, the goodput sweep, the
// 64 B message rate, WRITE round trips, and goodput under loss.
#include <isa-l/crc.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/suite/big_buffer.hpp"
#include "bench/suite/cases.hpp"
#include "bench/suite/frames.hpp"
#include "bench/suite/traffic.hpp"
#include "lib/rdma/qp_bring_up.hpp"

namespace roce::bench {
namespace {

using namespace roce::dp;
using namespace roce::netsim;
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int g_tag = 0;
std::string tag(const char* base) { return base + std::to_string(g_tag++); }

constexpr unsigned kRound = 2048;

BigBuffers& buffers(const SuiteConfig& c) { return big_buffers(c.big_bytes); }

bool checked(const rdma::Engine& e, const char* what) {
  const Health h = health_of(e);
  if (h.drops + h.parse_drops + h.errors == 0) return true;
  std::fprintf(stderr, "%s: the transport misbehaved: %llu drops, %llu parse drops, %llu errors\n", what,
               static_cast<unsigned long long>(h.drops), static_cast<unsigned long long>(h.parse_drops),
               static_cast<unsigned long long>(h.errors));
  return false;
}

// Runs `t` for a warm-up and then c.runs windows of `window` seconds; samples in Gbit/s.
// `before` runs ahead of each window, untimed (a paired baseline). `cpu`, if given, gets each
// window's Gbit/s over this thread's CPU time instead of wall time.
bool time_windows(Traffic& t, unsigned runs, double window, std::vector<double>& samples,
                  const std::function<void()>& before = {}, std::vector<double>* cpu = nullptr) {
  const auto w0 = Clock::now();
  while (since(w0) < window / 4)
    if (!t.step()) return false;
  for (unsigned r = 0; r < runs; ++r) {
    if (before) before();
    const std::uint64_t b0 = t.bytes();
    const auto t0 = Clock::now();
    const double c0 = thread_cpu_seconds();
    double s = 0;
    do {
      for (int i = 0; i < 16; ++i)
        if (!t.step()) return false;
    } while ((s = since(t0)) < window);
    samples.push_back(static_cast<double>(t.bytes() - b0) * 8 / s / 1e9);
    if (cpu) cpu->push_back(static_cast<double>(t.bytes() - b0) * 8 / (thread_cpu_seconds() - c0) / 1e9);
  }
  return true;
}

// The ceiling the responder worker is held to, on the worker's own frames: each round preloads
// kRound frames into mbufs of the worker's pool (the same preload, the same mbufs in the same
// turn of the pool as the worker's next round), takes them off the worker's port before it polls,
// and times a memcpy of each whole frame into the worker's destination buffer and ISA-L's CRC-32
// over the copy; the mbufs then go back to the pool. ceiling_window copies frames built once into
// a buffer of their own and read again every round, which stay in cache; the worker's come from a
// pool three rounds long, a round's frames all written (8.6 MB at 4 KiB) before the first is read,
// and on this host came from memory at twice the cycles: that ceiling did less memory work per
// frame than the worker it was held against (docs/perf-changes.md section 91). The copy lands at
// `cursor` in `big`, 64-byte steps, as ceiling_window's; the figure is payload Gbit/s over the
// copy loops' time.
double frames_ceiling_window(Feeder& f, WriteFrames& frames, std::uint64_t& k, std::span<std::byte> big,
                             std::size_t& cursor, std::uint32_t payload, double seconds, CeilingDetail& detail) {
  std::vector<rte_mbuf*> m(kRound);
  std::uint64_t n = 0, best = UINT64_MAX;  // TSC cycles of the fastest round
  double busy = 0, busy_cpu = 0;
  std::uint32_t sink = 0;
  do {
    if (!preload(f.ports.a, f.pool, frames, k, kRound)) return 0;
    k += kRound;
    for (unsigned got = 0; got < kRound;)
      got += rte_eth_rx_burst(f.ports.b, 0, m.data() + got, static_cast<std::uint16_t>(std::min(32u, kRound - got)));
    const auto t0 = Clock::now();
    const double c0 = thread_cpu_seconds();
    const std::uint64_t r0 = rte_rdtsc();
    for (unsigned i = 0; i < kRound; ++i) {
      const std::size_t len = m[i]->data_len;
      if (cursor + len > big.size()) cursor = 0;
      auto* d = reinterpret_cast<unsigned char*>(big.data() + cursor);
      std::memcpy(d, rte_pktmbuf_mtod(m[i], const void*), len);
      sink ^= crc32_gzip_refl(0, d, len);
      cursor += (len + 63) & ~std::size_t{63};
    }
    best = std::min(best, rte_rdtsc() - r0);
    busy_cpu += thread_cpu_seconds() - c0;
    busy += since(t0);
    n += kRound;
    rte_pktmbuf_free_bulk(m.data(), kRound);
  } while (busy < seconds);
  if (sink == 0x12345678) std::puts("");  // keeps the CRCs from being optimised away
  const double bits = static_cast<double>(n) * payload * 8;
  detail.cpu_gbits = bits / busy_cpu / 1e9;
  detail.best_round_gbits =
      double{kRound} * payload * 8 * static_cast<double>(rte_get_tsc_hz()) / static_cast<double>(best) / 1e9;
  return bits / busy / 1e9;
}

}  // namespace

// One run-to-completion worker taking WRITEs from its RX ring (parse, ICRC check, copy into
// registered memory, ACKs out), frames preloaded by a feeder port: the receive path of one
// lcore alone. Samples in payload Gbit/s.
bool responder_worker(const SuiteConfig& c, std::uint32_t payload, std::uint32_t message, Results& out) {
  Feeder f;
  if (!make_feeder(f, tag("rw"), false, 3 * kRound - 1)) return false;
  DataplaneOptions o;
  o.name = tag("bsrw");
  o.port.name = std::to_string(f.ports.b);
  o.mac = kDutMac;
  o.ip = rdma::IpAddress::ipv4(kDutIp);
  o.mbufs = 3 * kRound - 1;
  o.engine.tuning = c.tuning;
  o.group_qp_runs = c.qp_runs;
  auto dp = Dataplane::create(o);
  if (!dp.ok()) return false;
  Dataplane& dut = **dp;
  dut.arp().learn(kPeerIp, kPeerMac);
  Worker& worker = dut.worker(0);
  rdma::Engine& e = worker.engine();
  const rdma::PdHandle pd = e.alloc_pd();
  Region dst;
  if (!register_region(dut, pd, dst, buffers(c).b)) return false;
  rdma::QueuePair* qp = make_write_target_qp(e, pd, kPeerQpn, payload);
  if (qp == nullptr) return false;
  WriteFrames frames(payload, message, payload <= 1024 ? 1024 : 4096, qp->qpn(), dst.mr->rkey(), dst.bytes.data(),
                     dst.bytes.size());
  // The ceiling's frames: the same shape from the same pool, taken off the port before the
  // worker polls (frames_ceiling_window), with a PSN sequence of their own.
  WriteFrames ceiling_frames(payload, message, payload <= 1024 ? 1024 : 4096, qp->qpn(), dst.mr->rkey(),
                             dst.bytes.data(), dst.bytes.size());
  std::uint64_t ceiling_k = 0;
  std::size_t ceiling_cursor = 0;
  Figure fig{"responder_worker", {}, "Gbit/s", {}, {}};
  fig.with("verb", "WRITE").with("payload", payload).with("size", message);
  // The load of this shared machine drifts: each sample is also divided by a ceiling window
  // measured right before it, so the ratio compares like with like.
  Figure ratio{"responder_vs_ceiling", {}, "ratio", {}, {}};
  ratio.with("payload", payload);
  // At 64 B the floor is the protocol layer's: parse+verify of the WRITE and the window's share
  // of building its ACKs, measured right before the window.
  Figure vs_protocol{"responder_vs_protocol", {}, "ratio", {}, {}};
  vs_protocol.with("payload", payload);
  // The same over the window's CPU time: the floor leaves out descheduled time (its median
  // chunk), so on a loaded machine this is the ratio that pairs like with like.
  Figure vs_protocol_cpu{"responder_vs_protocol_cpu", {}, "ratio", {}, {}};
  vs_protocol_cpu.with("payload", payload);
  // The same two windows over this thread's CPU time: a window in which the thread lost its
  // core to another process counts only the time it ran (a vCPU taken by the host still counts).
  Figure cpu_fig{"responder_worker_cpu", {}, "Gbit/s", {}, {}};
  cpu_fig.with("payload", payload);
  Figure cpu_ratio{"responder_vs_ceiling_cpu", {}, "ratio", {}, {}};
  cpu_ratio.with("payload", payload);
  // And the best round of each window (2048 frames) over the ceiling's best round: the rounds the
  // machine left alone, the least disturbed comparison this shared guest allows.
  Figure best_ratio{"responder_vs_ceiling_best", {}, "ratio", {}, {}};
  best_ratio.with("payload", payload);
  // The paired ceiling windows themselves, over wall and CPU time: a ratio that moves with the
  // load can then be told apart into what the responder did and what the ceiling did.
  Figure ceiling_fig{"responder_ceiling", {}, "Gbit/s", {}, {}};
  ceiling_fig.with("payload", payload);
  Figure ceiling_cpu{"responder_ceiling_cpu", {}, "Gbit/s", {}, {}};
  ceiling_cpu.with("payload", payload);
  // The ceiling as sessions 1-22 measured it (ceiling_window: its own frames, reused every
  // round, in cache), right before the other, over CPU time, and the worker's CPU time over it:
  // what the source's temperature alone moves (section 91).
  Figure reused_cpu{"responder_ceiling_reused_cpu", {}, "Gbit/s", {}, {}};
  reused_cpu.with("payload", payload);
  Figure reused_ratio{"responder_vs_ceiling_reused_cpu", {}, "ratio", {}, {}};
  reused_ratio.with("payload", payload);
  // The protocol layer's parse+verify of a 64 B WRITE, timed right before each window: the
  // host's state. This guest's vCPUs run in two states minutes apart (34 or 52 ns here) that
  // slow compute, not memory bandwidth, so at 4 KiB the worker's per-frame work falls behind
  // its memory-bound ceiling in the slow one (0.65 against 0.85; perf-changes.md section 69).
  Figure host_floor{"responder_host_floor", {}, "ns", {}, {}};
  host_floor.with("payload", payload);
  std::uint64_t k = 0;
  const std::uint64_t tx0 = worker.stats().tx_packets;
  // Run 0 warms up: here the first window over the destination ran at a tenth of the others
  // (8 vs 100 Gbit/s at 4 KiB) with no page fault in it, the guest's host mapping memory in.
  for (unsigned run = 0; run <= c.runs; ++run) {
    CeilingDetail reused_detail, ceiling_detail;
    ceiling_window(buffers(c).a, payload, c.window, nullptr, &reused_detail);
    const double ceiling = frames_ceiling_window(f, ceiling_frames, ceiling_k, buffers(c).b, ceiling_cursor, payload,
                                                 c.window, ceiling_detail);
    if (ceiling == 0) return false;
    const ProtocolCost floor = c.paired_floor ? measure_protocol_cost(c.window / 2, c.tuning.icrc_linear) : ProtocolCost{};
    const std::uint64_t acks0 = worker.stats().tx_packets;
    double busy = 0, busy_cpu = 0;
    std::uint64_t n = 0, best = UINT64_MAX;  // TSC cycles of the fastest round
    while (busy < c.window) {
      if (!preload(f.ports.a, f.pool, frames, k, kRound)) return false;
      const std::uint64_t target = worker.stats().rx_packets + kRound;
      const auto t0 = Clock::now();
      const double c0 = thread_cpu_seconds();
      const std::uint64_t r0 = rte_rdtsc();
      while (worker.stats().rx_packets < target || e.has_tx_work()) dut.poll_once();
      dut.flush();
      best = std::min(best, rte_rdtsc() - r0);
      busy_cpu += thread_cpu_seconds() - c0;
      busy += since(t0);
      n += kRound;
      drain(f.ports.a);
      k += kRound;
    }
    if (run == 0) continue;
    ceiling_fig.samples.push_back(ceiling);
    ceiling_cpu.samples.push_back(ceiling_detail.cpu_gbits);
    reused_cpu.samples.push_back(reused_detail.cpu_gbits);
    fig.samples.push_back(static_cast<double>(n) * payload * 8 / busy / 1e9);
    if (ceiling > 0) ratio.samples.push_back(fig.samples.back() / ceiling);
    cpu_fig.samples.push_back(static_cast<double>(n) * payload * 8 / busy_cpu / 1e9);
    if (ceiling_detail.cpu_gbits > 0) cpu_ratio.samples.push_back(cpu_fig.samples.back() / ceiling_detail.cpu_gbits);
    if (reused_detail.cpu_gbits > 0) reused_ratio.samples.push_back(cpu_fig.samples.back() / reused_detail.cpu_gbits);
    const double best_gbits = double{kRound} * payload * 8 * static_cast<double>(rte_get_tsc_hz()) / static_cast<double>(best) / 1e9;
    if (ceiling_detail.best_round_gbits > 0) best_ratio.samples.push_back(best_gbits / ceiling_detail.best_round_gbits);
    if (floor.valid) host_floor.samples.push_back(floor.write_parse);
    if (floor.valid && payload == 64) {
      const double acks_per_packet = static_cast<double>(worker.stats().tx_packets - acks0) / static_cast<double>(n);
      const double floor_mpps = 1e3 / (floor.write_parse + acks_per_packet * floor.ack_build);
      vs_protocol.samples.push_back(static_cast<double>(n) / busy / 1e6 / floor_mpps);
      vs_protocol_cpu.samples.push_back(static_cast<double>(n) / busy_cpu / 1e6 / floor_mpps);
    }
  }
  out.add(std::move(ratio));
  out.add(std::move(cpu_fig));
  out.add(std::move(cpu_ratio));
  out.add(std::move(best_ratio));
  out.add(std::move(ceiling_fig));
  out.add(std::move(ceiling_cpu));
  out.add(std::move(reused_cpu));
  out.add(std::move(reused_ratio));
  if (!host_floor.samples.empty()) out.add(std::move(host_floor));
  if (!vs_protocol.samples.empty()) {
    out.add(std::move(vs_protocol));
    out.add(std::move(vs_protocol_cpu));
  }
  // The ACKs it sent per WRITE packet received: its share of an ACK's cost.
  fig.note("acks_per_packet", static_cast<double>(worker.stats().tx_packets - tx0) / static_cast<double>(k));
  const bool ok = checked(e, "responder worker") && qp->counters().get(rdma::Counter::RcvdPkts) == k;
  worker.release_stash();
  out.add(std::move(fig));
  return ok;
}

bool goodput_sweep(const SuiteConfig& c, Results& out) {
  auto rig = Rig::create(RigOptions{tag("gp"), -1, 1, 8191, c.tuning});
  if (!rig) return false;
  Region ra, rb;
  if (!register_region(rig->a(), rig->pda(), ra, buffers(c).a) || !register_region(rig->b(), rig->pdb(), rb, buffers(c).b))
    return false;
  const std::uint32_t largest = *std::max_element(c.sizes.begin(), c.sizes.end());
  for (const ibv_mtu mtu : {IBV_MTU_1024, IBV_MTU_4096}) {
    if (c.rate_only && mtu != IBV_MTU_1024) continue;
    for (const unsigned nqp : {1u, 16u}) {
      if (c.rate_only && nqp != 1) continue;
      const auto qps = rig->connect(QpSetOptions{nqp, mtu, 512, 14});
      if (qps.empty()) return false;
      std::vector<std::uint32_t> recvs;
      for (const Verb verb : {Verb::Write, Verb::Read, Verb::Send}) {
        if (c.rate_only && verb != Verb::Write) continue;
        for (const std::uint32_t size : c.sizes) {
          if (c.rate_only && size != 64) continue;
          const Health h0 = health_of(rig->ea());
          // Gaps between iterations of either worker long enough to hold its timers: the host
          // descheduled this thread (a 67 ms local ACK timeout needs one of those, or a loss).
          auto stalls = [&] { return rig->a().worker(0).stats().stalls + rig->b().worker(0).stats().stalls; };
          const std::uint64_t stalls0 = stalls();
          Traffic t(*rig, qps, verb, size, ra, rb, recvs, largest);
          Figure fig{"goodput", {}, "Gbit/s", {}, {}};
          fig.with("verb", to_string(verb)).with("size", size).with("mtu", 256u << (mtu - 1)).with("qps", nqp);
          // The 64 B message rate target: each window paired with the protocol layer's cost of
          // that WRITE measured right before it.
          const bool rate_case = verb == Verb::Write && size == 64 && nqp == 1 && mtu == IBV_MTU_1024;
          std::vector<ProtocolCost> floors;
          std::function<void()> before;
          if (rate_case && c.paired_floor) before = [&] { floors.push_back(measure_protocol_cost(c.window / 2, c.tuning.icrc_linear)); };
          std::vector<double> cpu;
          if (!time_windows(t, c.runs, c.window, fig.samples, before, rate_case ? &cpu : nullptr) || !t.finish(2 * kSecond))
            return false;
          const Health h1 = health_of(rig->ea());
          fig.note("retransmitted", static_cast<double>(h1.retransmitted - h0.retransmitted));
          fig.note("timeouts", static_cast<double>(h1.timeouts - h0.timeouts));
          fig.note("stalls", static_cast<double>(stalls() - stalls0));
          {
            const auto& sa = rig->a().worker(0).stats();
            const auto& sb = rig->b().worker(0).stats();
            fig.note("a_tx", static_cast<double>(sa.tx_packets)).note("b_rx", static_cast<double>(sb.rx_packets));
            fig.note("b_tx", static_cast<double>(sb.tx_packets)).note("a_rx", static_cast<double>(sa.rx_packets));
            fig.note("mbuf_fail", static_cast<double>(sa.mbuf_alloc_failures + sb.mbuf_alloc_failures));
            fig.note("tx_dropped", static_cast<double>(sa.tx_dropped + sb.tx_dropped));
            const rdma::Counters ca = rig->ea().total_counters(), cb = rig->eb().total_counters();
            fig.note("busy_drops", static_cast<double>(ca.get(rdma::Counter::ResponderBusyDrops) + cb.get(rdma::Counter::ResponderBusyDrops)));
            fig.note("naks", static_cast<double>(ca.get(rdma::Counter::NaksReceived)));
            fig.note("out_of_seq", static_cast<double>(cb.get(rdma::Counter::OutOfSeqRequest)));
          }
          if (rate_case) {
            Figure rate{"message_rate", {}, "Mpps", {}, {}};
            rate.with("verb", "WRITE").with("size", 64).with("qps", 1);
            Figure paired{"message_rate_vs_protocol", {}, "ratio", {}, {}};
            paired.with("verb", "WRITE").with("size", 64);
            for (std::size_t i = 0; i < fig.samples.size(); ++i) {
              rate.samples.push_back(fig.samples[i] * 1e9 / 8 / 64 / 1e6);
              if (i < floors.size() && floors[i].valid) paired.samples.push_back(rate.samples.back() / floors[i].write_mpps());
            }
            // The same windows over the thread's CPU time: what a change did, with the time the
            // host took the thread away left out (A/B on a loaded machine).
            Figure on_cpu{"message_rate_cpu", {}, "Mpps", {}, {}};
            on_cpu.with("verb", "WRITE").with("size", 64).with("qps", 1);
            Figure paired_cpu{"message_rate_cpu_vs_protocol", {}, "ratio", {}, {}};
            paired_cpu.with("verb", "WRITE").with("size", 64);
            for (std::size_t i = 0; i < cpu.size(); ++i) {
              on_cpu.samples.push_back(cpu[i] * 1e9 / 8 / 64 / 1e6);
              if (i < floors.size() && floors[i].valid) paired_cpu.samples.push_back(on_cpu.samples.back() / floors[i].write_mpps());
            }
            out.add(std::move(rate));
            if (!paired.samples.empty()) out.add(std::move(paired));
            out.add(std::move(on_cpu));
            if (!paired_cpu.samples.empty()) out.add(std::move(paired_cpu));
          }
          std::fprintf(stderr, "  goodput %s %7u B mtu %u qps %2u: %.2f Gbit/s\n", to_string(verb), size, 256u << (mtu - 1), nqp,
                       fig.median());
          out.add(std::move(fig));
          if (!checked(rig->ea(), "goodput requester") || !checked(rig->eb(), "goodput responder")) return false;
        }
      }
    }
  }
  return true;
}

// 64 B WRITEs one at a time, signalled: post -> completion (the ACK came back). Both sides
// stepped on this thread, as the raw ping-pong is.
bool write_rtt(const SuiteConfig& c, Results& out) {
  auto rig = Rig::create(RigOptions{tag("rt"), -1, 1, 4095, c.tuning});
  if (!rig) return false;
  Region ra, rb;
  if (!register_region(rig->a(), rig->pda(), ra, std::span(buffers(c).a).first(1u << 20)) ||
      !register_region(rig->b(), rig->pdb(), rb, std::span(buffers(c).b).first(1u << 20)))
    return false;
  const auto qps = rig->connect(QpSetOptions{1, IBV_MTU_1024, 64, 14});
  if (qps.empty()) return false;
  const double ns_per_cycle = 1e9 / static_cast<double>(rte_get_tsc_hz());
  Figure p50{"rtt", {}, "us", {}, {}}, p99 = p50, p999 = p50;
  p50.with("path", "write").with("stat", "p50");
  p99.with("path", "write").with("stat", "p99");
  p999.with("path", "write").with("stat", "p99.9");
  // The mean of the middle half of a run's round trips: on a guest whose TSC reads step by about
  // 10 ns (26 cycles apart in most back-to-back reads on session 22's host), every sample and so
  // the median land on that grid; this centre moves by less than a step (docs/perf-changes.md
  // section 86).
  Figure mid = p50;
  mid.with("path", "write").with("stat", "mid_mean");
  // Each run's median over the protocol layer's build and parse of the WRITE and its ACK,
  // measured right before the run.
  Figure paired{"rtt_vs_protocol", {}, "ratio", {}, {}};
  paired.with("stat", "p50");
  Figure paired_mid{"rtt_vs_protocol", {}, "ratio", {}, {}};
  paired_mid.with("stat", "mid_mean");
  std::vector<double> s(c.rtt_samples);
  ibv_sge sg{reinterpret_cast<std::uint64_t>(ra.bytes.data()), 64, ra.mr->lkey()};
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.sg_list = &sg;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = reinterpret_cast<std::uint64_t>(rb.bytes.data());
  wr.wr.rdma.rkey = rb.mr->rkey();
  for (unsigned run = 0; run <= c.runs; ++run) {  // run 0 warms up
    const ProtocolCost floor = c.paired_floor ? measure_protocol_cost(c.window / 2, c.tuning.icrc_linear) : ProtocolCost{};
    for (unsigned i = 0; i < c.rtt_samples; ++i) {
      ibv_send_wr* bad = nullptr;
      const std::uint64_t t0 = rte_rdtsc();
      if (rig->ea().post_send(qps[0].a, &wr, &bad) != 0) return false;
      ibv_wc wc;
      int n = 0;
      while ((n = rig->ea().poll_cq(rig->cqa(), 1, &wc)) == 0) rig->step();
      if (n < 0 || wc.status != IBV_WC_SUCCESS) return false;
      s[i] = static_cast<double>(rte_rdtsc() - t0) * ns_per_cycle / 1e3;
    }
    if (run == 0) continue;
    std::sort(s.begin(), s.end());
    p50.samples.push_back(s[s.size() / 2]);
    if (floor.valid) paired.samples.push_back(p50.samples.back() / floor.round_trip_us());
    p99.samples.push_back(s[std::min(s.size() - 1, s.size() * 99 / 100)]);
    p999.samples.push_back(s[std::min(s.size() - 1, s.size() * 999 / 1000)]);
    const std::size_t lo = s.size() / 4, hi = std::max(lo + 1, s.size() - s.size() / 4);
    double sum = 0;
    for (std::size_t i = lo; i < hi; ++i) sum += s[i];
    mid.samples.push_back(sum / static_cast<double>(hi - lo));
    if (floor.valid) paired_mid.samples.push_back(mid.samples.back() / floor.round_trip_us());
  }
  out.add(std::move(p50));
  out.add(std::move(p99));
  out.add(std::move(p999));
  out.add(std::move(mid));
  if (!paired.samples.empty()) out.add(std::move(paired));
  if (!paired_mid.samples.empty()) out.add(std::move(paired_mid));
  return checked(rig->ea(), "rtt requester") && checked(rig->eb(), "rtt responder");
}

namespace {

Nanos thread_cpu_now() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<Nanos>(t.tv_sec) * kSecond + t.tv_nsec;
}

}  // namespace

// 64 KiB WRITEs at a 4 KiB MTU, 1 QP, through the link emulator losing frames at random in both
// directions (data and ACKs). Same emulator at 0 % for the lossless reference. The rates take
// turns window by window (each drained before the next starts, so no timer runs while its rig
// waits), and each lossy window is divided by the lossless window of the same turn: the load of
// this shared machine drifts over a run, and the fraction of lossless is what the target is about.
bool loss_goodput(const SuiteConfig& c, Results& out) {
  struct Case {
    double loss = 0;
    bool window = true;
    bool selective = false;  // selective repeat on both ends (window off)
    bool baseline = false;   // go-back-N with c.loss_baseline's tuning
    std::unique_ptr<Rig> rig;
    Region ra, rb;
    std::vector<std::uint32_t> recvs;
    std::unique_ptr<Traffic> traffic;
    rdma::QueuePair* qp = nullptr;  // the requester's
    Figure fig{"loss_goodput", {}, "Gbit/s", {}, {}};
    Figure fraction{"loss_fraction", {}, "ratio", {}, {}};
    // Over every turn (warm-up and drain included): wall and thread CPU time, bytes.
    Nanos wall = 0, cpu = 0;
    std::uint64_t bytes = 0;
  };
  std::vector<std::unique_ptr<Case>> cases;
  // Each loss rate with go-back-N (the send window as the tuning sets it, lib/rdma/send_window.hpp;
  // --send-window turns it on) and with selective repeat (docs/loss.md, part 2; window off), in
  // the same turns; every fraction is of the first lossless turn. (Eight rigs of four ports each:
  // DPDK's 32-port limit leaves no room for a third setting.)
  // With a baseline tuning (--loss-baseline) it takes selective repeat's place and goes first:
  // every fraction is then of the baseline's lossless turn.
  const std::array<int, 2> modes = c.loss_baseline ? std::array<int, 2>{1, 0} : std::array<int, 2>{0, 2};
  std::vector<double> rates{0.0};
  rates.insert(rates.end(), c.loss_rates.begin(), c.loss_rates.end());
  for (const double loss : rates)
  for (const int mode : modes) {
    const bool window = mode == 0 && c.tuning.window.enabled;
    auto k = std::make_unique<Case>();
    k->loss = loss;
    k->window = window;
    k->selective = mode == 2;
    k->baseline = mode == 1;
    rdma::TransportTuning tuning = k->baseline ? *c.loss_baseline : c.tuning;
    if (!k->baseline) tuning.window.enabled = window;
    k->rig = Rig::create(RigOptions{tag(k->selective ? "lr" : k->baseline ? "lb" : window ? "ls" : "lw"), loss, 42, 8191, tuning,
                                    c.loss_rate_bps, c.loss_delay});
    if (!k->rig) return false;
    Rig& rig = *k->rig;
    if (!register_region(rig.a(), rig.pda(), k->ra, buffers(c).a) || !register_region(rig.b(), rig.pdb(), k->rb, buffers(c).b))
      return false;
    const auto qps = rig.connect(QpSetOptions{1, IBV_MTU_4096, 512, 14, k->selective ? c.loss_sr_window : 0u});
    if (qps.empty()) return false;
    k->qp = qps.front().a;
    k->traffic = std::make_unique<Traffic>(rig, qps, c.loss_read ? Verb::Read : Verb::Write, 65536, k->ra, k->rb, k->recvs, 65536);
    k->fig.with("verb", c.loss_read ? "READ" : "WRITE").with("size", 65536).with("mtu", 4096).with("loss_pct", loss * 100);
    if (c.loss_rate_bps > 0 || c.loss_delay > 0) {
      k->fig.with("link_gbps", c.loss_rate_bps / 1e9).with("link_delay_us", static_cast<double>(c.loss_delay) / 1e3);
      k->fraction.with("link_gbps", c.loss_rate_bps / 1e9).with("link_delay_us", static_cast<double>(c.loss_delay) / 1e3);
    }
    k->fraction.with("loss_pct", loss * 100);
    k->fig.with("send_window", window ? "on" : "off").with("selective_repeat", k->selective ? "on" : "off");
    k->fraction.with("send_window", window ? "on" : "off").with("selective_repeat", k->selective ? "on" : "off");
    if (k->baseline) {
      k->fig.with("baseline", "yes");
      k->fraction.with("baseline", "yes");
    }
    cases.push_back(std::move(k));
  }
  // Two lcores: each rig's responder side and emulator run on the next lcore during its turns.
  unsigned b_lcore = 0;
  if (c.loss_lcores > 1) {
    b_lcore = rte_get_next_lcore(rte_lcore_id(), 1, 0);
    if (b_lcore >= RTE_MAX_LCORE) {
      std::fprintf(stderr, "loss: --loss-lcores 2 needs a second lcore (EAL -l 0-1)\n");
      return false;
    }
    for (auto& k : cases) {
      k->fig.with("lcores", 2);
      k->fraction.with("lcores", 2);
    }
  }
  for (unsigned run = 0; run < c.runs; ++run) {
    for (auto& k : cases) {
      const Nanos w0 = k->rig->now(), c0 = thread_cpu_now();
      const std::uint64_t b0 = k->traffic->bytes();
      k->traffic->stall_reset();
      if (c.loss_lcores > 1 && !k->rig->start_b(b_lcore)) return false;
      const bool turn = time_windows(*k->traffic, 1, 2 * c.window, k->fig.samples) && k->traffic->finish(10 * kSecond);
      k->rig->stop_b();
      if (!turn) return false;
      k->traffic->stall_reset();
      k->wall += k->rig->now() - w0;
      k->cpu += thread_cpu_now() - c0;
      k->bytes += k->traffic->bytes() - b0;
      k->fraction.samples.push_back(k->fig.samples.back() / cases.front()->fig.samples.back());
    }
  }
  for (auto& k : cases) {
    Rig& rig = *k->rig;
    const Health h = health_of(rig.ea());
    const auto& emu = *rig.emulator();
    const std::uint64_t lost = emu.stats(Direction::XtoY).get(LinkCounter::Lost) + emu.stats(Direction::YtoX).get(LinkCounter::Lost);
    k->fig.note("lost_frames", static_cast<double>(lost));
    k->fig.note("retransmitted", static_cast<double>(h.retransmitted));
    k->fig.note("timeouts", static_cast<double>(h.timeouts));
    k->fig.note("early_retransmits", static_cast<double>(h.early_retransmits));
    k->fig.note("loss_events", static_cast<double>(h.loss_events));
    k->fig.note("window_cuts", static_cast<double>(h.window_cuts));
    k->fig.note("tail_probes", static_cast<double>(h.tail_probes));
    // Probes and early resends whose ACK came within half a round trip: the first copy's answer.
    k->fig.note("spurious_early", static_cast<double>(rig.ea().total_counters().get(rdma::Counter::SpuriousEarlyRetransmits)));
    // Local ACK timers moved past a stall of this thread's own (no retry used: Completer::
    // defer_past_own_stall), and go-back-N's BDP cap trials: found free (the cap then holds at
    // any loss interval) or costly, and whether it ended free (docs/loss.md part 1, "Session 20").
    k->fig.note("timeouts_deferred", static_cast<double>(rig.ea().total_counters().get(rdma::Counter::AckTimeoutsDeferred)));
    if (!k->selective) {
      const rdma::SendWindow& w = k->qp->completer().window();
      k->fig.note("bdp_trials_free", static_cast<double>(w.bdp_trials_free())).note("bdp_trials_costly", static_cast<double>(w.bdp_trials_costly()));
      k->fig.note("bdp_free", w.bdp_free() ? 1.0 : 0.0).note("bdp_last_ratio", w.bdp_last_ratio());
      k->fig.note("bdp_trials_unjudged", static_cast<double>(w.bdp_trials_unjudged()));
    }
    // Selective repeat: requests the responder held behind a hole, over the packets the
    // requester sent; and of those, the WRITE MIDDLEs placed at once (the rest were copied
    // whole into the reorder buffer and parsed again).
    const Health hb = health_of(rig.eb());
    const double sent = static_cast<double>(rig.a().worker(0).stats().tx_packets);
    k->fig.note("held_behind_hole", static_cast<double>(hb.held));
    k->fig.note("placed_behind_hole", static_cast<double>(hb.placed));
    k->fig.note("reorder_pool_exhausted", static_cast<double>(hb.pool_exhausted));
    k->fig.note("reorder_pool_bytes", static_cast<double>(hb.pool_bytes));
    k->fig.note("naks_sent", static_cast<double>(health_of(rig.eb()).naks));
    k->fig.note("sent_packets", static_cast<double>(rig.a().worker(0).stats().tx_packets));
    if (c.loss_read) {
      // READs: the data goes b to a in READ responses. Those b sent beyond one per 4 KiB read
      // were sent again (go-back-N on the READ, or a hole's range alone), per frame lost.
      const rdma::Counters cb = rig.eb().total_counters();
      const double again = static_cast<double>(cb.get(rdma::Counter::ReadResponsesSent)) - static_cast<double>(k->traffic->bytes() / 4096);
      const double holes = static_cast<double>(rig.ea().total_counters().get(rdma::Counter::ReadHoleRequests));
      k->fig.note("read_responses_sent_again", again);
      k->fig.note("read_hole_requests", holes);
      std::fprintf(stderr, "    READ responses sent again %.0f (%.2f per lost frame), %.0f READ requests for a hole alone\n", again,
                   lost ? again / static_cast<double>(lost) : 0.0, holes);
    }
    std::fprintf(stderr, "  loss %.1f %%, %s: %.2f Gbit/s (%.2f of lossless), %llu lost, %llu retransmitted (%.2f per lost), %llu timeouts, %llu early, %llu tail probes, %llu window cuts, %.2f of sent held behind a hole (%.2f placed)\n",
                 k->loss * 100, k->selective ? "selective repeat" : k->baseline ? "go-back-N, baseline" : k->window ? "go-back-N, full window" : "go-back-N", k->fig.median(), k->fraction.median(), static_cast<unsigned long long>(lost),
                 static_cast<unsigned long long>(h.retransmitted), lost ? static_cast<double>(h.retransmitted) / static_cast<double>(lost) : 0.0,
                 static_cast<unsigned long long>(h.timeouts), static_cast<unsigned long long>(h.early_retransmits), static_cast<unsigned long long>(h.tail_probes),
                 static_cast<unsigned long long>(h.window_cuts), sent > 0 ? static_cast<double>(hb.held) / sent : 0.0,
                 sent > 0 ? static_cast<double>(hb.placed) / sent : 0.0);
    // Where the time went: stalled (no frame sent by either side: a timer's wait, docs/loss.md
    // part 2 "The missing tenth"), and the goodput per second of this thread's CPU time, which
    // a descheduled thread does not spend (on a loaded machine the wall-clock rates swing by
    // a third from turn to turn; this one far less).
    const double cpu_rate = k->cpu > 0 ? static_cast<double>(k->bytes) * 8 / static_cast<double>(k->cpu) : 0;
    const double stalled = k->wall > 0 ? static_cast<double>(k->traffic->stalled()) / static_cast<double>(k->wall) : 0;
    const Case& lossless = **std::find_if(cases.begin(), cases.end(), [&](const auto& x) { return x->loss == 0 && x->selective == k->selective && x->baseline == k->baseline; });
    const double lossless_rate = lossless.cpu > 0 ? static_cast<double>(lossless.bytes) * 8 / static_cast<double>(lossless.cpu) : 0;
    k->fig.note("stalled_fraction", stalled);
    k->fig.note("cpu_goodput", cpu_rate);
    std::fprintf(stderr, "    time: %.3f of it stalled; %.2f Gbit/s per CPU second (%.2f of this mode's lossless)\n", stalled, cpu_rate,
                 lossless_rate > 0 ? cpu_rate / lossless_rate : 0.0);
    {
      // The loop's shape (docs/loss.md part 1, "Session 11"): a round trip on one thread is an
      // iteration, so what a small window costs is the iteration's fixed work over fewer packets.
      const dp::WorkerStats& wa = rig.a().worker(0).stats();
      const dp::WorkerStats& wb = rig.b().worker(0).stats();
      const double it = static_cast<double>(std::max<std::uint64_t>(wa.iterations, 1));
      std::fprintf(stderr, "    loop: %llu iterations, %.2f frames sent and %.2f received by A each, %.2f sent by B, %.0f ns CPU each\n",
                   static_cast<unsigned long long>(wa.iterations), static_cast<double>(wa.tx_packets) / it,
                   static_cast<double>(wa.rx_packets) / it, static_cast<double>(wb.tx_packets) / it, static_cast<double>(k->cpu) / it);
      k->fig.note("a_iterations", it);
      // With --loss-step-parts: each part of the one-thread step, per step (TSC time, the
      // thread's stretches off its core left out).
      if (const Rig::StepParts& sp = rig.parts(); sp.steps != 0) {
        const double per = static_cast<double>(sp.steps) * static_cast<double>(rte_get_tsc_hz()) / 1e9;
        std::fprintf(stderr, "    step parts: %llu steps, ns each: A %.0f, link emulator %.0f, B %.0f\n",
                     static_cast<unsigned long long>(sp.steps), static_cast<double>(sp.a) / per, static_cast<double>(sp.link) / per,
                     static_cast<double>(sp.b) / per);
        k->fig.note("step_ns_a", static_cast<double>(sp.a) / per).note("step_ns_link", static_cast<double>(sp.link) / per);
        k->fig.note("step_ns_b", static_cast<double>(sp.b) / per);
      }
    }
    if (c.loss_lcores > 1) {
      // The two-lcore rig counted: what held the requester back while A sent nothing (time,
      // of the wall time), and each side's busy loop cycles per 4 KiB delivered (a frame's
      // cost, which a descheduled thread does not inflate) and idle share of its cycles.
      const Traffic& t = *k->traffic;
      const double wall = static_cast<double>(std::max<Nanos>(k->wall, 1));
      const auto held = [&](Traffic::Held h) { return static_cast<double>(t.stalled_by(h)) / wall; };
      const LoopCount& la = t.a_loop();
      const LoopCount& lb = rig.b_loop();
      const double pages = static_cast<double>(std::max<std::uint64_t>(k->bytes / 4096, 1));
      const auto idle = [](const LoopCount& l) {
        const double all = static_cast<double>(l.busy_cycles + l.idle_cycles);
        return all > 0 ? static_cast<double>(l.idle_cycles) / all : 0.0;
      };
      std::fprintf(stderr, "    two lcores: A held back by the reorder reach %.3f, in-flight cap %.3f, send window %.3f, other %.3f of the time; "
                   "busy cycles per 4 KiB delivered A %.0f, B %.0f; idle share of the cycles A %.2f, B %.2f; B received %.2f and sent %.2f frames per 4 KiB; iterations left out as preempted A %llu, B %llu; busy iterations per 4 KiB A %.3f, B %.3f; cycles per idle iteration A %.0f, B %.0f\n",
                   held(Traffic::Held::ReorderReach), held(Traffic::Held::InflightCap), held(Traffic::Held::SendWindow), held(Traffic::Held::Other),
                   static_cast<double>(la.busy_cycles) / pages, static_cast<double>(lb.busy_cycles) / pages, idle(la), idle(lb),
                   static_cast<double>(lb.rx) / pages, static_cast<double>(lb.tx) / pages, static_cast<unsigned long long>(la.preempted),
                   static_cast<unsigned long long>(lb.preempted), static_cast<double>(la.busy) / pages, static_cast<double>(lb.busy) / pages,
                   static_cast<double>(la.idle_cycles) / static_cast<double>(std::max<std::uint64_t>(la.idle, 1)),
                   static_cast<double>(lb.idle_cycles) / static_cast<double>(std::max<std::uint64_t>(lb.idle, 1)));
      k->fig.note("held_reorder_reach", held(Traffic::Held::ReorderReach)).note("held_inflight_cap", held(Traffic::Held::InflightCap));
      k->fig.note("a_busy_cycles_per_page", static_cast<double>(la.busy_cycles) / pages).note("b_busy_cycles_per_page", static_cast<double>(lb.busy_cycles) / pages);
      k->fig.note("a_idle_cycles", idle(la)).note("b_idle_cycles", idle(lb));
    }
    {
      const rdma::Completer& cm = k->qp->completer();
      std::fprintf(stderr, "    window: min RTT %.1f us, standing RTT %.1f us, srtt %.1f us, knee RTT %.1f us, need %.1f, rate x min RTT %.1f packets, BDP cap %.1f (%.2f x rate x min RTT, %s, loss interval %.0f, %s, trials %u free %u costly, latest %s ratio %.2f, smaller caps %u kept %u costly), window %.1f packets\n",
                   cm.window().min_rtt() / 1e3, cm.window().standing_rtt() / 1e3, cm.srtt() / 1e3, cm.window().knee_rtt() / 1e3,
                   cm.window().need(), cm.window().bdp_measured(), cm.window().bdp(), cm.window().bdp_growth(), cm.window().bdp_engaged() ? "held" : "not held", cm.window().loss_interval(),
                   cm.window().bdp_free() ? "free" : "not free", cm.window().bdp_trials_free(), cm.window().bdp_trials_costly(),
                   (k->baseline ? c.loss_baseline->window : c.tuning.window).bdp_cap_judge == rdma::BdpJudge::Goodput ? "goodput" : "sample-rate", cm.window().bdp_last_ratio(),
                   cm.window().bdp_shrinks(), cm.window().bdp_shrinks_costly(), cm.window().packets());
    }
    out.add(std::move(k->fig));
    out.add(std::move(k->fraction));
    if (!checked(rig.ea(), "loss requester") || !checked(rig.eb(), "loss responder")) return false;
  }
  return true;
}

}  // namespace roce::bench
