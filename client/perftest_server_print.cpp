#include "client/perftest_server_print.hpp"

namespace roce::client {

namespace {

constexpr std::uint32_t kSizeCqModLimit = 8192;  // perftest's MSG_SIZE_CQ_MOD_LIMIT
constexpr std::uint32_t kDefCqMod = 100;

}  // namespace

SessionTest perftest_test_of(const SessionReport& r, const ServerPrintSettings& s) {
  SessionTest t;
  if (s.test) {
    t.verb = s.test->verb;
    t.measure = s.test->measure;
    return t;
  }
  if (r.read_responses > 0) t.verb = Verb::Read;
  else if (r.atomic_responses > 0) t.verb = Verb::Atomic;
  else if (r.received_messages > 0) t.verb = Verb::Send;
  // RDMA bandwidth clients send their figures; a server not told its test serves SENDs as
  // ib_send_bw's and writes only for ib_write_lat.
  const bool bandwidth = r.client_results || (t.verb == Verb::Send) || (t.verb == Verb::Write && r.writes_sent == 0);
  t.measure = bandwidth ? Measure::Bandwidth : Measure::Latency;
  return t;
}

namespace {

// perftest's server prints the client's numbers as they came (in the client's units); under -b
// print_full_bw_report with our own iterations and both sides' figures added (ours are MB/sec).
BwFigures summed_row(const PerftestResults& c, const PerftestResults* mine, bool gbits) {
  BwFigures f;
  const double unit = gbits ? 125e6 : 1048576.0;  // bytes/s per Gb/sec or MB/sec
  f.size = static_cast<std::uint32_t>(c.size);
  f.iterations = c.iters;
  f.bw_peak_bps = c.bw_peak * unit;
  f.bw_avg_bps = c.bw_avg * unit;
  f.msg_rate_mpps = c.msg_rate;
  if (mine) {
    f.iterations = mine->iters;
    f.bw_peak_bps += mine->bw_peak * 1048576.0;
    f.bw_avg_bps += mine->bw_avg * 1048576.0;
    f.msg_rate_mpps += mine->msg_rate;
  }
  return f;
}

}  // namespace

std::string perftest_server_printout(const SessionReport& r, const ServerPrintSettings& s) {
  if (r.tool != "perftest") return {};
  const SessionTest t = perftest_test_of(r, s);
  PerftestHeader h;
  h.verb = t.verb;
  h.measure = t.measure;
  h.server = true;
  h.rdma_cm = r.rdma_cm;  // "rdma_cm QPs : ON", "Data ex. method : rdma_cm" as perftest -R's server
  h.connection = r.qp_type == IBV_QPT_UD ? "UD" : r.qp_type == IBV_QPT_UC ? "UC" : "RC";
  h.device = s.device;
  h.qps = static_cast<unsigned>(r.records.size());
  h.rx_depth = s.recv_depth;
  h.use_srq = r.shared_srq;
  // perftest's server takes its CQ moderation from its own -s; ours learns the size from the
  // client's figures.
  const std::uint64_t size = r.client_results ? r.client_results->size
                             : r.received_messages ? r.received_bytes / r.received_messages
                                                   : 65536;
  h.cq_mod = size > kSizeCqModLimit ? 1 : kDefCqMod;
  h.mtu_bytes = 128u << r.mtu;
  h.gid_index = 0;
  h.out_reads = s.max_rd_atomic;
  std::vector<PerftestDest> mine, peers;
  for (const auto& [ours, theirs] : r.records) {
    mine.push_back(ours);
    peers.push_back(theirs);
  }
  PerftestStyle style;
  style.gbits = s.gbits;
  // perftest's WRITE and SEND latency servers time their side of the ping-pong too. Ours times
  // its WRITEs (it writes first, as ib_write_lat's server does); it answers SENDs without timing
  // them, so an ib_send_lat session shows no table rather than one without figures.
  const bool write_lat = t.measure == Measure::Latency && t.verb == Verb::Write && !r.write_latency.empty();
  const bool table = t.measure == Measure::Bandwidth || write_lat;
  std::string out = perftest_waiting_banner() + perftest_preamble(h, style, mine, peers, table);
  if (t.measure == Measure::Bandwidth) {
    BwFigures f;
    if (r.duplex_sizes.size() > 1) {
      // -a -b: a row per size, as perftest's server prints each (print_full_bw_report in its loop).
      for (const auto& [client, own] : r.duplex_sizes) out += perftest_result(style, summed_row(client, &own, s.gbits));
      return out + perftest_closing(style);
    }
    if (r.client_results) {
      f = summed_row(*r.client_results, r.server_results ? &*r.server_results : nullptr, s.gbits);
    } else if (r.server_results) {
      // SEND -b -D exchanges no results: perftest's server prints its own (print_report_bw).
      const PerftestResults& m = *r.server_results;
      f.size = static_cast<std::uint32_t>(m.size);
      f.iterations = m.iters;
      f.bw_peak_bps = m.bw_peak * 1048576.0;
      f.bw_avg_bps = m.bw_avg * 1048576.0;
      f.msg_rate_mpps = m.msg_rate;
    } else {
      // SEND: the server's own figures over its receives, with no peak (perftest's noPeak).
      f.size = static_cast<std::uint32_t>(size);
      f.iterations = r.received_messages;
      const Nanos span = r.last_received - r.first_received;
      if (span > 0) {
        f.bw_avg_bps = static_cast<double>(r.received_bytes) * 1e9 / static_cast<double>(span);
        f.msg_rate_mpps = static_cast<double>(r.received_messages) * 1e3 / static_cast<double>(span);
      }
    }
    // A client that left without figures (a killed --run_infinitely client) has no row.
    if (r.client_results || r.server_results || r.received_messages > 0) out += perftest_result(style, f);
  } else if (write_lat) {
    for (auto [size, samples] : r.write_latency) {
      // The server writes first: its last round trip is the interval perftest does not time.
      const std::uint64_t iters = samples.size();
      if (!samples.empty()) samples.pop_back();
      out += perftest_result(style, perftest_latency(size, iters, std::move(samples), 2));
    }
  }
  return out + perftest_closing(style);
}

}  // namespace roce::client
