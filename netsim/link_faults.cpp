#include "netsim/link_faults.hpp"

#include <cstdio>

namespace roce::netsim {

namespace {

bool probability(double p) { return p >= 0 && p <= 1; }

std::string ns_text(Nanos ns) {
  if (ns % kMilli == 0 && ns) return std::to_string(ns / kMilli) + "ms";
  if (ns % kMicro == 0) return std::to_string(ns / kMicro) + "us";
  return std::to_string(ns) + "ns";
}

std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

}  // namespace

std::optional<std::string> check(const DirectionFaults& f) {
  if (!probability(f.loss)) return "loss must be a probability in [0, 1], got " + number(f.loss);
  if (!probability(f.duplicate)) return "duplicate must be a probability in [0, 1], got " + number(f.duplicate);
  if (!probability(f.reorder)) return "reorder must be a probability in [0, 1], got " + number(f.reorder);
  if (f.delay < 0 || f.jitter < 0 || f.reorder_delay < 0) return "delays must not be negative";
  if (!(f.rate_bps >= 0)) return "rate must be 0 (unlimited) or positive";
  if (!f.has_queue()) return std::nullopt;
  cc::CpParams cp;
  cp.red = f.red;
  cp.capacity_bytes = f.queue_bytes;
  cp.capacity_packets = f.queue_frames;
  cp.line_rate_bps = f.rate_bps;
  if (auto e = cc::check(cp)) return "bottleneck queue: " + *e;
  return std::nullopt;
}

std::string to_string(const DirectionFaults& f) {
  std::string s = "loss=" + number(f.loss) + " dup=" + number(f.duplicate) + " reorder=" + number(f.reorder) + "/" +
                  ns_text(f.reorder_delay) + " delay=" + ns_text(f.delay) + " jitter=" + ns_text(f.jitter);
  if (!f.has_queue()) return s + " rate=unlimited";
  s += " rate=" + number(f.rate_bps / 1e9) + "Gb/s queue=" + std::to_string(f.queue_bytes) + "B";
  if (f.ecn_marking)
    s += " red=" + std::to_string(f.red.kmin_bytes) + "/" + std::to_string(f.red.kmax_bytes) + "/" + number(f.red.pmax);
  return s;
}

std::string to_string(Direction d) { return d == Direction::XtoY ? "x->y" : "y->x"; }

std::string to_string(LinkCounter c) {
  switch (c) {
    case LinkCounter::Received: return "received";
    case LinkCounter::ReceivedBytes: return "received_bytes";
    case LinkCounter::Forwarded: return "forwarded";
    case LinkCounter::ForwardedBytes: return "forwarded_bytes";
    case LinkCounter::Lost: return "lost";
    case LinkCounter::Duplicated: return "duplicated";
    case LinkCounter::DuplicateNoMbuf: return "duplicate_no_mbuf";
    case LinkCounter::Reordered: return "reordered";
    case LinkCounter::Marked: return "marked";
    case LinkCounter::MarkNotWritable: return "mark_not_writable";
    case LinkCounter::TailDropped: return "tail_dropped";
    case LinkCounter::DelayLineFull: return "delay_line_full";
    case LinkCounter::TxBusy: return "tx_busy";
    case LinkCounter::Held: return "held";
    case LinkCounter::QueueMaxBytes: return "queue_max_bytes";
    case LinkCounter::Count: break;
  }
  return "unknown";
}

std::string to_string(const LinkStats& s) {
  std::string out;
  for (std::size_t i = 0; i < kLinkCounterCount; ++i)
    if (s.v[i]) out += (out.empty() ? "" : " ") + to_string(static_cast<LinkCounter>(i)) + "=" + std::to_string(s.v[i]);
  return out.empty() ? "idle" : out;
}

}  // namespace roce::netsim
