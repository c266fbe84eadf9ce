// roce-replay: option handling only; the work is in replay.cpp.
#include <cxxopts.hpp>

#include <exception>
#include <iostream>
#include <string>

#include "apps/replay/replay.hpp"
#include "apps/replay/text_values.hpp"
#include "dataplane/eal.hpp"

namespace {

constexpr const char* kDescription =
    "Feeds the frames of a capture into the RoCEv2 engine, set up as a scenario file says (or as\n"
    "derived from the capture), with the engine's clock following the capture's timestamps;\n"
    "writes what the engine transmits to a pcap and compares it with a golden capture.\n";

constexpr const char* kMore = R"(
Scenario: a text file of [sections] with key = value lines; docs/replay.md gives the format.
--derive stands in for the responder of the capture's RC requests (the host --responder names,
else the destination of the first request) and compares with what the real responder sent:
opcode, QPN, PSN, AETH syndrome and MSN, RETH, payload, ICRC status; see docs/replay.md for
the differences that are allowed (credit codes, timing, UDP source port, IP ID and TTL).

--dpdk runs the same scenario on the DPDK dataplane with the net_pcap PMD reading the
capture and writing the output; the worker's poll loop is stepped with the capture's clock.
EAL arguments go before `--`; without them the run uses --no-huge --no-pci --no-shconf -m 256.
The PMD stamps the output with the wall clock, so timing is not compared in that mode.

Exit status: 0 the output matches (or nothing was to be compared); 1 it differs, or a counter
in the scenario's [expect] section does; 2 bad command line or input.

Examples:
  roce-replay -i pcap/replay/gap_nak.in.pcap -s pcap/replay/gap_nak.scenario -e pcap/replay/gap_nak.out.pcap
  roce-replay -i ../shared/captures/rxe/ib_read_bw.pcap --derive -o ours.pcap
  roce-replay --no-huge -m 256 -- -i in.pcap -s s.scenario -e golden.pcap --dpdk
)";

struct Usage {
  roce::replay::ReplayOptions opts;
  bool help = false;
  std::string error;
  std::string help_text;
};

Usage parse_command_line(const std::vector<std::string>& args) {
  Usage u;
  cxxopts::Options options("roce-replay", kDescription);
  options.custom_help("[EAL args --] -i CAPTURE (-s SCENARIO | --derive) [-o OUT.pcap] [-e GOLDEN.pcap] [--dpdk]");
  options.add_options()
      ("i,input", "the capture whose frames are fed in (pcap or pcapng, Ethernet)", cxxopts::value<std::string>(), "FILE")
      ("s,scenario", "the scenario file", cxxopts::value<std::string>(), "FILE")
      ("derive", "derive the scenario and the expectation from the capture")
      ("responder", "with --derive: the IP address of the host to stand in for", cxxopts::value<std::string>(), "IP")
      ("o,output", "write what the engine sent to this pcap", cxxopts::value<std::string>(), "FILE")
      ("e,expect", "compare what was sent with this golden capture", cxxopts::value<std::string>(), "FILE")
      ("ignore-timing", "do not compare timestamps")
      ("max-diffs", "show at most N differences", cxxopts::value<std::uint32_t>(), "N")
      ("dump-scenario", "write the scenario used (derived or read) to FILE", cxxopts::value<std::string>(), "FILE")
      ("dpdk", "run on the DPDK dataplane with the net_pcap PMD")
      ("v,verbose", "print every non-zero counter")
      ("h,help", "show this help");
  options.set_width(100);
  u.help_text = options.help() + kMore;
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  try {
    const auto r = options.parse(static_cast<int>(argv.size()), argv.data());
    if (r.count("help")) {
      u.help = true;
      return u;
    }
    if (!r.unmatched().empty()) {
      u.error = "unexpected argument '" + r.unmatched().front() + "' (EAL arguments go before `--`)";
      return u;
    }
    auto& o = u.opts;
    if (!r.count("input")) {
      u.error = "no capture given: -i FILE (try --help)";
      return u;
    }
    o.input = r["input"].as<std::string>();
    o.derive = r.count("derive") > 0;
    if (r.count("scenario")) o.scenario = r["scenario"].as<std::string>();
    if (o.derive == !o.scenario.empty()) {
      u.error = "give exactly one of --scenario FILE and --derive";
      return u;
    }
    if (r.count("responder")) {
      if (!o.derive) {
        u.error = "--responder goes with --derive";
        return u;
      }
      o.responder_ip = roce::replay::parse_ip(r["responder"].as<std::string>());
      if (!o.responder_ip) {
        u.error = "--responder: '" + r["responder"].as<std::string>() + "' is not an IP address";
        return u;
      }
    }
    if (r.count("output")) o.output = r["output"].as<std::string>();
    if (r.count("expect")) o.expect = r["expect"].as<std::string>();
    if (r.count("dump-scenario")) o.dump_scenario = r["dump-scenario"].as<std::string>();
    if (r.count("max-diffs")) o.max_diffs = r["max-diffs"].as<std::uint32_t>();
    o.ignore_timing = r.count("ignore-timing") > 0;
    o.dpdk = r.count("dpdk") > 0;
    o.verbose = r.count("verbose") > 0;
  } catch (const std::exception& e) {
    u.error = e.what();
  }
  return u;
}

}  // namespace

int main(int argc, char** argv) {
  const roce::dp::SplitArgs split = roce::dp::split_args(argc, argv, {});
  Usage u = parse_command_line(split.app);
  if (u.help) {
    std::cout << u.help_text;
    return roce::replay::kExitPass;
  }
  if (!u.error.empty()) {
    std::cerr << "roce-replay: " << u.error << '\n';
    return roce::replay::kExitError;
  }
  if (split.eal.size() > 1 && !u.opts.dpdk) {
    std::cerr << "roce-replay: EAL arguments before `--` need --dpdk\n";
    return roce::replay::kExitError;
  }
  u.opts.eal_args = split.eal;
  return roce::replay::run_replay(u.opts, std::cout, std::cerr);
}
