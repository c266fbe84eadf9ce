#include "apps/dcqcn_trace/trace_runner.hpp"

#include <charconv>

namespace roce::trace {

std::string format_us(Nanos ns) {
  std::string s = std::to_string(ns / 1000);
  if (const Nanos frac = ns % 1000; frac != 0) {
    std::string f = std::to_string(frac + 1000).substr(1);
    while (f.back() == '0') f.pop_back();
    s += '.' + f;
  }
  return s;
}

std::string format_double(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

void TraceRunner::print(Nanos t, cc::RpAction a) {
  out_ << format_us(t) << ',' << cc::to_string(a) << ',' << format_double(rp_.rc_bps() / 1e9) << ','
       << format_double(rp_.rt_bps() / 1e9) << ',' << format_double(rp_.alpha()) << '\n';
}

void TraceRunner::fire_timers(Nanos up_to) {
  for (;;) {
    const Nanos at = rp_.next_deadline();
    const cc::RpAction a = rp_.fire_next_timer(up_to);
    if (a == cc::RpAction::None) return;
    if (a != cc::RpAction::DecreaseCheckIdle) print(at, a);
  }
}

std::optional<std::string> TraceRunner::apply(const TraceEvent& e) {
  if (ended_) return "event after 'end'";
  if (e.t_us < last_us_)
    return "time " + std::to_string(e.t_us) + " us is before the previous event at " + std::to_string(last_us_) +
           " us";
  last_us_ = e.t_us;
  const Nanos t = from_us(e.t_us);
  switch (e.kind) {
    case EventKind::Cnp:
      fire_timers(t - 1);
      rp_.on_cnp(t);
      print(t, cc::RpAction::Cnp);
      break;
    case EventKind::Sent:
      fire_timers(t);
      rp_.add_sent_bytes(e.bytes);
      while (rp_.fire_byte_counter() != cc::RpAction::None) print(t, cc::RpAction::IncreaseBytes);
      break;
    case EventKind::End:
      fire_timers(t);
      ended_ = true;
      break;
  }
  return std::nullopt;
}

}  // namespace roce::trace
