#include "apps/gen/emulate.hpp"

// --vdev values carry commas (net_tap0,iface=x): keep them whole.
#define CXXOPTS_VECTOR_DELIMITER '\0'
#include <cxxopts.hpp>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>

#include "client/cli.hpp"
#include "client/runtime.hpp"
#include "lib/util/json_writer.hpp"
#include "netsim/link_emulator.hpp"

namespace roce::client {

namespace {

constexpr const char* kUsage = R"(roce-gen emulate: a link with faults between two DPDK ports, both directions.

  roce-gen [DPDK EAL arguments --] emulate --port-a PORT --port-b PORT [faults]

Every frame received on one port leaves on the other through seeded faults: loss, duplication,
reordering, delay and jitter, and a bottleneck (--rate) whose queue marks ECN-capable frames CE
with RED (--red kmin,kmax,pmax) and drops at its tail. Put it between roce-gen and
roce-appliance to show retransmission (go-back-N) and DCQCN. A line per second and a summary.

Example (two TAP devices, the two ends bridged through the emulator):
  roce-gen -l 0-1 --vdev net_tap0,iface=e0 --vdev net_tap1,iface=e1 -- emulate \
      --port-a net_tap0 --port-b net_tap1 --loss 0.001 --rate 2 --red 20000,200000,0.2)";

std::optional<double> number(const std::string& s) {
  try {
    std::size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (...) {
  }
  return std::nullopt;
}

}  // namespace

Result<EmulateOptions> parse_emulate_options(const std::vector<std::string>& args) {
  EmulateOptions o;
  cxxopts::Options opts("roce-gen emulate", kUsage);
  opts.custom_help("[EAL args --] emulate --port-a PORT --port-b PORT [faults]");
  std::string red;
  double delay_us = 0, jitter_us = 0, reorder_us = 100, rate_gbps = 0;
  opts.add_options("Faults")
      ("loss", "probability a frame is lost", cxxopts::value<double>(o.faults.loss)->default_value("0"))
      ("dup", "probability a frame arrives twice", cxxopts::value<double>(o.faults.duplicate)->default_value("0"))
      ("reorder", "probability a frame is held back (then arrives after later ones)", cxxopts::value<double>(o.faults.reorder)->default_value("0"))
      ("reorder-delay", "how long a reordered frame is held back, microseconds", cxxopts::value<double>(reorder_us)->default_value("100"))
      ("delay", "one-way delay, microseconds", cxxopts::value<double>(delay_us)->default_value("0"))
      ("jitter", "extra delay uniform in [0, jitter] (keeps order), microseconds", cxxopts::value<double>(jitter_us)->default_value("0"))
      ("rate", "bottleneck rate in Gb/s (0: none, no queue and no marking)", cxxopts::value<double>(rate_gbps)->default_value("0"))
      ("queue", "bottleneck buffer in bytes (tail drop beyond)", cxxopts::value<std::uint64_t>(o.faults.queue_bytes)->default_value("1000000"))
      ("red", "RED ECN marking at the bottleneck: kmin,kmax bytes and pmax", cxxopts::value<std::string>(red)->default_value("5000,200000,0.01"))
      ("no-ecn", "no ECN marking at the bottleneck")
      ("seed", "random seed (same seed, same faults)", cxxopts::value<std::uint64_t>(o.seed)->default_value("1"));
  opts.add_options("Ports")
      ("vdev", "create a DPDK virtual device first (repeatable)", cxxopts::value<std::vector<std::string>>())
      ("port-a", "one side (DPDK port name or number)", cxxopts::value<std::string>(o.port_a))
      ("port-b", "the other side", cxxopts::value<std::string>(o.port_b))
      ("duration", "stop after this many seconds (0: at Ctrl-C)", cxxopts::value<double>(o.duration_s)->default_value("0"))
      ("interval", "seconds between progress lines (0: none)", cxxopts::value<double>(o.interval_s)->default_value("1"))
      ("json", "print the summary as JSON")
      ("h,help", "this text");
  std::vector<std::string> rest{args.empty() ? "roce-gen" : args[0]};
  rest.insert(rest.end(), args.begin() + std::min<std::size_t>(2, args.size()), args.end());
  auto parsed = parse_cli(opts, rest);
  if (!parsed) return parsed.error();
  const cxxopts::ParseResult& r = *parsed;
  if (r.count("help")) {
    o.help = true;
    o.help_text = opts.help({"Ports", "Faults"});
    return o;
  }
  if (!r.unmatched().empty()) return make_error(EINVAL, "unexpected argument '" + r.unmatched().front() + "'");
  if (r.count("vdev")) o.vdevs = r["vdev"].as<std::vector<std::string>>();
  if (o.port_a.empty() || o.port_b.empty()) return make_error(EINVAL, "give both ports: --port-a PORT --port-b PORT");
  if (o.port_a == o.port_b) return make_error(EINVAL, "--port-a and --port-b must be two different ports");
  if (delay_us < 0 || jitter_us < 0 || reorder_us < 0) return make_error(EINVAL, "delays must not be negative");
  o.faults.delay = static_cast<Nanos>(delay_us * 1e3);
  o.faults.jitter = static_cast<Nanos>(jitter_us * 1e3);
  o.faults.reorder_delay = static_cast<Nanos>(reorder_us * 1e3);
  if (rate_gbps < 0) return make_error(EINVAL, "--rate must be 0 (no bottleneck) or positive");
  o.faults.rate_bps = rate_gbps * 1e9;
  o.faults.ecn_marking = r.count("no-ecn") == 0;
  {
    std::vector<std::string> parts;
    std::stringstream ss(red);
    for (std::string p; std::getline(ss, p, ',');) parts.push_back(p);
    const auto kmin = parts.size() == 3 ? parse_size(parts[0]) : std::nullopt;
    const auto kmax = parts.size() == 3 ? parse_size(parts[1]) : std::nullopt;
    const auto pmax = parts.size() == 3 ? number(parts[2]) : std::nullopt;
    if (!kmin || !kmax || !pmax) return make_error(EINVAL, "bad --red '" + red + "': kmin,kmax,pmax (bytes, bytes, probability)");
    o.faults.red = cc::RedParams{*kmin, *kmax, *pmax};
  }
  if (auto why = netsim::check(o.faults)) return make_error(EINVAL, *why);
  if (o.duration_s < 0 || o.interval_s < 0) return make_error(EINVAL, "--duration and --interval must not be negative");
  o.json = r.count("json") > 0;
  return o;
}

namespace {

std::string summary_json(const EmulateOptions& o, const netsim::LinkStats& ab, const netsim::LinkStats& ba, double secs) {
  JsonWriter w;
  w.begin_object().field("seconds", secs).field("faults", netsim::to_string(o.faults)).field("seed", o.seed);
  for (const auto& [name, st] : {std::pair<const char*, const netsim::LinkStats*>{"a_to_b", &ab}, {"b_to_a", &ba}}) {
    w.key(name).begin_object();
    for (std::size_t k = 0; k < netsim::kLinkCounterCount; ++k)
      w.field(netsim::to_string(static_cast<netsim::LinkCounter>(k)), st->v[k]);
    w.end_object();
  }
  w.end_object();
  return w.str();
}

}  // namespace

int run_emulate(const EmulateOptions& o, const std::vector<std::string>& eal_args) {
  auto fail = [](const std::string& why, int code = 1) {
    std::fprintf(stderr, "roce-gen emulate: %s\n", why.c_str());
    return code;
  };
  ToolEal tool_eal;
  if (int rc = tool_eal.start(eal_args, o.vdevs, fail)) return rc;
  netsim::LinkEmulatorOptions eo;
  eo.name = "gen_emu";
  eo.x.name = o.port_a;
  eo.y.name = o.port_b;
  eo.x_to_y = o.faults;
  eo.y_to_x = o.faults;
  eo.seed = o.seed;
  auto emu = netsim::LinkEmulator::create(eo);
  if (!emu) return fail(emu.error().message, emu.error().code == ENODEV ? 2 : 1);
  netsim::LinkEmulator& e = **emu;
  std::fprintf(stderr, "roce-gen emulate: %s <-> %s, %s, seed %llu\n", o.port_a.c_str(), o.port_b.c_str(),
               netsim::to_string(o.faults).c_str(), static_cast<unsigned long long>(o.seed));
  const Nanos t0 = e.now();
  const Nanos end = o.duration_s > 0 ? t0 + static_cast<Nanos>(o.duration_s * 1e9) : kNever;
  const Nanos every = static_cast<Nanos>(o.interval_s * 1e9);
  Nanos next_line = every > 0 ? t0 + every : kNever;
  std::uint64_t last_ab = 0, last_ba = 0;
  std::uint64_t spins = 0;
  for (;;) {
    const Nanos now = e.now();
    if (now >= end || ((++spins & 0x3ff) == 0 && dp::StopSignals::requested())) break;
    e.poll(now);
    if (now >= next_line) {
      const netsim::LinkStats ab = e.stats(netsim::Direction::XtoY), ba = e.stats(netsim::Direction::YtoX);
      const auto fwd = [](const netsim::LinkStats& s) { return s.get(netsim::LinkCounter::ForwardedBytes); };
      const double secs = static_cast<double>(every) / 1e9;
      std::fprintf(stderr, "  %s->%s %.3f Gb/s (lost %llu, marked %llu) | %s->%s %.3f Gb/s (lost %llu, marked %llu)\n",
                   o.port_a.c_str(), o.port_b.c_str(), static_cast<double>(fwd(ab) - last_ab) * 8 / 1e9 / secs,
                   static_cast<unsigned long long>(ab.get(netsim::LinkCounter::Lost)),
                   static_cast<unsigned long long>(ab.get(netsim::LinkCounter::Marked)), o.port_b.c_str(), o.port_a.c_str(),
                   static_cast<double>(fwd(ba) - last_ba) * 8 / 1e9 / secs,
                   static_cast<unsigned long long>(ba.get(netsim::LinkCounter::Lost)),
                   static_cast<unsigned long long>(ba.get(netsim::LinkCounter::Marked)));
      last_ab = fwd(ab);
      last_ba = fwd(ba);
      next_line += every;
    }
  }
  const double secs = static_cast<double>(e.now() - t0) / 1e9;
  const netsim::LinkStats ab = e.stats(netsim::Direction::XtoY), ba = e.stats(netsim::Direction::YtoX);
  emu->reset();
  if (o.json) {
    std::printf("%s\n", summary_json(o, ab, ba, secs).c_str());
  } else {
    std::printf("%s -> %s: %s\n", o.port_a.c_str(), o.port_b.c_str(), netsim::to_string(ab).c_str());
    std::printf("%s -> %s: %s\n", o.port_b.c_str(), o.port_a.c_str(), netsim::to_string(ba).c_str());
  }
  return 0;
}

}  // namespace roce::client
