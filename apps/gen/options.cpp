#include "apps/gen/options.hpp"

// --vdev values carry commas (net_tap0,iface=x): keep them whole.
#define CXXOPTS_VECTOR_DELIMITER '\0'
#include <cxxopts.hpp>

#include "apps/common/runtime.hpp"
#include "apps/common/option_error.hpp"
#include "protocol/mtu.hpp"

namespace roce::app {

namespace {

constexpr const char* kUsage = R"(roce-gen: RDMA traffic over this project's software RoCEv2 transport, perftest style.

  roce-gen [DPDK EAL arguments --] TEST [options]

TEST is write, read, send, atomic (perftest's ib_TEST_bw / ib_TEST_lat), pingpong
(ibv_rc_pingpong's SEND ping-pong) or ud-pingpong (ibv_ud_pingpong's, client only). Two more
modes have their own options (see their --help): `roce-gen raw` crafts raw RoCEv2 packet
streams to a port or a pcap file, and `roce-gen emulate` is a link with loss, reordering, delay
and ECN marking between two ports. Run one side with --listen and the other with --server ADDR,
or point --server at roce-appliance, at a real perftest server (ib_write_bw with no address) or
at ibv_rc_pingpong. The out-of-band exchange runs over the kernel's TCP (port 18515).

Examples (no NIC: a TAP device in a network namespace):
  roce-gen write --vdev net_tap0,iface=rdp0 --dev net_tap0 --ip 10.77.0.10 --server 10.77.0.2 -s 65536 -n 5000
  roce-gen read --lat --vdev ... --dev ... --ip ... --listen)";

}  // namespace

Result<GenOptions> parse_gen_options(const std::vector<std::string>& args) {
  GenOptions g;
  cxxopts::Options opts("roce-gen", kUsage);
  opts.custom_help("[EAL args --] TEST [options]");
  opts.positional_help("");
  std::string test, mtu, size, rate, profile, ip, dcqcn, connection, atomic;
  opts.add_options("Test")
      ("test", "write | read | send | atomic | pingpong | ud-pingpong", cxxopts::value<std::string>(test))
      ("bw", "measure bandwidth (default)")
      ("lat", "measure latency")
      ("s,size", "message size in bytes (K/M suffixes)", cxxopts::value<std::string>(size)->default_value("65536"))
      ("n,iters", "iterations per size", cxxopts::value<std::uint64_t>()->default_value("5000"))
      ("D,duration", "run for this many seconds instead of -n", cxxopts::value<double>()->default_value("0"))
      ("q,qps", "queue pairs", cxxopts::value<unsigned>(g.qps)->default_value("1"))
      ("a,all", "every size from 2 B to 8 MiB (powers of two)")
      ("t,tx-depth", "work requests in flight per QP", cxxopts::value<std::uint32_t>()->default_value("128"))
      ("c,connection", "transport: RC, UC (write, send) or UD (send)", cxxopts::value<std::string>(connection)->default_value("RC"))
      ("A,atomic_type", "atomic: FETCH_AND_ADD or CMP_AND_SWAP", cxxopts::value<std::string>(atomic)->default_value("FETCH_AND_ADD"))
      ("m,mtu", "path MTU: 256, 512, 1024, 2048 or 4096", cxxopts::value<std::string>(mtu)->default_value("1024"))
      ("u,qp-timeout", "local ACK timeout: 4.096 us x 2^N, N 1..31 (perftest's -u)",
       cxxopts::value<unsigned>()->default_value("14"))
      ("rate-limit", "cap each QP at this many Gb/s", cxxopts::value<std::string>(rate)->default_value("0"))
      ("verify", "check the far side's memory after the run (write, read, atomic)")
      ("report_gbits", "bandwidth in Gb/s instead of MB/s")
      ("json", "print the results as JSON (with errors, retransmits, NAKs, CNPs)");
  opts.add_options("Connection")
      ("server", "client mode: the server's address", cxxopts::value<std::string>(g.server))
      ("listen", "server mode: wait for one client")
      ("p,oob-port", "TCP port of the exchange", cxxopts::value<std::uint16_t>(g.oob_port)->default_value("18515"));
  opts.add_options("Dataplane")
      ("vdev", "create a DPDK virtual device first (repeatable), e.g. net_tap0,iface=rdp0", cxxopts::value<std::vector<std::string>>())
      ("dev", "DPDK port to use (name or number)", cxxopts::value<std::string>(g.dev))
      ("ip", "this endpoint's IPv4 address on that port", cxxopts::value<std::string>(ip))
      ("workers", "transport worker lcores", cxxopts::value<unsigned>(g.workers)->default_value("1"))
      ("dcqcn", "congestion control: on or off", cxxopts::value<std::string>(dcqcn)->default_value("off"))
      ("dcqcn-profile", "paper, mlx or hpcc", cxxopts::value<std::string>(profile)->default_value("paper"))
      ("line-rate", "line rate for DCQCN, Gb/s", cxxopts::value<double>(g.line_rate_gbps)->default_value("10"))
      ("h,help", "this text");
  opts.parse_positional({"test"});

  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  cxxopts::ParseResult r;
  try {
    r = opts.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const std::exception& e) {
    return make_error(EINVAL, explain_option_error(e.what(), args));
  }
  if (r.count("help")) {
    g.help = true;
    g.help_text = opts.help({"Test", "Connection", "Dataplane"});
    return g;
  }
  if (!r.unmatched().empty()) return make_error(EINVAL, "unexpected argument '" + r.unmatched().front() + "'");
  if (test.empty()) return make_error(EINVAL, "name a test: write, read, send, atomic, pingpong or ud-pingpong");
  if (test == "pingpong" || test == "ud-pingpong") {
    g.pingpong = test == "pingpong";
    g.ud_pingpong = test == "ud-pingpong";
    g.spec.verb = Verb::Send;
    g.spec.measure = Measure::Latency;
  } else if (auto v = verb_from_string(test)) {
    g.spec.verb = *v;
  } else {
    return make_error(EINVAL, "unknown test '" + test + "': write, read, send, atomic, pingpong or ud-pingpong");
  }
  if (r.count("lat") && r.count("bw")) return make_error(EINVAL, "--bw and --lat exclude each other");
  if (r.count("lat")) g.spec.measure = Measure::Latency;
  const auto sz = parse_size(size);
  if (!sz || *sz == 0 || *sz > (1u << 31)) return make_error(EINVAL, "bad --size '" + size + "' (bytes, 1 up to 2G)");
  g.spec.size = static_cast<std::uint32_t>(*sz);
  if (g.spec.verb == Verb::Atomic) g.spec.size = 8;
  g.spec.iters = r["iters"].as<std::uint64_t>();
  if (g.spec.iters == 0) return make_error(EINVAL, "--iters must be at least 1");
  const double secs = r["duration"].as<double>();
  if (secs < 0) return make_error(EINVAL, "--duration must not be negative");
  g.spec.duration = static_cast<Nanos>(secs * 1e9);
  g.spec.tx_depth = r["tx-depth"].as<std::uint32_t>();
  if (g.spec.tx_depth == 0 || g.spec.tx_depth > 8192) return make_error(EINVAL, "--tx-depth must be 1..8192");
  g.qp.send_depth = std::max<std::uint32_t>(g.spec.tx_depth, 16) + 16;
  if (g.qps == 0 || g.qps > 1024) return make_error(EINVAL, "--qps must be 1..1024");
  // As perftest 4.5's parser: its latency tests run one QP.
  if (g.qps > 1 && g.spec.measure == Measure::Latency) return make_error(EINVAL, "-q is for bandwidth tests: a latency test runs one QP");
  g.all_sizes = r.count("all") > 0;
  // perftest: "Message size cannot be changed for Atomic tests" (its -a sweeps sizes).
  if (g.all_sizes && g.spec.verb == Verb::Atomic) return make_error(EINVAL, "-a sweeps message sizes: atomics are 8 bytes");
  if (connection == "RC") g.qp.type = IBV_QPT_RC;
  else if (connection == "UC") g.qp.type = IBV_QPT_UC;
  else if (connection == "UD") g.qp.type = IBV_QPT_UD;
  else return make_error(EINVAL, "bad --connection '" + connection + "': RC, UC or UD");
  // What perftest runs: UC has no READ or atomics, UD only SENDs.
  if (g.qp.type == IBV_QPT_UC && (g.spec.verb == Verb::Read || g.spec.verb == Verb::Atomic))
    return make_error(EINVAL, "-c UC runs write and send tests only (UC has no READ or atomics)");
  if (g.qp.type == IBV_QPT_UD && g.spec.verb != Verb::Send) return make_error(EINVAL, "-c UD runs send tests only");
  const auto aop = atomic_op_from_string(atomic);
  if (!aop) return make_error(EINVAL, "bad --atomic_type '" + atomic + "': FETCH_AND_ADD or CMP_AND_SWAP");
  if (r.count("atomic_type") && g.spec.verb != Verb::Atomic) return make_error(EINVAL, "-A is for the atomic test");
  g.spec.atomic = *aop;
  const auto m = parse_size(mtu);
  const auto pm = m ? proto::mtu_from_bytes(static_cast<std::uint32_t>(*m)) : std::nullopt;
  if (!pm) return make_error(EINVAL, "bad --mtu '" + mtu + "': 256, 512, 1024, 2048 or 4096");
  g.qp.mtu = static_cast<ibv_mtu>(*pm);
  const unsigned qp_timeout = r["qp-timeout"].as<unsigned>();
  if (qp_timeout < 1 || qp_timeout > 31) return make_error(EINVAL, "--qp-timeout must be 1..31");
  g.qp.timeout = static_cast<std::uint8_t>(qp_timeout);
  try {
    g.spec.rate_limit_gbps = std::stod(rate);
  } catch (...) {
    return make_error(EINVAL, "bad --rate-limit '" + rate + "'");
  }
  if (g.spec.rate_limit_gbps < 0) return make_error(EINVAL, "--rate-limit must not be negative");
  g.verify = r.count("verify") > 0;
  g.gbits = r.count("report_gbits") > 0;
  g.json = r.count("json") > 0;
  g.listen = r.count("listen") > 0;
  if (g.listen == !g.server.empty()) return make_error(EINVAL, "give exactly one of --server ADDR (client) or --listen (server)");
  if (g.oob_port == 0 && !g.listen) return make_error(EINVAL, "--oob-port 0 works with --listen only (a free port is chosen)");
  if (r.count("vdev")) g.vdevs = r["vdev"].as<std::vector<std::string>>();
  if (g.dev.empty()) return make_error(EINVAL, "--dev is required: the DPDK port to use (e.g. --vdev net_tap0 --dev net_tap0)");
  const auto addr = parse_ipv4(ip);
  if (!addr) return make_error(EINVAL, "--ip is required: this endpoint's IPv4 address (got '" + ip + "')");
  g.ip = *addr;
  if (dcqcn != "on" && dcqcn != "off") return make_error(EINVAL, "--dcqcn takes on or off");
  g.dcqcn = dcqcn == "on";
  const auto prof = cc::profile_from_string(profile);
  if (!prof) return make_error(EINVAL, "--dcqcn-profile takes paper, mlx or hpcc");
  g.dcqcn_profile = *prof;
  if (g.line_rate_gbps <= 0) return make_error(EINVAL, "--line-rate must be positive");
  if (g.workers == 0 || g.workers > 16) return make_error(EINVAL, "--workers must be 1..16");
  if (g.pingpong && g.spec.size > 4096 * 16) return make_error(EINVAL, "pingpong sizes above 64 KiB are not useful");
  if ((g.pingpong || g.ud_pingpong) && r.count("connection"))
    return make_error(EINVAL, "-c is for the perftest tests: pingpong runs RC, ud-pingpong UD");
  if (g.ud_pingpong && g.listen) return make_error(EINVAL, "ud-pingpong is a client only: give --server ADDR");
  // A datagram is one packet: it must fit the peer's path MTU, which rxe takes from its netdev.
  if (g.ud_pingpong && (g.spec.size == 0 || g.spec.size > 4096)) return make_error(EINVAL, "ud-pingpong sizes are 1..4096");
  return g;
}

}  // namespace roce::app
