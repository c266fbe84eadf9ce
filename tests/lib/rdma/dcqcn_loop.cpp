#include "tests/lib/rdma/dcqcn_loop.hpp"

#include <cstring>
#include <ctime>
#include <memory>
#include <random>

#include "lib/cc/pacer.hpp"
#include "protocol/psn.hpp"
#include "tests/support/jain_index.hpp"
#include "tests/support/sim_fabric.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test {

namespace {

constexpr std::uint32_t kPmtu = 4096;
// A full-size RDMA WRITE MIDDLE/LAST frame: Ethernet, IPv4, UDP, BTH, payload, ICRC.
constexpr std::uint32_t kFullFrameBytes = 14 + 20 + 8 + 12 + kPmtu + 4;
// How often the application polls, reposts and samples: each QP has `outstanding` WRITEs of
// 256 KB queued, hundreds of microseconds of sending, so a 20 us poll never leaves it idle.
constexpr Nanos kTick = 20 * kMicro;

// One sender QP and its peer QP on the receiver, with the buffers the WRITEs go between.
struct Flow {
  Endpoint sender, receiver;
  std::vector<std::byte> src, dst;  // src: 2 messages of random bytes; dst: one slot per WRITE in flight
  const rdma::MemoryRegion* src_mr = nullptr;
  const rdma::MemoryRegion* dst_mr = nullptr;
  Nanos start = 0;
  bool started = false;
  std::uint64_t next_write = 0;  // number of the next WRITE to post
  std::uint64_t completed = 0;
  std::uint32_t psn_at_window = 0;
};

class Loop {
 public:
  Loop(const DcqcnLoopConfig& c, std::ostream* trace) : c_(c), trace_(trace), fabric_(c.seed) {}
  DcqcnLoopResult run();

 private:
  void build();
  std::size_t src_offset(std::uint64_t w) const { return (w * 40'961) % c_.message_bytes; }
  void post_write(Flow& f);
  void poll(Flow& f, bool repost);
  void sample(Nanos t);
  std::uint64_t outstanding() const;
  double bottleneck_bps() const { return c_.receiver_rate_bps > 0 ? c_.receiver_rate_bps : c_.line_rate_bps; }

  const DcqcnLoopConfig& c_;
  std::ostream* trace_;
  SimFabric fabric_;
  std::size_t receiver_ = 0;
  std::vector<std::unique_ptr<Flow>> flows_;
  DcqcnLoopResult r_;
};

void Loop::build() {
  rdma::EngineConfig cfg;
  cfg.tuning.max_inflight_bytes = c_.max_inflight_bytes;
  cfg.tuning.congestion.enabled = c_.dcqcn;
  cfg.tuning.window = c_.window;
  cfg.tuning.congestion.rp = c_.rp;
  const FabricLink link{c_.line_rate_bps, c_.link_delay};
  rdma::EngineConfig receiver_cfg = cfg;
  receiver_cfg.tuning.congestion.enabled = c_.dcqcn && c_.receiver_dcqcn;
  const FabricLink receiver_link{bottleneck_bps(), c_.link_delay};
  receiver_ = fabric_.add_host("receiver", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1}, receiver_cfg, receiver_link, c_.port);
  std::size_t shared_sender = 0;
  if (c_.one_sender_host)
    shared_sender = fabric_.add_host("sender", {2, 0, 0, 0, 1, 1}, {10, 0, 1, 1}, cfg, link, c_.port);
  QpOptions o;
  o.mtu = IBV_MTU_4096;
  o.depth = static_cast<std::uint32_t>(c_.outstanding) + 4;
  std::mt19937_64 rng(c_.seed);
  for (int i = 0; i < c_.senders; ++i) {
    const auto n = static_cast<std::uint8_t>(i + 1);
    const std::size_t h = c_.one_sender_host ? shared_sender : fabric_.add_host("sender" + std::to_string(i + 1), {2, 0, 0, 0, 1, n}, {10, 0, 1, n}, cfg,
                                           link, c_.port);
    auto f = std::make_unique<Flow>();
    f->sender = make_endpoint(fabric_.host(h), o);
    f->receiver = make_endpoint(fabric_.host(receiver_), o);
    EXPECT_TRUE(f->sender.qp->set_selective_repeat(c_.selective_repeat).ok());
    EXPECT_TRUE(f->receiver.qp->set_selective_repeat(c_.selective_repeat).ok());
    connect_pair(f->sender, f->receiver, o);
    f->src.resize(2 * std::size_t{c_.message_bytes});
    for (auto& b : f->src) b = static_cast<std::byte>(rng());
    f->dst.assign(std::size_t{c_.message_bytes} * static_cast<std::size_t>(c_.outstanding), std::byte{0});
    f->src_mr = reg(fabric_.host(h), f->sender.pd, f->src, IBV_ACCESS_LOCAL_WRITE);
    f->dst_mr = reg(fabric_.host(receiver_), f->receiver.pd, f->dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    const auto idx = static_cast<std::size_t>(i);
    f->start = idx < c_.start_times.size() ? c_.start_times[idx] : 0;
    flows_.push_back(std::move(f));
  }
}

void Loop::post_write(Flow& f) {
  const std::uint64_t w = f.next_write++;
  const std::size_t slot = static_cast<std::size_t>(w % static_cast<std::uint64_t>(c_.outstanding));
  ibv_sge g = sge(f.src.data() + src_offset(w), c_.message_bytes, f.src_mr);
  const int rc = post(f.sender, IBV_WR_RDMA_WRITE, w, &g, 1,
                      reinterpret_cast<std::uint64_t>(f.dst.data() + slot * c_.message_bytes), f.dst_mr->rkey());
  EXPECT_EQ(rc, 0) << "post_send of WRITE " << w;
}

// Completions come in order; when WRITE w completes its slot holds w's bytes, and nothing else
// writes the slot until w + outstanding is posted below.
void Loop::poll(Flow& f, bool repost) {
  for (const ibv_wc& wc : drain(f.sender)) {
    ++r_.writes_completed;
    ++f.completed;
    if (wc.status != IBV_WC_SUCCESS) {
      ++r_.writes_failed;
      ADD_FAILURE() << describe(wc);
      continue;
    }
    const std::size_t slot = static_cast<std::size_t>(wc.wr_id % static_cast<std::uint64_t>(c_.outstanding));
    if (std::memcmp(f.dst.data() + slot * c_.message_bytes, f.src.data() + src_offset(wc.wr_id), c_.message_bytes) != 0)
      ++r_.writes_corrupt;
    if (repost) post_write(f);
  }
}

std::uint64_t Loop::outstanding() const {
  std::uint64_t n = 0;
  for (const auto& f : flows_) n += f->next_write - f->completed;
  return n;
}

void Loop::sample(Nanos t) {
  for (std::size_t i = 0; i < flows_.size(); ++i) {
    const Flow& f = *flows_[i];
    if (!f.started || f.sender.qp->congestion() == nullptr) continue;
    const cc::ReactionPoint& rp = f.sender.qp->congestion()->reaction_point();
    *trace_ << static_cast<double>(t) / 1e3 << ',' << i + 1 << ',' << rp.rc_bps() / 1e9 << ',' << rp.rt_bps() / 1e9
            << ',' << rp.alpha() << '\n';
  }
}

DcqcnLoopResult Loop::run() {
  const std::clock_t cpu0 = std::clock();
  build();
  if (trace_) *trace_ << "t_us,qp,rc_gbps,rt_gbps,alpha\n";
  Nanos next_sample = 0;
  for (Nanos t = 0; t < c_.duration; t += kTick) {
    fabric_.run_to(t);
    for (auto& f : flows_) {
      if (!f->started && t >= f->start) {
        f->started = true;
        for (int k = 0; k < c_.outstanding; ++k) post_write(*f);
      }
      poll(*f, true);
    }
    if (t == c_.measure_from) {
      fabric_.start_window();
      for (auto& f : flows_) f->psn_at_window = f->receiver.qp->responder().expected_psn();
    }
    if (trace_ && t >= next_sample) {
      sample(t);
      next_sample += c_.trace_interval;
    }
  }
  fabric_.run_to(c_.duration);

  // The window ends here; then the senders stop posting and what is in flight drains.
  const double window_s = static_cast<double>(c_.duration - c_.measure_from) * 1e-9;
  const std::size_t rx = receiver_;
  const PortWindow& w = fabric_.window(rx);
  double total = 0;
  for (auto& f : flows_) {
    const auto packets = proto::psn_diff(f->receiver.qp->responder().expected_psn(), f->psn_at_window);
    r_.goodput_bps.push_back(static_cast<double>(packets) * kPmtu * 8 / window_s);
    total += r_.goodput_bps.back();
  }
  const double payload_rate = bottleneck_bps() * kPmtu / cc::link_bytes(kFullFrameBytes);
  r_.goodput_utilisation = total / payload_rate;
  r_.link_utilisation = static_cast<double>(w.departed_bytes) * 8 / (bottleneck_bps() * window_s);
  r_.jain = jain_index(r_.goodput_bps);
  r_.mean_queue_bytes = w.mean_queue_bytes(fabric_.now());
  r_.max_queue_bytes_window = w.queue_max_bytes;
  r_.drops_window = w.dropped;

  r_.drained = fabric_.run_until(
      [&] {
        for (auto& f : flows_) poll(*f, false);
        return outstanding() == 0;
      },
      c_.duration + 2 * kSecond);

  for (std::size_t i = 0; i < fabric_.size(); ++i) {
    const cc::CpCounters& k = fabric_.egress(i).counters();
    r_.drops += k.dropped_buffer_full + k.dropped_no_slot;
    r_.marks += k.marked_ce;
  }
  r_.max_queue_bytes = fabric_.egress(rx).counters().max_occupancy_bytes;
  r_.unroutable = fabric_.unroutable();
  for (auto& f : flows_) {
    const rdma::Counters& s = f->sender.qp->counters();
    r_.cnps_received += s.get(rdma::Counter::CnpReceived);
    r_.cnps_ignored += s.get(rdma::Counter::CnpIgnored);
    r_.retransmitted += s.get(rdma::Counter::RetransmittedPkts);
    r_.sent_packets += s.get(rdma::Counter::SentPkts);
    r_.loss_events += s.get(rdma::Counter::LossEvents);
    r_.window_cuts += s.get(rdma::Counter::WindowCuts);
    r_.cnps_sent += f->receiver.qp->counters().get(rdma::Counter::CnpSent);
    if (f->sender.qp->congestion() == nullptr) continue;
    const cc::RpCounters& rp = f->sender.qp->congestion()->reaction_point().counters();
    r_.rate_decreases += rp.rate_decreases;
    r_.rate_increases += rp.increases_fast_recovery + rp.increases_additive + rp.increases_hyper;
  }
  r_.cpu_seconds = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
  return r_;
}

}  // namespace

DcqcnLoopResult run_dcqcn_loop(const DcqcnLoopConfig& config, std::ostream* trace) {
  return Loop(config, trace).run();
}

}  // namespace roce::test
