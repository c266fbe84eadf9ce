// roce-replay: option handling only; the work is in replay.cpp.
#include <cxxopts.hpp>

#include <atomic>
#include <csignal>
#include <optional>

#include <exception>
#include <iostream>
#include <string>

#include "apps/replay/replay.hpp"
#include "apps/replay/text_values.hpp"
#include "apps/replay/transmit.hpp"
#include "client/cli.hpp"
#include "dataplane/eal.hpp"

namespace {

constexpr const char* kDescription =
    "Two jobs. With --dev PORT it is tcpreplay for RoCE: it puts the frames of a capture on a DPDK\n"
    "port (any PMD) at the capture's pace (or --pps, --mbps, --topspeed, --multiplier), --loop times,\n"
    "optionally rewriting MACs, IP addresses, the UDP source port, QPNs and PSNs, with the IPv4\n"
    "checksum and the ICRC computed again. Otherwise it feeds the capture into the RoCEv2 engine,\n"
    "set up as a scenario file says (or as derived from the capture), with the engine's clock\n"
    "following the capture's timestamps, and compares what the engine sends with a golden capture.\n";

constexpr const char* kMore = R"(
Sending (--dev): EAL arguments go before `--` and create the port, e.g.
  roce-replay --vdev=net_af_packet0,iface=eth1 -- -i trace.pcap --dev net_af_packet0 --topspeed
  roce-replay --vdev=net_pcap0,tx_pcap=out.pcap -- -i trace.pcap --dev net_pcap0 --ip-map 10.0.0.1=10.9.0.1
Frames cut by the snap length are not sent (the rest of them is not in the file); Linux cooked
and raw-IP captures need --srcmac and --dstmac for the Ethernet header they lack. A frame whose
ICRC was wrong in the capture stays wrong by the same bits after a rewrite. The counts at the
end say what went out and what did not, and why.

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
  roce-replay -i pcap/replay/gap_nak.in.pcap --scenario pcap/replay/gap_nak.scenario -e pcap/replay/gap_nak.out.pcap
  roce-replay -i ../shared/captures/rxe/ib_read_bw.pcap --derive -o ours.pcap
  roce-replay --no-huge -m 256 -- -i in.pcap --scenario s.scenario -e golden.pcap --dpdk
  roce-replay --vdev=net_tap0,iface=rr0 -- -i in.pcap --dev net_tap0 --mbps 100 --loop 3 --qpn-map 0x11=0x211
)";

struct Usage {
  roce::replay::ReplayOptions opts;
  std::optional<roce::replay::TransmitOptions> send;  // --dev
  bool help = false;
  std::string error;
  std::string help_text;
};

std::optional<std::uint32_t> number24(const std::string& s) {
  const auto v = roce::replay::parse_u64(s);
  if (!v || *v > 0xFFFFFF) return std::nullopt;
  return static_cast<std::uint32_t>(*v);
}

// --dev: the tcpreplay options; the engine's options have no meaning here.
Usage& parse_send(const cxxopts::ParseResult& r, Usage& u) {
  using namespace roce::replay;
  for (const char* engine_only : {"scenario", "derive", "responder", "output", "expect", "ignore-timing", "max-diffs",
                                  "dump-scenario", "dpdk"})
    if (r.count(engine_only) || (engine_only == std::string("scenario") && r.count("s"))) {
      u.error = std::string("--") + engine_only + " replays into the engine and --dev sends the capture out of a port: use one or the other";
      return u;
    }
  TransmitOptions t;
  t.input = u.opts.input;
  t.dev = r["dev"].as<std::string>();
  int paces = 0;
  if (r.count("multiplier")) {
    t.pace = Pace::Capture;
    t.multiplier = r["multiplier"].as<double>();
    ++paces;
  }
  if (r.count("pps")) {
    t.pace = Pace::Pps;
    t.pps = r["pps"].as<double>();
    ++paces;
  }
  if (r.count("mbps")) {
    t.pace = Pace::Mbps;
    t.mbps = r["mbps"].as<double>();
    ++paces;
  }
  if (r.count("topspeed")) {
    t.pace = Pace::Topspeed;
    ++paces;
  }
  if (paces > 1) {
    u.error = "give one of --multiplier, --pps, --mbps and --topspeed (without any, the capture's own pace)";
    return u;
  }
  if (r.count("loop")) t.loops = r["loop"].as<std::uint64_t>();
  if (r.count("limit")) t.limit = r["limit"].as<std::uint64_t>();
  for (const char* name : {"srcmac", "dstmac"}) {
    if (!r.count(name)) continue;
    const auto mac = parse_mac(r[name].as<std::string>());
    if (!mac) {
      u.error = std::string("--") + name + ": '" + r[name].as<std::string>() + "' is not a MAC address (like 02:00:00:00:00:01)";
      return u;
    }
    (std::string(name) == "srcmac" ? t.rewrite.src_mac : t.rewrite.dst_mac) = *mac;
  }
  if (r.count("ip-map"))
    for (const std::string& m : r["ip-map"].as<std::vector<std::string>>()) {
      const auto pair = parse_ip_pair(m);
      if (!pair) {
        u.error = "--ip-map: '" + m + "' is not OLD=NEW with two addresses of one family (10.0.0.1=10.9.0.1)";
        return u;
      }
      t.rewrite.ip_map.push_back(*pair);
    }
  if (r.count("qpn-map"))
    for (const std::string& m : r["qpn-map"].as<std::vector<std::string>>()) {
      const auto pair = parse_qpn_pair(m);
      if (!pair) {
        u.error = "--qpn-map: '" + m + "' is not OLD=NEW with two 24-bit QPNs (0x11=0x211)";
        return u;
      }
      t.rewrite.qpn_map[pair->first] = pair->second;
    }
  if (r.count("sport")) {
    const auto port = parse_u64(r["sport"].as<std::string>());
    if (!port || *port > 0xFFFF) {
      u.error = "--sport: '" + r["sport"].as<std::string>() + "' is not a UDP port (0..65535)";
      return u;
    }
    t.rewrite.udp_sport = static_cast<std::uint16_t>(*port);
  }
  if (r.count("psn-offset") && r.count("psn-base")) {
    u.error = "give --psn-offset or --psn-base, not both";
    return u;
  }
  if (r.count("psn-offset")) {
    const auto v = number24(r["psn-offset"].as<std::string>());
    if (!v) {
      u.error = "--psn-offset: '" + r["psn-offset"].as<std::string>() + "' is not 0..0xFFFFFF";
      return u;
    }
    t.rewrite.psn_offset = *v;
  }
  if (r.count("psn-base")) {
    const auto v = number24(r["psn-base"].as<std::string>());
    if (!v) {
      u.error = "--psn-base: '" + r["psn-base"].as<std::string>() + "' is not 0..0xFFFFFF";
      return u;
    }
    t.psn_base = *v;
  }
  u.send = std::move(t);
  return u;
}

Usage parse_command_line(const std::vector<std::string>& args) {
  Usage u;
  cxxopts::Options options("roce-replay", kDescription);
  options.custom_help("[EAL args --] -i CAPTURE (--scenario FILE | --derive) [-o OUT.pcap] [-e GOLDEN.pcap] [--dpdk]");
  options.add_options()
      ("i,input", "the capture whose frames are fed in (pcap or pcapng, Ethernet)", cxxopts::value<std::string>(), "FILE")
      ("scenario", "the scenario file", cxxopts::value<std::string>(), "FILE")
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
  options.add_options("Sending (tcpreplay)")
      ("dev", "put the capture on this DPDK port (ethdev name or number) instead of replaying it into the engine",
       cxxopts::value<std::string>(), "PORT")
      ("x,multiplier", "the capture's pace times this (default 1)", cxxopts::value<double>(), "X")
      ("pps", "send at this many packets per second", cxxopts::value<double>(), "N")
      ("mbps", "send at this many megabits per second (frame bytes, as tcpreplay counts)", cxxopts::value<double>(), "N")
      ("t,topspeed", "send as fast as the port takes the frames")
      ("l,loop", "send the capture this many times; 0 = until Ctrl-C (default 1)", cxxopts::value<std::uint64_t>(), "N")
      ("L,limit", "stop after this many frames", cxxopts::value<std::uint64_t>(), "N")
      ("srcmac", "rewrite every source MAC (and the Ethernet header of cooked captures)", cxxopts::value<std::string>(), "MAC")
      ("dstmac", "rewrite every destination MAC", cxxopts::value<std::string>(), "MAC")
      ("ip-map", "rewrite address OLD to NEW, source and destination, in RoCEv2 frames (repeat)",
       cxxopts::value<std::vector<std::string>>(), "OLD=NEW")
      ("sport", "rewrite the UDP source port of RoCEv2 frames", cxxopts::value<std::string>(), "PORT")
      ("qpn-map", "rewrite QPN OLD to NEW in the BTH and the DETH (repeat)", cxxopts::value<std::vector<std::string>>(), "OLD=NEW")
      ("psn-offset", "add N to every PSN (mod 2^24; CNPs keep theirs)", cxxopts::value<std::string>(), "N")
      ("psn-base", "move every PSN so that the capture's first one becomes N", cxxopts::value<std::string>(), "N");
  // Old spellings, kept for scripts and left out of the help: -s (a size in the other tools).
  options.add_options("Aliases")("s", "same as --scenario", cxxopts::value<std::string>(), "FILE");
  options.set_width(100);
  u.help_text = options.help({"", "Sending (tcpreplay)"}) + kMore;
  auto parsed = roce::client::parse_cli(options, args);
  if (!parsed) {
    u.error = parsed.error().message;
    return u;
  }
  const cxxopts::ParseResult& r = *parsed;
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
  if (r.count("dev")) return parse_send(r, u);
  for (const char* send_only : {"multiplier", "pps", "mbps", "topspeed", "loop", "limit", "srcmac", "dstmac", "ip-map",
                                "sport", "qpn-map", "psn-offset", "psn-base"})
    if (r.count(send_only)) {
      u.error = std::string("--") + send_only + " goes with --dev PORT (sending the capture out of a port)";
      return u;
    }
  o.derive = r.count("derive") > 0;
  if (r.count("scenario") && r.count("s")) {
    u.error = "-s is the old name of --scenario; give one of them";
    return u;
  }
  if (r.count("scenario")) o.scenario = r["scenario"].as<std::string>();
  if (r.count("s")) o.scenario = r["s"].as<std::string>();
  if (o.derive == !o.scenario.empty()) {
    u.error = "give one of --scenario FILE and --derive (replay into the engine), or --dev PORT (send the capture out of a port)";
    return u;
  }
  if (r.count("responder")) {
    if (!o.derive) {
      u.error = "--responder goes with --derive (add --derive to stand in for that host)";
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
  return u;
}

std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) { g_stop.store(true); }

int send(roce::replay::TransmitOptions t, const std::vector<std::string>& eal) {
  t.eal_args = eal;
  auto base = roce::replay::resolve_psn_base(t);
  if (!base) {
    std::cerr << "roce-replay: " << base.error().message << '\n';
    return roce::replay::kExitError;
  }
  if (!base->empty()) std::cout << *base << '\n';
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  auto r = roce::replay::transmit(t, g_stop);
  if (!r) {
    std::cerr << "roce-replay: " << r.error().message << '\n';
    return roce::replay::kExitError;
  }
  std::cout << roce::replay::format_report(*r, t);
  // Frames the port never took are a failure to do what was asked; frames the capture cannot
  // give whole are reported but are the capture's, not the port's.
  return r->failed ? roce::replay::kExitMismatch : roce::replay::kExitPass;
}

int run(int argc, char** argv) {
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
  if (u.send) return send(*u.send, split.eal);
  if (split.eal.size() > 1 && !u.opts.dpdk) {
    std::cerr << "roce-replay: EAL arguments before `--` need --dpdk (run the scenario on the dataplane) or --dev PORT (send the capture out of a port)\n";
    return roce::replay::kExitError;
  }
  u.opts.eal_args = split.eal;
  return roce::replay::run_replay(u.opts, std::cout, std::cerr);
}

}  // namespace

int main(int argc, char** argv) {
  return roce::client::guarded_main("roce-replay", [&] { return run(argc, argv); });
}
