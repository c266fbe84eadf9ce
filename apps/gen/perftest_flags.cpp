#include "apps/gen/perftest_flags.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace roce::client {

namespace {

// perftest's limits (src/perftest_parameters.h).
constexpr long kMinIters = 5, kMaxIters = 100'000'000;
constexpr long kMaxTxDepth = 15000, kMaxRxDepth = 16384, kMaxQps = 16384, kMaxCqMod = 1024;
constexpr long kMaxInline = 912, kMaxGidIndex = 64, kMaxTos = 255;
constexpr std::uint64_t kMaxSize = 2147483647;  // UINT_MAX / 2
constexpr std::uint32_t kSizeCqModLimit = 8192;  // MSG_SIZE_CQ_MOD_LIMIT
constexpr std::uint64_t kNoPeakAbove = 20000;    // iterations
constexpr double kDefaultDuration = 5;           // DEF_DURATION: --run_infinitely's period
// Inline defaults perftest gives the devices it knows (DEF_INLINE_WRITE, DEF_INLINE_SEND_RC_UC_XRC):
// latency tests send small messages inline, bandwidth tests do not.
constexpr std::uint32_t kDefInlineWrite = 220, kDefInlineSend = 236;

Error bad(const std::string& flag, const std::string& text, const std::string& why) {
  const std::string given = text.empty() ? flag : flag + (flag.rfind("--", 0) == 0 ? "=" : " ") + text;
  return make_error(EINVAL, given + ": " + why);
}

// CHECK_VALUE: a whole integer in C syntax (decimal, 0x hex, 0 octal).
Result<long> integer(const std::string& flag, const std::string& text, const std::string& name) {
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 0);
  if (text.empty() || *end != '\0' || errno == ERANGE) return bad(flag, text, name + " argument " + text + " should be int");
  return v;
}

// CHECK_VALUE_IN_RANGE.
Result<long> in_range(const std::string& flag, const std::string& text, const std::string& name, long lo, long hi) {
  auto v = integer(flag, text, name);
  if (!v) return v;
  if (*v < lo || *v > hi)
    return bad(flag, text, name + " should be between " + std::to_string(lo) + " and " + std::to_string(hi));
  return v;
}

// -s: a byte count with perftest's K and M suffixes.
Result<std::uint32_t> message_size(const std::string& text) {
  const Error e = bad("-s", text, "Message Size should be between 1 and " + std::to_string(kMaxSize));
  std::string digits = text;
  std::uint64_t factor = 1;
  if (!digits.empty() && (digits.back() == 'K' || digits.back() == 'M')) {
    factor = digits.back() == 'K' ? 1024 : 1024 * 1024;
    digits.pop_back();
  }
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(digits.c_str(), &end, 0);
  if (digits.empty() || *end != '\0' || errno == ERANGE || v < 1) return e;
  if (static_cast<std::uint64_t>(v) > kMaxSize / factor) return e;
  return static_cast<std::uint32_t>(static_cast<std::uint64_t>(v) * factor);
}

Result<double> seconds(const std::string& flag, const std::string& text, const std::string& name, bool zero_ok) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v)) return bad(flag, text, name + " argument " + text + " should be a number of seconds");
  if (zero_ok ? v < 0 : v <= 0) return bad(flag, text, name + (zero_ok ? " must be non-negative" : " must be positive"));
  return v;
}

}  // namespace

Result<PerftestFlags> resolve_perftest_flags(Verb verb, Measure measure, const PerftestFlagText& t,
                                             std::uint32_t device_max_reads) {
  const bool bw = measure == Measure::Bandwidth;
  const bool reads = takes_responder_resource(verb);
  PerftestFlags f;
  // init_perftest_params
  f.size = eight_byte_verb(verb) ? 8 : bw ? 65536 : 2;
  f.iters = bw && verb == Verb::Write ? 5000 : 1000;
  f.tx_depth = bw ? 128 : 1;
  f.rx_depth = verb == Verb::Send ? 512 : 1;

  // parser: each flag's own range and the tests it belongs to.
  if (t.size) {
    auto s = message_size(*t.size);
    if (!s) return s.error();
    if (eight_byte_verb(verb) && *s != 8) return bad("-s", *t.size, "Message size cannot be changed for Atomic tests");
    f.size = *s;
  }
  if (t.iters) {
    auto v = in_range("-n", *t.iters, "Iteration num", kMinIters, kMaxIters);
    if (!v) return v.error();
    f.iters = static_cast<std::uint64_t>(*v);
  }
  if (t.tx_depth) {
    auto v = in_range("-t", *t.tx_depth, "Tx depth", 1, kMaxTxDepth);
    if (!v) return v.error();
    f.tx_depth = static_cast<std::uint32_t>(*v);
  }
  if (t.qps) {
    if (!bw) return bad("-q", *t.qps, "Multiple QPs only available on bw tests");
    auto v = in_range("-q", *t.qps, "num of Qps", 1, kMaxQps);
    if (!v) return v.error();
    f.qps = static_cast<unsigned>(*v);
  }
  if (t.inline_size) {
    auto v = in_range("-I", *t.inline_size, "Max inline", 0, kMaxInline);
    if (!v) return v.error();
    if (reads) return bad("-I", *t.inline_size, "Inline feature not available on READ/Atomic verbs");
    f.inline_size = static_cast<std::uint32_t>(*v);
  } else if (!bw) {
    f.inline_size = verb == Verb::Write ? kDefInlineWrite : verb == Verb::Send ? kDefInlineSend : 0;
  }
  long out_reads = 0;
  if (t.out_reads) {
    auto v = integer("-o", *t.out_reads, "Outstanding Reads");
    if (!v) return v.error();
    if (!reads) return bad("-o", *t.out_reads, "Setting Outstanding reads only available on READ verb");
    out_reads = *v;
  }
  if (t.rx_depth) {
    auto v = in_range("-r", *t.rx_depth, "Rx depth", 1, kMaxRxDepth);
    if (!v) return v.error();
    if (verb != Verb::Send && *v > 1) return bad("-r", *t.rx_depth, "On RDMA verbs rx depth can be only 1");
    f.rx_depth = static_cast<std::uint32_t>(*v);
  }
  if (t.cq_mod) {
    auto v = in_range("-Q", *t.cq_mod, "CQ moderation", 1, kMaxCqMod);
    if (!v) return v.error();
    f.cq_mod = static_cast<std::uint32_t>(*v);
  }
  if (t.post_list) {
    auto v = integer("-l", *t.post_list, "Send Post List size");
    if (!v) return v.error();
    if (*v < 1) return bad("-l", *t.post_list, "Send Post List size must be positive");
    f.post_list = static_cast<std::uint32_t>(*v);
  }
  if (t.duration) {
    auto v = seconds("-D", *t.duration, "Duration period", false);
    if (!v) return v.error();
    f.duration_s = *v;
  }
  std::optional<double> margin;
  if (t.margin) {
    auto v = seconds("-f", *t.margin, "Margin", true);
    if (!v) return v.error();
    margin = *v;
  }
  // perftest's -a runs the largest size too, and an atomic is 8 bytes.
  if (t.all && eight_byte_verb(verb)) return bad("-a", "", "Message size cannot be changed for Atomic tests (atomics are 8 bytes)");
  if (t.events && verb == Verb::Write) return bad("-e", "", "Events feature not available on WRITE verb");
  if (t.bidirectional && !bw) return bad("-b", "", "Bidirectional is only available in BW test");
  if (t.no_peak && !bw) return bad("-N", "", "NoPeak only valid for BW tests");
  if (t.gid_index) {
    auto v = in_range("-x", *t.gid_index, "Gid index", 0, kMaxGidIndex);
    if (!v) return v.error();
    f.gid_index = static_cast<int>(*v);
    f.notes.push_back("-x " + *t.gid_index +
                      ": the GID is --ip's address (RoCEv2, IPv4-mapped) whatever the index; shown as GID index " +
                      std::to_string(f.gid_index));
  }
  if (t.ib_port) {
    auto v = integer("-i", *t.ib_port, "IB Port");
    if (!v) return v.error();
    if (*v < 1) return bad("-i", *t.ib_port, "IB Port can't be less than 1");
    if (*v > 1) return bad("-i", *t.ib_port, "this device has one port, 1 (the DPDK port given by --dev)");
    f.notes.push_back("-i 1: port 1 is the DPDK port given by --dev");
  }
  if (t.ib_dev) f.notes.push_back("-d " + *t.ib_dev + ": ignored; the device is the DPDK port given by --dev");
  if (t.cpu_freq) f.notes.push_back("-F: nothing to check; times come from the TSC at its measured rate, not from a CPU frequency");
  if (t.ipv6) f.notes.push_back("--ipv6: the GID and rdma_cm's addresses are --ip's and the server's, in their own family");
  if (t.tos) {
    auto v = in_range("-T", *t.tos, "TOS", 0, kMaxTos);
    if (!v) return v.error();
    f.traffic_class = static_cast<std::uint8_t>(*v);
  }
  if (t.tclass) {
    auto v = in_range("--tclass", *t.tclass, "traffic class", 0, kMaxTos);
    if (!v) return v.error();
    f.traffic_class = static_cast<std::uint8_t>(*v);
  }
  if (t.output) {
    auto o = perftest_output_from_string(*t.output);
    if (!o) return bad("--output", *t.output, "Invalid verbosity level output flag. Please use bandwidth, latency, message_rate");
    f.output = *o;
  }
  f.all = t.all;
  f.gbits = t.gbits;
  f.bidirectional = t.bidirectional;
  f.events = t.events;
  f.mr_per_qp = t.mr_per_qp;
  f.no_peak = t.no_peak;
  f.run_infinitely = t.run_infinitely;
  f.use_srq = t.use_srq;
  if (f.events)
    f.notes.push_back("-e: completions are polled on the worker lcore that owns the QP (the dataplane has no completion events)");

  // force_dependecies: what the flags imply for each other.
  const bool duration = f.duration_s > 0 || f.run_infinitely;
  if (!duration) {
    f.tx_depth = static_cast<std::uint32_t>(std::min<std::uint64_t>(f.tx_depth, f.iters));
    if (verb == Verb::Send) f.rx_depth = static_cast<std::uint32_t>(std::min<std::uint64_t>(f.rx_depth, f.iters));
  }
  // perftest checks --use-srq after -r took -n's bound.
  if (f.use_srq && verb != Verb::Send) return bad("--use-srq", "", "Using SRQ only avavilible in SEND tests.");
  if (f.use_srq && f.qps > f.rx_depth) return bad("--use-srq", "", "Using SRQ depth should be greater than number of QPs.");
  if (f.size > kSizeCqModLimit && !f.all && !f.events && !t.cq_mod) f.cq_mod = 1;
  f.cq_mod = std::min(f.cq_mod, f.tx_depth);
  if (reads) f.inline_size = 0;
  if (f.post_list > 1) {
    if (!bw) return bad("-l", *t.post_list, "Post list is supported in BW tests only");
    if (!duration && f.iters % f.post_list != 0)
      return bad("-l", *t.post_list, "Number of iterations must be a multiple of post list size");
    if (f.post_list > f.tx_depth)
      return bad("-l", *t.post_list, "a post list longer than the TX depth (" + std::to_string(f.tx_depth) + ") never fits");
    if (!t.cq_mod) {
      f.cq_mod = f.post_list;
      f.notes.push_back("Post List requested - CQ moderation will be the size of the post list");
    } else if (f.post_list % f.cq_mod != 0) {
      return bad("-l", *t.post_list, "Post list size must be a multiple of CQ moderation");
    }
  }
  if (f.run_infinitely) {
    if (!bw) return bad("--run_infinitely", "", "run_infinitely exists only in BW tests for now.");
    if (f.events) return bad("--run_infinitely", "", "run_infinitely does not support events feature yet.");
    if (f.bidirectional && verb == Verb::Send)
      return bad("--run_infinitely", "", "run_infinitely mode is not supported in SEND Bidirectional BW test");
    if (f.duration_s == 0) f.duration_s = kDefaultDuration;
  }
  if (duration) {
    f.no_peak = true;
    if (f.events) return bad("-D", *t.duration, "Duration mode doesn't work with events.");
    if (f.all) return bad("-D", *t.duration, "Duration mode currently doesn't support running on all sizes.");
  }
  if (t.cpu_util) {
    if (duration) f.cpu_util = true;
    else f.notes.push_back("--cpu_util: CPU Utilization works only with Duration mode.");
  }
  if (f.output != PerftestOutput::Full) {
    if (bw && f.output == PerftestOutput::Latency)
      return bad("--output", *t.output, "Output verbosity level for BW can be: bandwidth, message_rate");
    if (!bw && f.output != PerftestOutput::Latency)
      return bad("--output", *t.output, "Output verbosity level for LAT can be: latency");
  }
  // perftest's margin is the whole seconds of a quarter of the duration.
  f.margin_s = margin ? *margin : std::floor(std::floor(f.duration_s) / 4);
  if (duration && !(f.duration_s > 2 * f.margin_s))
    return bad("-f", t.margin.value_or(""), "please check that DURATION > 2*MARGIN");
  if (verb == Verb::Send && f.rx_depth % 2 == 1 && !f.all && !f.run_infinitely) ++f.rx_depth;
  if (!duration && f.iters > kNoPeakAbove && bw) f.no_peak = true;
  if (reads) {
    const std::uint32_t max = std::max<std::uint32_t>(device_max_reads, 1);
    if (out_reads > static_cast<long>(max)) {
      f.notes.push_back("-o " + *t.out_reads + ": Number of outstanding reads is above max = " + std::to_string(max) +
                        "; changing to that max value");
      out_reads = max;
    }
    f.out_reads = out_reads <= 0 ? max : static_cast<std::uint32_t>(out_reads);
  }
  return f;
}

}  // namespace roce::client
