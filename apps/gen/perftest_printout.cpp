#include "apps/gen/perftest_printout.hpp"

namespace roce::client {

namespace {

std::vector<std::uint32_t> all_sizes(Verb v) {
  if (eight_byte_verb(v)) return {8};
  std::vector<std::uint32_t> s;
  for (std::uint32_t n = 2; n <= (8u << 20); n *= 2) s.push_back(n);
  return s;
}

}  // namespace

ClientOptions client_options_of(const GenOptions& g) {
  const PerftestFlags& p = g.perftest;
  ClientOptions co;
  co.server = g.server;
  co.port = g.oob_port;
  co.spec = g.spec;
  co.qps = p.qps;
  co.qp = g.qp;
  co.verify = g.verify;
  co.mr_per_qp = p.mr_per_qp;
  co.run_infinitely = p.run_infinitely;
  co.cpu_util = p.cpu_util;
  co.gbits = p.gbits;
  co.duplex = p.bidirectional;
  co.use_srq = p.use_srq;
  co.rdma_cm = g.rdma_cm;
  co.selective_repeat = g.selective_repeat;
  if (p.all) co.sizes = all_sizes(g.spec.verb);
  return co;
}

ServedTest served_test_of(const GenOptions& g) {
  ServedTest t;
  t.verb = g.spec.verb;
  t.measure = g.spec.measure;
  t.sizes = g.perftest.all ? all_sizes(g.spec.verb) : std::vector<std::uint32_t>{g.spec.size};
  t.iters = g.spec.duration > 0 ? 0 : g.spec.iters;
  return t;
}

PerftestHeader client_header_of(const GenOptions& g, const ClientConnection& c) {
  const PerftestFlags& p = g.perftest;
  PerftestHeader h;
  h.verb = g.spec.verb;
  h.measure = g.spec.measure;
  h.duplex = p.bidirectional;
  h.device = g.dev;
  h.qps = p.qps;
  h.tx_depth = p.tx_depth;
  h.rx_depth = p.rx_depth;
  h.post_list = p.post_list;
  h.cq_mod = p.cq_mod;
  h.mtu_bytes = 128u << c.mtu;
  h.gid_index = p.gid_index;
  h.inline_size = p.inline_size;
  h.out_reads = p.out_reads;
  h.rdma_cm = g.rdma_cm;
  h.use_srq = p.use_srq;
  return h;
}

PerftestStyle style_of(const GenOptions& g) {
  return PerftestStyle{g.perftest.gbits, g.perftest.output, g.perftest.cpu_util, g.spec.duration > 0};
}

void print_as_perftest(ClientOptions& co, const GenOptions& g, const std::function<void(const std::string&)>& out) {
  const PerftestStyle style = style_of(g);
  co.on_connected = [&g, style, out](const ClientConnection& c) {
    out(perftest_preamble(client_header_of(g, c), style, c.mine, c.peers));
  };
  co.on_bw = [style, out](const BwFigures& f) { out(perftest_result(style, f, f.cpu_util_percent)); };
  co.on_lat = [style, out](const LatFigures& f) { out(perftest_result(style, f)); };
  co.on_lat_duration = [style, out](const LatDurationFigures& f) { out(perftest_result(style, f, f.cpu_util_percent)); };
}

}  // namespace roce::client
