#include "apps/demo/dcqcn_share.hpp"

#include <algorithm>
#include <memory>
#include <queue>

#include "lib/cc/pacer.hpp"
#include "lib/cc/reaction_point.hpp"

namespace roce::client {
namespace {


enum class EventKind : std::uint8_t { AtSwitch, AtReceiver, CnpAtSender };

struct Event {
  Nanos at;
  EventKind kind;
  unsigned flow;
  bool ce;
  bool operator>(const Event& o) const { return at > o.at; }
};

struct Sender {
  explicit Sender(const ShareConfig& c, Nanos start)
      : rp(cc::paper_params(c.line_rate_bps)), pacer(c.line_rate_bps, c.frame_bytes, start), np(c.np), start(start) {}
  cc::ReactionPoint rp;
  cc::Pacer pacer;
  cc::NotificationPoint np;  // at the receiver, for this flow
  Nanos start;
  std::uint64_t bytes_late = 0;  // delivered in the measuring window
};

}  // namespace

ShareResult run_dcqcn_share(const ShareConfig& c, std::ostream& csv) {
  cc::CpParams cp;
  cp.red = c.red;
  cp.line_rate_bps = c.bottleneck_bps;
  cp.capacity_bytes = 4 << 20;
  cp.capacity_packets = 8192;
  cp.seed = c.seed;
  cc::CongestionPoint<unsigned> queue(cp);
  std::vector<std::unique_ptr<Sender>> senders;
  for (unsigned i = 0; i < c.flows; ++i) senders.push_back(std::make_unique<Sender>(c, c.join_every * i));
  const Nanos end = c.join_every * (c.flows - 1) + c.run_after_last;
  const Nanos measure_from = end - c.run_after_last / 3;
  const Nanos serialise = static_cast<Nanos>(c.frame_bytes * 8e9 / c.line_rate_bps);
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  ShareResult r;

  csv << "t_us,qp,rc_gbps,rt_gbps,alpha\n";
  Nanos next_sample = 0;
  Nanos t = 0;
  auto reconcile = [&](Sender& s) { s.pacer.set_rate(t, s.rp.rc_bps()); };
  while (t <= end) {
    // Everything due now, in a fixed order: timers, arrivals, the switch, CNPs, sends.
    for (auto& s : senders) {
      if (t < s->start) continue;
      if (s->rp.advance(t)) reconcile(*s);
      if (s->np.advance(t)) {
        ++r.cnps;
        events.push(Event{t + c.link_delay, EventKind::CnpAtSender, static_cast<unsigned>(&s - senders.data()), false});
      }
    }
    while (!events.empty() && events.top().at <= t) {
      const Event e = events.top();
      events.pop();
      Sender& s = *senders[e.flow];
      switch (e.kind) {
        case EventKind::AtSwitch:
          if (queue.enqueue(t, e.flow, c.frame_bytes, proto::Ecn::Ect0) != cc::EnqueueResult::Queued) ++r.dropped;
          break;
        case EventKind::AtReceiver:
          if (t >= measure_from) s.bytes_late += c.frame_bytes;
          if (e.ce && s.np.on_ce_packet(t)) {
            ++r.cnps;
            events.push(Event{t + c.link_delay, EventKind::CnpAtSender, e.flow, false});
          }
          break;
        case EventKind::CnpAtSender:
          s.rp.on_cnp(t);
          reconcile(s);
          break;
      }
    }
    while (auto d = queue.dequeue(t)) {
      r.marked += d->marked;
      events.push(Event{d->end + c.link_delay, EventKind::AtReceiver, d->packet, d->marked});
    }
    for (unsigned i = 0; i < senders.size(); ++i) {
      Sender& s = *senders[i];
      if (t < s.start) continue;
      while (s.pacer.may_send(t, c.frame_bytes)) {  // always data to send
        s.pacer.on_sent(t, c.frame_bytes);
        s.rp.on_bytes_sent(t, c.frame_bytes);
        reconcile(s);
        events.push(Event{t + serialise + c.link_delay, EventKind::AtSwitch, i, false});
      }
    }
    if (t >= next_sample) {
      for (unsigned i = 0; i < senders.size(); ++i) {
        const Sender& s = *senders[i];
        if (t < s.start) continue;
        csv << static_cast<double>(t) / 1e3 << ',' << i + 1 << ',' << s.rp.rc_bps() / 1e9 << ',' << s.rp.rt_bps() / 1e9 << ','
            << s.rp.alpha() << '\n';
      }
      next_sample += c.sample_every;
    }
    // The next moment anything happens.
    Nanos next = std::min(next_sample, queue.next_dequeue_time());
    if (!events.empty()) next = std::min(next, events.top().at);
    for (const auto& s : senders) {
      if (t < s->start) {
        next = std::min(next, s->start);
        continue;
      }
      next = std::min({next, s->rp.next_deadline(), s->np.next_deadline(), s->pacer.earliest_departure(c.frame_bytes)});
    }
    t = std::max(next, t + 1);
  }
  const double window = static_cast<double>(end - measure_from) / 1e9;
  double sum = 0, squares = 0;
  for (const auto& s : senders) {
    const double bps = static_cast<double>(s->bytes_late) * 8 / window;
    r.throughput_bps.push_back(bps);
    sum += bps;
    squares += bps * bps;
  }
  r.jain = squares > 0 ? sum * sum / (static_cast<double>(senders.size()) * squares) : 0;
  return r;
}

}  // namespace roce::client
