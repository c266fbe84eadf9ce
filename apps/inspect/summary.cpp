#include "apps/inspect/summary.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <set>

#include "lib/util/json_writer.hpp"
#include "protocol/aeth.hpp"

namespace roce::inspect {
namespace {

using capture::Verdict;
using proto::IcrcStatus;
using proto::ParseError;

constexpr std::array kVerdictOrder{Verdict::Roce, Verdict::Dc, Verdict::RoceV1, Verdict::NotRoce, Verdict::Malformed};
constexpr std::array kIcrcOrder{IcrcStatus::Ok, IcrcStatus::Bad, IcrcStatus::NotCheckable, IcrcStatus::NotChecked};
constexpr int kSeriesPoints = 10;

std::string line(const std::string& label, std::uint64_t n) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "  %-40s %10llu\n", label.c_str(), static_cast<unsigned long long>(n));
  return buf;
}

std::string opcode_label(std::uint8_t op) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x ", op);
  return buf + proto::describe_opcode(op).name;
}

std::string hex24(std::uint32_t v) {
  char buf[12];
  std::snprintf(buf, sizeof buf, "0x%06x", v);
  return buf;
}

// `v` in the largest unit it reaches (steps of 1000, largest first), with `decimals` digits.
struct Unit {
  double scale;
  const char* name;
  int decimals;
};
std::string scaled(double v, std::initializer_list<Unit> units) {
  char buf[32];
  const Unit* u = units.begin();
  while (u + 1 != units.end() && v < u->scale) ++u;
  std::snprintf(buf, sizeof buf, "%.*f %s", u->decimals, v / u->scale, u->name);
  return buf;
}

std::string bytes_text(double b) { return scaled(b, {{1e9, "GB", 2}, {1e6, "MB", 2}, {1e3, "kB", 1}, {1, "B", 0}}); }
std::string rate_text(double bps) { return scaled(bps, {{1e9, "Gb/s", 3}, {1e6, "Mb/s", 3}, {1e3, "kb/s", 3}, {1, "b/s", 0}}); }
std::string time_text(double s) { return scaled(s, {{1, "s", 3}, {1e-3, "ms", 3}, {1e-6, "us", 1}}); }

// "5 7..9 12": consecutive PSNs as ranges, `times` appended where a PSN went more than once.
std::string psn_ranges(const std::map<std::uint32_t, std::uint32_t>& psns) {
  std::string s;
  for (auto it = psns.begin(); it != psns.end();) {
    auto last = it;
    while (std::next(last) != psns.end() && std::next(last)->first == last->first + 1 && std::next(last)->second == it->second)
      ++last;
    s += " " + std::to_string(it->first) + (last != it ? ".." + std::to_string(last->first) : "");
    if (it->second > 1) s += " (x" + std::to_string(it->second) + ")";
    it = std::next(last);
  }
  return s;
}

// The two directions of one connection: A -> (B, qp b) and B -> (A, qp a); either may be absent.
struct Connection {
  const Flow* ab = nullptr;
  const Flow* ba = nullptr;
  std::int64_t first_ns() const { return std::min(ab ? ab->first_ns : INT64_MAX, ba ? ba->first_ns : INT64_MAX); }
  std::int64_t last_ns() const { return std::max(ab ? ab->last_ns : INT64_MIN, ba ? ba->last_ns : INT64_MIN); }
};

std::vector<Connection> connections(const Analysis& a) {
  std::vector<Connection> out;
  std::set<const Flow*> done;
  for (const auto& f : a.flows()) {
    if (done.count(f.get()) || !f->frames) continue;
    // A flow of answers only is listed from its requests' side.
    if (!f->requests && f->peer && f->peer->requests && !done.count(f->peer)) continue;
    Connection c{f.get(), f->peer};
    done.insert(f.get());
    if (f->peer) done.insert(f->peer);
    out.push_back(c);
  }
  return out;
}

// The goodput series of one connection: from its first frame to its last, in --interval steps
// or about kSeriesPoints of a 1-2-5 width.
struct Series {
  std::int64_t step_ns = 0;
  std::vector<double> bps;
};

Series goodput_series(const Connection& c, const Analysis& a, const SummaryOptions& o) {
  Series s;
  const std::int64_t from = c.first_ns() - a.first_ns();
  const std::int64_t duration = std::max<std::int64_t>(c.last_ns() - c.first_ns(), 1);
  s.step_ns = o.interval_ns > 0 ? o.interval_ns : nice_interval_ns(duration, kSeriesPoints);
  const std::int64_t n = std::min<std::int64_t>(duration / s.step_ns + 1, 10000);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t lo = from + s.step_ns * i, hi = lo + s.step_ns;
    double b = 0;
    if (c.ab) b += c.ab->goodput.bytes_between(lo, hi);
    if (c.ba) b += c.ba->goodput.bytes_between(lo, hi);
    s.bps.push_back(b * 8 / (static_cast<double>(s.step_ns) / 1e9));
  }
  return s;
}

double goodput_bps(const Connection& c) {
  const double bytes = static_cast<double>((c.ab ? c.ab->goodput.total() : 0) + (c.ba ? c.ba->goodput.total() : 0));
  const double secs = static_cast<double>(c.last_ns() - c.first_ns()) / 1e9;
  return secs > 0 ? bytes * 8 / secs : 0;
}

std::string endpoint(const IpView& ip, std::uint32_t qpn) { return ip.str() + " qp " + hex24(qpn); }

// Both directions' NAKs, as "NAK psn-sequence-error x3 (PSNs 0x000010 0x000020)".
std::string naks_text(const Flow* f, const char* dir) {
  std::string s;
  if (!f) return s;
  for (const auto& [syn, n] : f->naks) {
    s += std::string("    ") + dir + " " + proto::to_string(proto::Syndrome{syn}) + " x" + std::to_string(n) + " (PSNs";
    for (std::uint32_t p : f->nak_psns.at(syn)) s += " " + std::to_string(p);
    if (f->nak_psns.at(syn).size() < n) s += " ...";
    s += ")\n";
  }
  return s;
}

std::string requests_text(const Flow* f, const char* dir) {
  if (!f || !f->requests) return {};
  std::string s = std::string("    requests ") + dir + ": " + std::to_string(f->requests) + ", " + std::to_string(f->retransmitted) +
                  " retransmitted";
  if (f->retransmitted) {
    s += " (" + std::to_string(f->retransmitted_distinct) + " PSNs:" + psn_ranges(f->retransmitted_psns);
    if (f->retransmitted_distinct > f->retransmitted_psns.size()) s += " ...";
    s += ")";
  }
  s += ", " + std::to_string(f->duplicates) + " duplicates (already acknowledged)\n";
  if (f->rtt.samples) {
    s += std::string("    RTT ") + dir + " request to its response: " + std::to_string(f->rtt.samples) + " samples, min " +
         time_text(static_cast<double>(f->rtt.min_ns) / 1e9) + ", median " + time_text(static_cast<double>(f->rtt.median_ns()) / 1e9) +
         ", max " + time_text(static_cast<double>(f->rtt.max_ns) / 1e9) + "\n";
  }
  return s;
}

std::string acks_text(const Flow* f, const char* dir) {
  if (!f || !f->acks) return {};
  char buf[200];
  std::snprintf(buf, sizeof buf, "    ACKs %s: %llu covering %llu packets (%.2f packets per ACK, %llu coalesced)\n", dir,
                static_cast<unsigned long long>(f->acks), static_cast<unsigned long long>(f->packets_acked),
                f->acks ? static_cast<double>(f->packets_acked) / static_cast<double>(f->acks) : 0.0,
                static_cast<unsigned long long>(f->coalesced_acks));
  return buf;
}

void rtt_json(JsonWriter& w, const RttStats& r) {
  w.key("rtt").begin_object();
  w.field("samples", r.samples);
  if (r.samples) {
    w.field("min_s", static_cast<double>(r.min_ns) / 1e9);
    w.field("median_s", static_cast<double>(r.median_ns()) / 1e9);
    w.field("mean_s", r.sum_ns / static_cast<double>(r.samples) / 1e9);
    w.field("max_s", static_cast<double>(r.max_ns) / 1e9);
  }
  w.end_object();
}

void flow_json(JsonWriter& w, const Flow& f) {
  w.begin_object();
  w.field("src", f.key.src.str());
  w.field("dst", f.key.dst.str());
  w.field("qpn", f.key.qpn);
  w.field("transport", f.transport);
  w.field("frames", f.frames);
  w.field("bytes", f.bytes);
  w.field("payload_bytes", f.payload_bytes);
  w.field("requests", f.requests);
  w.field("responses", f.responses);
  w.field("retransmitted", f.retransmitted);
  w.field("retransmitted_distinct_psns", f.retransmitted_distinct);
  w.key("retransmitted_psns").begin_array();
  for (const auto& [psn, n] : f.retransmitted_psns) w.value(std::uint64_t{psn});
  w.end_array();
  w.field("duplicates", f.duplicates);
  w.field("acks", f.acks);
  w.field("packets_acked", f.packets_acked);
  w.field("coalesced_acks", f.coalesced_acks);
  w.key("naks").begin_array();
  for (const auto& [syn, n] : f.naks) {
    w.begin_object();
    w.field("syndrome", std::uint64_t{syn});
    w.field("meaning", proto::to_string(proto::Syndrome{syn}));
    w.field("count", n);
    w.key("psns").begin_array();
    for (std::uint32_t p : f.nak_psns.at(syn)) w.value(std::uint64_t{p});
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.field("ce", f.ce);
  w.field("cnps", f.cnps);
  w.field("goodput_bytes", f.goodput.total());
  rtt_json(w, f.rtt);
  w.end_object();
}

}  // namespace

void Summary::add(const FrameView& v) {
  ++frames_;
  ++verdicts_[static_cast<std::size_t>(v.verdict)];
  ++reasons_[static_cast<std::size_t>(v.error)];
  if (v.has_bth && v.error == ParseError::None) ++opcodes_[v.bth.opcode];
  if (v.icrc && static_cast<std::size_t>(*v.icrc) < icrc_.size()) ++icrc_[static_cast<std::size_t>(*v.icrc)];
}

std::string Summary::human(bool complete, const Analysis& a, const SummaryOptions& o) const {
  std::string s = "frames: " + std::to_string(frames_) + (complete ? "" : " (reading stopped early)") + "\n";
  s += "verdicts:\n";
  for (Verdict v : kVerdictOrder)
    if (verdict_count(v)) s += line(capture::to_string(v), verdict_count(v));
  s += "reasons:\n";
  for (std::size_t e = 0; e < reasons_.size(); ++e)
    if (reasons_[e]) s += line(proto::to_string(static_cast<ParseError>(e)), reasons_[e]);
  s += "opcodes (decoded frames):\n";
  for (std::size_t op = 0; op < opcodes_.size(); ++op)
    if (opcodes_[op]) s += line(opcode_label(static_cast<std::uint8_t>(op)), opcodes_[op]);
  s += "icrc (decoded frames):\n";
  for (IcrcStatus st : kIcrcOrder)
    if (icrc_count(st)) s += line(proto::to_string(st), icrc_count(st));

  if (a.flows().empty()) return s;
  char buf[320];
  s += "QPs (traffic to each destination QP):\n";
  std::snprintf(buf, sizeof buf, "  %-26s %-16s %-9s %8s %10s %10s %6s %5s %5s %5s %5s\n", "to QP", "from", "transport",
                "frames", "bytes", "payload", "retx", "dup", "NAKs", "CE", "CNPs");
  s += buf;
  for (const auto& f : a.flows()) {
    if (!f->frames) continue;
    std::uint64_t naks = 0;
    for (const auto& [syn, n] : f->naks) naks += n;
    std::snprintf(buf, sizeof buf, "  %-26s %-16s %-9s %8llu %10s %10s %6llu %5llu %5llu %5llu %5llu\n",
                  endpoint(f->key.dst, f->key.qpn).c_str(), f->key.src.str().c_str(), f->transport.c_str(),
                  static_cast<unsigned long long>(f->frames), bytes_text(static_cast<double>(f->bytes)).c_str(),
                  bytes_text(static_cast<double>(f->payload_bytes)).c_str(), static_cast<unsigned long long>(f->retransmitted),
                  static_cast<unsigned long long>(f->duplicates), static_cast<unsigned long long>(naks),
                  static_cast<unsigned long long>(f->ce), static_cast<unsigned long long>(f->cnps));
    s += buf;
  }
  s += "connections (A -> B: traffic from A to B's QP; like tshark -z conv):\n";
  int n = 0;
  for (const Connection& c : connections(a)) {
    const Flow& head = c.ab ? *c.ab : *c.ba;
    const IpView& a_ip = head.key.src;
    const IpView& b_ip = head.key.dst;
    const std::string a_qp = c.ba ? hex24(c.ba->key.qpn) : std::string("?");
    s += "  #" + std::to_string(++n) + " A " + a_ip.str() + " qp " + a_qp + " <-> B " + endpoint(b_ip, head.key.qpn) + "  " +
         head.transport + "\n";
    const double secs = static_cast<double>(c.last_ns() - c.first_ns()) / 1e9;
    std::snprintf(buf, sizeof buf, "    A->B %llu frames %s, B->A %llu frames %s, over %s; goodput %s\n",
                  static_cast<unsigned long long>(c.ab ? c.ab->frames : 0), bytes_text(c.ab ? static_cast<double>(c.ab->bytes) : 0).c_str(),
                  static_cast<unsigned long long>(c.ba ? c.ba->frames : 0), bytes_text(c.ba ? static_cast<double>(c.ba->bytes) : 0).c_str(),
                  time_text(secs).c_str(), rate_text(goodput_bps(c)).c_str());
    s += buf;
    const Series series = goodput_series(c, a, o);
    if (series.bps.size() > 1) {
      s += "    goodput per " + time_text(static_cast<double>(series.step_ns) / 1e9) + " (Mb/s):";
      int shown = 0;
      for (double bps : series.bps) {
        if (shown++ == 40) {
          s += " ...";
          break;
        }
        std::snprintf(buf, sizeof buf, " %.1f", bps / 1e6);
        s += buf;
      }
      s += "\n";
    }
    s += requests_text(c.ab, "A->B") + requests_text(c.ba, "B->A");
    s += acks_text(c.ba, "B->A") + acks_text(c.ab, "A->B");
    s += naks_text(c.ba, "NAKs B->A:") + naks_text(c.ab, "NAKs A->B:");
    const std::uint64_t ce = (c.ab ? c.ab->ce : 0) + (c.ba ? c.ba->ce : 0);
    const std::uint64_t cnps = (c.ab ? c.ab->cnps : 0) + (c.ba ? c.ba->cnps : 0);
    if (ce || cnps) {
      std::snprintf(buf, sizeof buf, "    ECN CE: %llu A->B, %llu B->A; CNPs: %llu to B's QP, %llu to A's QP\n",
                    static_cast<unsigned long long>(c.ab ? c.ab->ce : 0), static_cast<unsigned long long>(c.ba ? c.ba->ce : 0),
                    static_cast<unsigned long long>(c.ab ? c.ab->cnps : 0), static_cast<unsigned long long>(c.ba ? c.ba->cnps : 0));
      s += buf;
    }
  }
  return s;
}

std::string Summary::json(bool complete, const Analysis& a, const SummaryOptions& o) const {
  JsonWriter w;
  w.begin_object();
  w.field("frames", frames_);
  w.field("complete", complete);
  w.key("verdicts").begin_object();
  for (Verdict v : kVerdictOrder) w.field(capture::to_string(v), verdict_count(v));
  w.end_object();
  w.key("reasons").begin_object();
  for (std::size_t e = 0; e < reasons_.size(); ++e)
    if (reasons_[e]) w.field(proto::to_string(static_cast<ParseError>(e)), reasons_[e]);
  w.end_object();
  w.key("opcodes").begin_array();
  for (std::size_t op = 0; op < opcodes_.size(); ++op) {
    if (!opcodes_[op]) continue;
    w.begin_object();
    w.field("opcode", static_cast<std::uint64_t>(op));
    w.field("name", proto::describe_opcode(static_cast<std::uint8_t>(op)).name);
    w.field("count", opcodes_[op]);
    w.end_object();
  }
  w.end_array();
  w.key("icrc").begin_object();
  for (IcrcStatus st : kIcrcOrder) w.field(proto::to_string(st), icrc_count(st));
  w.end_object();
  w.key("qps").begin_array();
  for (const auto& f : a.flows())
    if (f->frames) flow_json(w, *f);
  w.end_array();
  w.key("connections").begin_array();
  for (const Connection& c : connections(a)) {
    w.begin_object();
    const Flow& head = c.ab ? *c.ab : *c.ba;
    w.field("a", head.key.src.str());
    if (c.ba) w.field("a_qpn", c.ba->key.qpn);
    w.field("b", head.key.dst.str());
    w.field("b_qpn", head.key.qpn);
    w.field("transport", head.transport);
    w.field("duration_s", static_cast<double>(c.last_ns() - c.first_ns()) / 1e9);
    w.field("goodput_bps", goodput_bps(c));
    const Series series = goodput_series(c, a, o);
    w.field("goodput_interval_s", static_cast<double>(series.step_ns) / 1e9);
    w.key("goodput_series_bps").begin_array();
    for (double bps : series.bps) w.value(bps);
    w.end_array();
    // A direction with no traffic is left out (never null: every key has one type).
    if (c.ab) flow_json(w.key("a_to_b"), *c.ab);
    if (c.ba) flow_json(w.key("b_to_a"), *c.ba);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str();
}

}  // namespace roce::inspect
