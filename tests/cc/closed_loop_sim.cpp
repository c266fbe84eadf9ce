#include "tests/cc/closed_loop_sim.hpp"

#include <algorithm>
#include <queue>

#include "lib/cc/pacer.hpp"
#include "lib/cc/reaction_point.hpp"
#include "tests/support/jain_index.hpp"

namespace roce::cc::test {

namespace {

enum class EvKind : std::uint8_t { AtSwitch, AtReceiver, CnpAtSender };

struct Ev {
  Nanos t;
  std::uint64_t seq;  // FIFO among equal times
  EvKind kind;
  int flow;
  proto::Ecn ecn;
  bool operator>(const Ev& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

struct Sender {
  ReactionPoint rp;
  Pacer pacer;
  Nanos start;
  Sender(const RpParams& p, Nanos s) : rp(p), pacer(p.line_rate_bps, 1, s), start(s) {}
  void sync(Nanos now) {
    if (pacer.rate_bps() != rp.rc_bps()) pacer.set_rate(now, rp.rc_bps());
  }
};

class Loop {
 public:
  Loop(const LoopConfig& c, std::ostream* trace) : c_(c), trace_(trace), cp_(c.cp) {
    for (int i = 0; i < c.senders; ++i) {
      const auto idx = static_cast<std::size_t>(i);
      senders_.emplace_back(c.rp, idx < c.start_times.size() ? c.start_times[idx] : 0);
      nps_.emplace_back(c.np);
    }
    delivered_.assign(senders_.size(), 0);
  }

  LoopResult run();

 private:
  void push(Nanos t, EvKind k, int flow, proto::Ecn ecn) { events_.push({t, seq_++, k, flow, ecn}); }
  Nanos next_send(const Sender& s) const {
    return std::max(s.start, s.pacer.earliest_departure(c_.packet_bytes));
  }
  void queue_changed(Nanos now);
  void handle(const Ev& e);
  void write_trace(Nanos now);

  const LoopConfig& c_;
  std::ostream* trace_;
  CongestionPoint<int> cp_;
  std::vector<Sender> senders_;
  std::vector<NotificationPoint> nps_;
  std::priority_queue<Ev, std::vector<Ev>, std::greater<>> events_;
  std::uint64_t seq_ = 0;
  std::vector<double> delivered_;
  std::uint64_t cnps_ = 0;
  std::uint64_t drops_window_ = 0;
  Nanos queue_since_ = 0;
  std::uint64_t queue_now_ = 0;
  double queue_area_ = 0;
  std::uint64_t queue_max_window_ = 0;
};

void Loop::queue_changed(Nanos now) {
  const Nanos from = std::max(queue_since_, c_.measure_from);
  if (now > from) queue_area_ += static_cast<double>(queue_now_) * static_cast<double>(now - from);
  queue_since_ = now;
  queue_now_ = cp_.occupancy_bytes();
  if (now >= c_.measure_from) queue_max_window_ = std::max(queue_max_window_, queue_now_);
}

void Loop::handle(const Ev& e) {
  Sender& s = senders_[static_cast<std::size_t>(e.flow)];
  switch (e.kind) {
    case EvKind::AtSwitch:
      if (cp_.enqueue(e.t, e.flow, c_.packet_bytes, e.ecn) != EnqueueResult::Queued && e.t >= c_.measure_from)
        ++drops_window_;
      queue_changed(e.t);
      break;
    case EvKind::AtReceiver:
      if (e.t >= c_.measure_from) delivered_[static_cast<std::size_t>(e.flow)] += c_.packet_bytes;
      if (e.ecn == proto::Ecn::Ce && nps_[static_cast<std::size_t>(e.flow)].on_ce_packet(e.t))
        push(e.t + c_.cnp_return, EvKind::CnpAtSender, e.flow, proto::Ecn::Ect0);
      break;
    case EvKind::CnpAtSender:
      ++cnps_;
      s.rp.on_cnp(e.t);
      s.sync(e.t);
      break;
  }
}

void Loop::write_trace(Nanos now) {
  for (std::size_t i = 0; i < senders_.size(); ++i) {
    const ReactionPoint& rp = senders_[i].rp;
    *trace_ << now / 1000 << ',' << i + 1 << ',' << rp.rc_bps() / 1e9 << ',' << rp.rt_bps() / 1e9 << ','
            << rp.alpha() << '\n';
  }
}

LoopResult Loop::run() {
  if (trace_) *trace_ << "t_us,qp,rc_gbps,rt_gbps,alpha\n";
  Nanos next_trace = 0;
  for (;;) {
    // One step: packets and CNPs in flight, then the queue, RP timers, NP timers, the trace,
    // and last the senders; each group in flow order.
    const Nanos t_ev = events_.empty() ? kNever : events_.top().t;
    const Nanos t_cp = cp_.next_dequeue_time();
    Nanos t_rp = kNever, t_np = kNever, t_tx = kNever;
    for (std::size_t i = 0; i < senders_.size(); ++i) {
      t_rp = std::min(t_rp, senders_[i].rp.next_deadline());
      t_np = std::min(t_np, nps_[i].next_deadline());
      t_tx = std::min(t_tx, next_send(senders_[i]));
    }
    const Nanos t = std::min({t_ev, t_cp, t_rp, t_np, t_tx, trace_ ? next_trace : kNever});
    if (t >= c_.duration) break;
    if (t == t_ev) {
      const Ev e = events_.top();
      events_.pop();
      handle(e);
    } else if (t == t_cp) {
      const auto d = cp_.dequeue(t);
      queue_changed(t);
      push(d->end + c_.to_receiver, EvKind::AtReceiver, d->packet, d->ecn);
    } else if (t == t_rp) {
      for (Sender& s : senders_) {
        if (s.rp.next_deadline() > t) continue;
        s.rp.advance(t);
        s.sync(t);
      }
    } else if (t == t_np) {
      for (std::size_t i = 0; i < nps_.size(); ++i)
        if (nps_[i].advance(t)) push(t + c_.cnp_return, EvKind::CnpAtSender, static_cast<int>(i), proto::Ecn::Ect0);
    } else if (trace_ && t == next_trace) {
      write_trace(t);
      next_trace += c_.trace_interval;
    } else {
      for (std::size_t i = 0; i < senders_.size(); ++i) {
        Sender& s = senders_[i];
        if (next_send(s) != t) continue;
        s.pacer.on_sent(t, c_.packet_bytes);
        s.rp.on_bytes_sent(t, c_.packet_bytes);
        s.sync(t);
        push(t + c_.to_switch, EvKind::AtSwitch, static_cast<int>(i), proto::Ecn::Ect0);
        break;
      }
    }
  }
  queue_changed(c_.duration);

  LoopResult r;
  const double window_s = static_cast<double>(c_.duration - c_.measure_from) * 1e-9;
  double total = 0;
  for (double bytes : delivered_) {
    r.throughput_bps.push_back(bytes * 8 / window_s);
    total += bytes * 8 / window_s;
  }
  r.utilisation = total / c_.cp.line_rate_bps;
  r.jain = roce::test::jain_index(r.throughput_bps);
  r.mean_queue_bytes = queue_area_ / static_cast<double>(c_.duration - c_.measure_from);
  r.max_queue_bytes_window = queue_max_window_;
  r.max_queue_bytes = cp_.counters().max_occupancy_bytes;
  r.drops = cp_.counters().dropped_buffer_full + cp_.counters().dropped_no_slot;
  r.drops_window = drops_window_;
  r.marks = cp_.counters().marked_ce;
  r.cnps = cnps_;
  for (const Sender& s : senders_) {
    const RpCounters& k = s.rp.counters();
    r.rate_decreases += k.rate_decreases;
    r.rate_increases += k.increases_fast_recovery + k.increases_additive + k.increases_hyper;
  }
  return r;
}

}  // namespace

LoopResult run_closed_loop(const LoopConfig& config, std::ostream* trace) { return Loop(config, trace).run(); }

}  // namespace roce::cc::test
