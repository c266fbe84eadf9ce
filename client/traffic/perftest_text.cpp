#include "client/traffic/perftest_text.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>

namespace roce::client {

namespace {

constexpr std::string_view kRule =
    "---------------------------------------------------------------------------------------\n";

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return std::string(buf, static_cast<std::size_t>(std::max(0, std::min<int>(n, sizeof buf - 1))));
}

const char* test_name(Verb v) {
  switch (v) {
    case Verb::Send: return "Send";
    case Verb::Write: return "RDMA_Write";
    case Verb::Read: return "RDMA_Read";
    case Verb::Atomic: return "Atomic";
    case Verb::AtomicWrite: return "Atomic_Write";
    case Verb::Flush: return "Flush";
  }
  return "?";
}

std::string cpu_column(std::optional<double> cpu) { return cpu ? format("\t    %-3.2f\n", *cpu) : "\n"; }

}  // namespace

std::string perftest_rule() { return std::string(kRule); }

std::string perftest_waiting_banner() {
  return "\n************************************\n"
         "* Waiting for client to connect... *\n"
         "************************************\n";
}

std::string to_string(PerftestOutput o) {
  switch (o) {
    case PerftestOutput::Full: return "full";
    case PerftestOutput::Bandwidth: return "bandwidth";
    case PerftestOutput::MessageRate: return "message_rate";
    case PerftestOutput::Latency: return "latency";
  }
  return "?";
}

std::optional<PerftestOutput> perftest_output_from_string(std::string_view s) {
  for (PerftestOutput o : {PerftestOutput::Bandwidth, PerftestOutput::MessageRate, PerftestOutput::Latency})
    if (s == to_string(o)) return o;
  return std::nullopt;
}

std::string perftest_header(const PerftestHeader& h) {
  std::string s(kRule);
  s += "                    ";
  s += test_name(h.verb);
  s += " ";
  if (h.verb == Verb::Atomic) s += h.atomic_type + " ";
  if (h.measure == Measure::Bandwidth) {
    if (h.duplex) s += "Bidirectional ";
    if (h.post_list > 1) s += "Post List ";
    s += "BW ";
  } else {
    s += "Latency ";
  }
  s += "Test\n";
  s += format(" Dual-port       : OFF\t\tDevice         : %s\n", h.device.c_str());
  s += format(" Number of qps   : %u\t\tTransport type : IB\n", h.qps);
  s += format(" Connection type : %s\t\tUsing SRQ      : %s\n", h.connection.c_str(), h.use_srq ? "ON" : "OFF");
  s += format(" PCIe relax order: %s\n", h.pcie_relax_order.c_str());
  s += format(" ibv_wr* API     : %s\n", h.wr_api ? "ON" : "OFF");
  if (!h.server || h.duplex) s += format(" TX depth        : %u\n", h.tx_depth);
  if (h.post_list > 1) s += format(" Post List       : %u\n", h.post_list);
  if (h.verb == Verb::Send && (h.server || h.duplex)) s += format(" RX depth        : %u\n", h.rx_depth);
  if (h.measure == Measure::Bandwidth) s += format(" CQ Moderation   : %u\n", h.cq_mod);
  s += format(" Mtu             : %u[B]\n", h.mtu_bytes);
  s += format(" Link type       : %s\n", h.link_type.c_str());
  if (h.gid_index >= 0) s += format(" GID index       : %d\n", h.gid_index);
  if (!takes_responder_resource(h.verb)) s += format(" Max inline data : %u[B]\n", h.inline_size);
  else s += format(" Outstand reads  : %u\n", h.out_reads);
  s += format(" rdma_cm QPs\t : %s\n", h.rdma_cm ? "ON" : "OFF");
  s += format(" Data ex. method : %s\n", h.rdma_cm ? "rdma_cm" : "Ethernet");
  if (h.rdma_cm && h.server) {
    // ctx_print_test_info's lines for an rdma_cm server (perftest prints them before the client comes).
    s += kRule;
    s += " Waiting for client rdma_cm QP to connect\n";
    s += " Please run the same command with the IB/RoCE interface IP\n";
  }
  s += kRule;
  return s;
}

std::string perftest_address(const PerftestDest& d, Verb verb, bool remote, bool with_gid) {
  std::string s = format(" %s address: LID %#04x QPN %#06x PSN %#06x", remote ? "remote" : "local", d.lid, d.qpn, d.psn);
  // ATOMIC_WRITE and FLUSH as READ: responder resources and a remote address.
  const bool read_like = verb == Verb::Read || verb == Verb::AtomicWrite || verb == Verb::Flush;
  if (read_like) s += format(" OUT %#04x", d.out_reads);
  if (read_like || verb == Verb::Write)
    s += format(" RKey %#08x VAddr %#016llx", d.rkey, static_cast<unsigned long long>(d.vaddr));
  s += "\n";
  if (with_gid) {
    s += " GID: ";
    for (int i = 0; i < 16; ++i) s += format(i ? ":%02d" : "%02d", d.gid.raw[i]);
    s += "\n";
  }
  return s;
}

double perftest_bw_units(double bytes_per_s, bool gbits) { return bytes_per_s / (gbits ? 125000000.0 : 1048576.0); }

std::string perftest_bw_columns(bool gbits, bool cpu_util) {
  std::string s = gbits ? " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
                        : " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
  return s + (cpu_util ? "    CPU_Util[%]\n" : "\n");
}

std::string perftest_bw_row(const BwFigures& f, bool gbits, std::optional<double> cpu) {
  const double peak = perftest_bw_units(f.bw_peak_bps, gbits), avg = perftest_bw_units(f.bw_avg_bps, gbits);
  const auto size = static_cast<unsigned long>(f.size);
  const auto iters = static_cast<std::uint64_t>(f.iterations);
  // Small Gb/s figures get six decimals (perftest's inc_accuracy).
  std::string s = gbits && avg < 0.1
                      ? format(" %-7lu    %" PRIu64 "           %-7.6lf            %-7.6lf            %-7.6lf", size, iters,
                               peak, avg, f.msg_rate_mpps)
                      : format(" %-7lu    %-10" PRIu64 "       %-7.2lf            %-7.2lf\t\t   %-7.6lf", size, iters, peak,
                               avg, f.msg_rate_mpps);
  return s + cpu_column(cpu);
}

std::string perftest_lat_columns(bool duration, bool cpu_util) {
  std::string s = duration ? " #bytes        #iterations       t_avg[usec]    tps average"
                           : " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
                             "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";
  return s + (cpu_util ? "    CPU_Util[%]\n" : "\n");
}

std::string perftest_lat_row(const LatFigures& f, std::optional<double> cpu) {
  return format(" %-7lu %" PRIu64 "          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f",
                static_cast<unsigned long>(f.size), static_cast<std::uint64_t>(f.iterations), f.t_min_us, f.t_max_us,
                f.t_typical_us, f.t_avg_us, f.t_stdev_us, f.p99_us, f.p999_us) +
         cpu_column(cpu);
}

std::string perftest_lat_duration_row(const LatDurationFigures& f, std::optional<double> cpu) {
  return format(" %-7lu       %" PRIu64 "            %-7.2f        %-7.2f", static_cast<unsigned long>(f.size),
                static_cast<std::uint64_t>(f.iterations), f.t_avg_us, f.tps) +
         cpu_column(cpu);
}

std::string perftest_single_figure(double v) { return format("%lf\n", v); }

bool perftest_side_shows_table(const PerftestHeader& h) {
  return !(h.server && h.measure == Measure::Latency && takes_responder_resource(h.verb));
}

std::string perftest_preamble(const PerftestHeader& h, const PerftestStyle& st, const std::vector<PerftestDest>& mine,
                              const std::vector<PerftestDest>& peers, bool table) {
  if (st.output != PerftestOutput::Full) return {};
  std::string s = perftest_header(h);
  for (const PerftestDest& d : mine) s += perftest_address(d, h.verb, false, h.gid_index >= 0);
  for (const PerftestDest& d : peers) s += perftest_address(d, h.verb, true, h.gid_index >= 0);
  if (!table || !perftest_side_shows_table(h)) return s;
  return s + std::string(kRule) + (h.measure == Measure::Bandwidth ? perftest_bw_columns(st.gbits, st.cpu_util)
                                              : perftest_lat_columns(st.duration, st.cpu_util));
}

std::string perftest_result(const PerftestStyle& st, const BwFigures& f, std::optional<double> cpu) {
  if (st.output == PerftestOutput::Bandwidth) return perftest_single_figure(perftest_bw_units(f.bw_avg_bps, st.gbits));
  if (st.output == PerftestOutput::MessageRate) return perftest_single_figure(f.msg_rate_mpps);
  return perftest_bw_row(f, st.gbits, st.cpu_util ? cpu.value_or(0) : std::optional<double>{});
}

std::string perftest_result(const PerftestStyle& st, const LatFigures& f, std::optional<double> cpu) {
  if (st.output == PerftestOutput::Latency) return perftest_single_figure(f.t_avg_us);
  return perftest_lat_row(f, st.cpu_util ? cpu.value_or(0) : std::optional<double>{});
}

std::string perftest_result(const PerftestStyle& st, const LatDurationFigures& f, std::optional<double> cpu) {
  if (st.output == PerftestOutput::Latency) return perftest_single_figure(f.t_avg_us);
  return perftest_lat_duration_row(f, st.cpu_util ? cpu.value_or(0) : std::optional<double>{});
}

std::string perftest_closing(const PerftestStyle& st) { return st.output == PerftestOutput::Full ? std::string(kRule) : ""; }

}  // namespace roce::client
