#include "apps/gen/options.hpp"

// --vdev values carry commas (net_tap0,iface=x): keep them whole.
#define CXXOPTS_VECTOR_DELIMITER '\0'
#include <cxxopts.hpp>

#include <algorithm>

#include "client/runtime.hpp"
#include "client/cli.hpp"
#include "protocol/mtu.hpp"

namespace roce::client {

namespace {

constexpr const char* kUsage = R"(roce-gen: RDMA traffic over this project's software RoCEv2 transport, perftest style.

  roce-gen [DPDK EAL arguments --] TEST [options] [--server] HOST

TEST is write, read, send, atomic (perftest's ib_TEST_bw, or ib_TEST_lat with --lat; the
perftest program names ib_write_bw .. ib_atomic_lat work too), pingpong (ibv_rc_pingpong's
SEND ping-pong) or ud-pingpong (ibv_ud_pingpong's, client only). atomic_write and flush run
IBTA 1.5's ATOMIC_WRITE (-s 8) and FLUSH (global visibility of -s bytes) as perftest runs READ,
against a server whose memory allows them (roce-appliance; Linux rxe from 6.2). Two more modes have their own
options (see their --help): `roce-gen raw` crafts raw RoCEv2 packet streams to a port or a pcap
file, `roce-gen emulate` is a link with loss, reordering, delay and ECN marking between two
ports, and `roce-gen nvme-read|nvme-write|nvme-randrw` benchmarks an NVMe-oF initiator against
an in-process NVMe-oF target. Run one side with --listen and the other with --server ADDR (or ADDR last, as perftest
takes it), or point it at roce-appliance, at a real perftest server (ib_write_bw with no
address) or at ibv_rc_pingpong. The out-of-band exchange runs over the kernel's TCP (port 18515).

perftest's flags keep perftest's meaning, defaults and messages, and the printout is
perftest's. Flags about a device this transport does not have are accepted with a note on
stderr: -d (the device is the DPDK port --dev), -i (its one port, 1), -x (the GID is --ip's,
shown with the index given), -F (times come from the TSC), -e (completions are polled).
-T/--tclass set the IP TOS byte of every packet (DSCP and ECN bits; perftest takes -T with -R
only). A progress line goes to stderr when it is a terminal.

Examples (no NIC: a TAP device in a network namespace):
  roce-gen write --vdev net_tap0,iface=rdp0 --dev net_tap0 --ip 10.77.0.10 -s 65536 -n 5000 10.77.0.2
  roce-gen ib_read_lat --vdev ... --dev ... --ip ... --listen)";

// roce-gen TEST names: ours, and perftest's program names.
struct TestName {
  Verb verb;
  std::optional<Measure> measure;  // implied by a perftest program name
};
std::optional<TestName> test_from_string(const std::string& t) {
  if (auto v = verb_from_string(t)) return TestName{*v, std::nullopt};
  for (Verb v : {Verb::Write, Verb::Read, Verb::Send, Verb::Atomic})
    for (Measure m : {Measure::Bandwidth, Measure::Latency})
      if (t == "ib_" + to_string(v) + "_" + to_string(m)) return TestName{v, m};
  return std::nullopt;
}

}  // namespace

bool json_requested(const std::vector<std::string>& args) {
  return std::find(args.begin() + (args.empty() ? 0 : 1), args.end(), "--json") != args.end();
}

Result<GenOptions> parse_gen_options(const std::vector<std::string>& args) {
  GenOptions g;
  cxxopts::Options opts("roce-gen", kUsage);
  opts.custom_help("[EAL args --] TEST [options] [HOST]");
  opts.positional_help("");
  std::string test, host, mtu, rate, profile, ip, dcqcn, connection, atomic, overrun_marks, backlog_marks;
  auto text = [] { return cxxopts::value<std::string>(); };
  opts.add_options("Test (perftest's flags)")
      ("test", "write | read | send | atomic | atomic_write | flush | ib_write_bw .. ib_atomic_lat | pingpong | ud-pingpong",
       cxxopts::value<std::string>(test))
      ("host", "the server (perftest's last argument; same as --server)", cxxopts::value<std::string>(host))
      ("bw", "measure bandwidth (default)")
      ("lat", "measure latency")
      ("s,size", "message size, 1 B .. 2 GiB, K/M suffixes (default 65536; 2 for --lat; 8 for atomic)", text())
      ("n,iters", "iterations, 5 .. 100000000 (default 5000 write bandwidth, else 1000)", text())
      ("D,duration", "run for this many seconds instead of -n", text())
      ("f,margin", "-D: seconds left out at each end (default a quarter of -D)", text())
      ("run_infinitely", "bandwidth tests: print a result every -D seconds (default 5) until stopped")
      ("a,all", "every size from 2 B to 8 MiB (powers of two)")
      ("q,qps", "queue pairs, bandwidth tests, 1 .. 16384 (also --qp)", text())
      ("qp", "same as -q", text())
      ("t,tx-depth", "send queue depth, 1 .. 15000 (default 128; 1 for --lat)", text())
      ("r,rx-depth", "receive queue depth for SEND, 1 .. 16384 (default 512)", text())
      ("Q,cq-mod", "a completion every N sends, 1 .. 1024 (default 100; 1 above 8 KiB)", text())
      ("l,post_list", "post N work requests at once (bandwidth tests)", text())
      ("I,inline_size", "send payloads up to N bytes inline, 0 .. 912 (not READ/atomic)", text())
      ("o,outs", "READ/atomic requests in flight per QP (default and maximum: the device's)", text())
      ("b,bidirectional", "both sides send (bandwidth tests; SEND over RC or UC): the sum is shown")
      ("e,events", "accepted: completions are polled (note on stderr); not for WRITE")
      ("N,noPeak", "no peak bandwidth (perftest leaves it out above 20000 iterations)")
      ("T,tos", "IP TOS byte of our packets: DSCP << 2 | ECN, 0 .. 255", text())
      ("tclass", "same as -T (perftest's GRH traffic class)", text())
      ("c,connection", "transport: RC, UC (write, send) or UD (send)", cxxopts::value<std::string>(connection)->default_value("RC"))
      ("A,atomic_type", "atomic: FETCH_AND_ADD or CMP_AND_SWAP", cxxopts::value<std::string>(atomic)->default_value("FETCH_AND_ADD"))
      ("m,mtu", "path MTU: 256, 512, 1024, 2048 or 4096", cxxopts::value<std::string>(mtu)->default_value("1024"))
      ("u,qp-timeout", "local ACK timeout: 4.096 us x 2^N, N 1..31 (default 14)",
       cxxopts::value<unsigned>()->default_value("14"))
      ("d,ib-dev", "accepted and ignored (note on stderr): the device is the DPDK port --dev", text())
      ("i,ib-port", "accepted (note on stderr): 1, the only port", text())
      ("x,gid-index", "accepted (note on stderr): the GID is --ip's; the index is shown, 0 .. 64", text())
      ("F,CPU-freq", "accepted (note on stderr): times come from the TSC")
      ("ipv6", "accepted (note on stderr): the GID's family is --ip's (perftest's IPv6 GID and rdma_cm over IPv6)")
      ("mr_per_qp", "one memory region per QP (default: one for all)")
      ("use-srq", "SEND tests: receives from one shared receive queue of -r entries, as perftest's (a latency test or -b; --listen: the server's)")
      ("cpu_util", "with -D: a CPU_Util column (the host's user time over user plus idle)")
      ("output", "print only the average: bandwidth, message_rate or latency", text())
      ("report_gbits", "bandwidth in Gb/sec instead of MB/sec")
      ("rate-limit", "cap each QP at this many Gb/s", cxxopts::value<std::string>(rate)->default_value("0"))
      ("verify", "check the far side's memory after the run (write, read, atomic)")
      ("R,rdma_cm", "connect through rdma_cm, as perftest's -R: the exchange runs on an rdma_cm connection to the server's port, and every QP connects through rdma_cm (RC: REQ/REP/RTU; UD: SIDR)")
      ("json", "print the settings, the peer and the results as JSON (errors too)");
  opts.add_options("Connection")
      ("server", "client mode: the server's address", cxxopts::value<std::string>(g.server))
      ("listen", "server mode: wait for one client")
      ("p,oob-port", "TCP port of the exchange (also --port)", cxxopts::value<std::uint16_t>(g.oob_port)->default_value("18515"))
      ("port", "same as -p", cxxopts::value<std::uint16_t>())
      ("selective-repeat", kSelectiveRepeatHelp, cxxopts::value<std::uint32_t>(g.selective_repeat)->default_value(std::to_string(kDefaultSelectiveRepeatWindow)));
  opts.add_options("Dataplane")
      ("vdev", "create a DPDK virtual device first (repeatable), e.g. net_tap0,iface=rdp0", cxxopts::value<std::vector<std::string>>())
      ("dev", "DPDK port to use (name or number)", cxxopts::value<std::string>(g.dev))
      ("ip", "this endpoint's IPv4 or IPv6 address on that port (its GID)", cxxopts::value<std::string>(ip))
      ("workers", "transport worker lcores", cxxopts::value<unsigned>(g.workers)->default_value("1"))
      ("dcqcn", "congestion control: on or off", cxxopts::value<std::string>(dcqcn)->default_value("off"))
      ("dcqcn-profile", "paper, mlx or hpcc", cxxopts::value<std::string>(profile)->default_value("paper"))
      ("line-rate-gbps", "line rate for DCQCN, Gb/s", cxxopts::value<double>(g.line_rate_gbps)->default_value("10"))
      ("overrun-marks", "on: the port's receive drops (a full RX ring) mark as many arriving ECN-capable frames CE, for DCQCN to slow the senders (docs/loss.md); off: only counted", cxxopts::value<std::string>(overrun_marks)->default_value("on"))
      ("backlog-marks", "off, on or KMIN,KMAX,PMAX: mark arriving ECN-capable frames CE by the RX queue's backlog in frames, before it overflows (a switch's RED; on: 64,256,0.1; docs/loss.md)", cxxopts::value<std::string>(backlog_marks)->default_value("off"))
      ("h,help", "this text");
  opts.parse_positional({"test", "host"});

  // Old spellings, kept for scripts and left out of the help (dcqcn-trace's name is the one).
  opts.add_options("Aliases")("line-rate", "same as --line-rate-gbps", cxxopts::value<double>());
  auto parsed = parse_cli(opts, args);
  if (!parsed) return parsed.error();
  const cxxopts::ParseResult& r = *parsed;
  if (r.count("help")) {
    g.help = true;
    g.help_text = opts.help({"Test (perftest's flags)", "Connection", "Dataplane"});
    return g;
  }
  if (!r.unmatched().empty()) return make_error(EINVAL, "unexpected argument '" + r.unmatched().front() + "'");
  if (r.count("line-rate")) {
    if (r.count("line-rate-gbps")) return make_error(EINVAL, "--line-rate is the old name of --line-rate-gbps; give one of them");
    g.line_rate_gbps = r["line-rate"].as<double>();
  }
  if (test.empty()) return make_error(EINVAL, "name a test: write, read, send, atomic, atomic_write, flush, pingpong or ud-pingpong");
  auto given = [&](const char* name) -> std::optional<std::string> {
    if (!r.count(name)) return std::nullopt;
    return r[name].as<std::string>();
  };
  if (r.count("lat") && r.count("bw")) return make_error(EINVAL, "--bw and --lat exclude each other");
  if (!host.empty()) {
    if (!g.server.empty() && g.server != host) return make_error(EINVAL, "two servers: --server " + g.server + " and " + host);
    g.server = host;
  }
  if (r.count("port")) g.oob_port = r["port"].as<std::uint16_t>();
  if (test == "pingpong" || test == "ud-pingpong") {
    g.pingpong = test == "pingpong";
    g.ud_pingpong = test == "ud-pingpong";
    g.spec.verb = Verb::Send;
    g.spec.measure = Measure::Latency;
    // ibv_rc_pingpong's and ibv_ud_pingpong's defaults: 4096 bytes (1024 for UD), 1000 iterations.
    const auto sz = parse_size(given("size").value_or(g.ud_pingpong ? "1024" : "4096"));
    if (!sz || *sz == 0 || *sz > (1u << 31)) return make_error(EINVAL, "bad --size '" + *given("size") + "' (bytes, 1 up to 2G)");
    g.spec.size = static_cast<std::uint32_t>(*sz);
    const std::string n = given("iters").value_or("1000");
    const auto iters = parse_size(n);
    if (!iters || *iters == 0 || n.find_first_not_of("0123456789") != std::string::npos)
      return make_error(EINVAL, "-n " + n + ": Iteration num should be a positive whole number");
    g.spec.iters = *iters;
    if (auto d = given("duration")) {
      char* end = nullptr;
      const double secs = std::strtod(d->c_str(), &end);
      if (d->empty() || *end || !(secs > 0)) return make_error(EINVAL, "-D " + *d + ": Duration period must be positive");
      g.spec.duration = static_cast<Nanos>(secs * 1e9);
    }
  } else if (auto t = test_from_string(test)) {
    g.spec.verb = t->verb;
    if (t->measure) {
      if ((r.count("lat") && *t->measure == Measure::Bandwidth) || (r.count("bw") && *t->measure == Measure::Latency))
        return make_error(EINVAL, test + " and --" + (r.count("lat") ? "lat" : "bw") + " exclude each other");
      g.spec.measure = *t->measure;
    } else if (r.count("lat")) {
      g.spec.measure = Measure::Latency;
    }
    PerftestFlagText ft;
    ft.size = given("size");
    ft.iters = given("iters");
    ft.tx_depth = given("tx-depth");
    ft.rx_depth = given("rx-depth");
    ft.qps = r.count("qp") ? given("qp") : given("qps");
    ft.cq_mod = given("cq-mod");
    ft.post_list = given("post_list");
    ft.inline_size = given("inline_size");
    ft.out_reads = given("outs");
    ft.duration = given("duration");
    ft.margin = given("margin");
    ft.ib_dev = given("ib-dev");
    ft.ib_port = given("ib-port");
    ft.gid_index = given("gid-index");
    ft.tos = given("tos");
    ft.tclass = given("tclass");
    ft.output = given("output");
    ft.all = r.count("all") > 0;
    ft.gbits = r.count("report_gbits") > 0;
    ft.bidirectional = r.count("bidirectional") > 0;
    ft.events = r.count("events") > 0;
    ft.cpu_util = r.count("cpu_util") > 0;
    ft.run_infinitely = r.count("run_infinitely") > 0;
    ft.mr_per_qp = r.count("mr_per_qp") > 0;
    ft.use_srq = r.count("use-srq") > 0;
    ft.no_peak = r.count("noPeak") > 0;
    ft.cpu_freq = r.count("CPU-freq") > 0;
    ft.ipv6 = r.count("ipv6") > 0;
    auto pf = resolve_perftest_flags(g.spec.verb, g.spec.measure, ft, rdma::EngineConfig{}.max_rd_atomic);
    if (!pf) return pf.error();
    g.perftest = std::move(*pf);
    const PerftestFlags& p = g.perftest;
    g.spec.size = p.all ? 8u << 20 : p.size;
    g.spec.iters = p.iters;
    g.spec.duration = static_cast<Nanos>(p.duration_s * 1e9);
    g.spec.margin = static_cast<Nanos>(p.margin_s * 1e9);
    g.spec.tx_depth = p.tx_depth;
    g.spec.cq_mod = p.cq_mod;
    g.spec.post_list = p.post_list;
    g.spec.inline_size = p.inline_size;
    g.spec.record_peak = !p.no_peak;
    g.qp.send_depth = std::max<std::uint32_t>(p.tx_depth, 16) + 16;
    g.qp.recv_depth = std::max<std::uint32_t>(p.rx_depth, 16) + 16;
    g.qp.max_inline = p.inline_size;
    g.qp.max_rd_atomic = static_cast<std::uint8_t>(p.out_reads);
    if (p.traffic_class) g.qp.traffic_class = *p.traffic_class;
    if (connection == "RC") g.qp.type = IBV_QPT_RC;
    else if (connection == "UC") g.qp.type = IBV_QPT_UC;
    else if (connection == "UD") g.qp.type = IBV_QPT_UD;
    else return make_error(EINVAL, "bad --connection '" + connection + "': RC, UC or UD");
    // What perftest runs: UC has no READ or atomics, UD only SENDs.
    if (g.qp.type == IBV_QPT_UC && takes_responder_resource(g.spec.verb))
      return make_error(EINVAL, "-c UC runs write and send tests only (UC has no READ or atomics)");
    if (g.qp.type == IBV_QPT_UD && g.spec.verb != Verb::Send) return make_error(EINVAL, "-c UD runs send tests only");
    const auto aop = atomic_op_from_string(atomic);
    if (!aop) return make_error(EINVAL, "bad --atomic_type '" + atomic + "': FETCH_AND_ADD or CMP_AND_SWAP");
    if (r.count("atomic_type") && g.spec.verb != Verb::Atomic) return make_error(EINVAL, "-A is for the atomic test");
    g.spec.atomic = *aop;
  } else {
    return make_error(EINVAL, "unknown test '" + test + "': write, read, send, atomic, ib_write_bw .. ib_atomic_lat, pingpong or ud-pingpong");
  }
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
  g.json = r.count("json") > 0;
  g.listen = r.count("listen") > 0;
  if (g.listen == !g.server.empty()) return make_error(EINVAL, "give exactly one of --server ADDR (client) or --listen (server)");
  if (g.oob_port == 0 && !g.listen) return make_error(EINVAL, "--oob-port 0 works with --listen only (a free port is chosen)");
  if (r.count("vdev")) g.vdevs = r["vdev"].as<std::vector<std::string>>();
  if (g.dev.empty()) return make_error(EINVAL, "--dev is required: the DPDK port to use (e.g. --vdev net_tap0 --dev net_tap0)");
  const auto addr = parse_ip(ip);
  if (!addr) return make_error(EINVAL, "--ip is required: this endpoint's IPv4 or IPv6 address (got '" + ip + "')");
  g.ip = *addr;
  if (dcqcn != "on" && dcqcn != "off") return make_error(EINVAL, "--dcqcn takes on or off");
  g.dcqcn = dcqcn == "on";
  if (overrun_marks != "on" && overrun_marks != "off") return make_error(EINVAL, "--overrun-marks takes on or off");
  g.overrun_marks = overrun_marks == "on";
  auto backlog = dp::parse_backlog_marks(backlog_marks);
  if (!backlog) return backlog.error();
  g.backlog_marks = *backlog;
  const auto prof = cc::profile_from_string(profile);
  if (!prof) return make_error(EINVAL, "--dcqcn-profile takes paper, mlx or hpcc");
  g.dcqcn_profile = *prof;
  if (g.line_rate_gbps <= 0) return make_error(EINVAL, "--line-rate-gbps must be positive");
  if (g.workers == 0 || g.workers > 16) return make_error(EINVAL, "--workers must be 1..16");
  if (g.pingpong && g.spec.size > 4096 * 16) return make_error(EINVAL, "pingpong sizes above 64 KiB are not useful");
  if ((g.pingpong || g.ud_pingpong) && r.count("connection"))
    return make_error(EINVAL, "-c is for the perftest tests: pingpong runs RC, ud-pingpong UD");
  if (g.ud_pingpong && g.listen) return make_error(EINVAL, "ud-pingpong is a client only: give --server ADDR");
  // A datagram is one packet: it must fit the peer's path MTU, which rxe takes from its netdev.
  if (g.ud_pingpong && (g.spec.size == 0 || g.spec.size > 4096)) return make_error(EINVAL, "ud-pingpong sizes are 1..4096");
  if (g.perftest.bidirectional && g.listen) return make_error(EINVAL, "-b: roce-gen --listen serves unidirectional tests only");
  g.rdma_cm = r.count("rdma_cm") > 0;
  if (!valid_selective_repeat_window(g.selective_repeat))
    return make_error(EINVAL, "--selective-repeat takes 0 (go-back-N) or a power of two from 8 to 128, not " + std::to_string(g.selective_repeat));
  if (g.rdma_cm && g.listen)
    return make_error(EINVAL, "-R: roce-gen --listen serves the TCP exchange only (roce-appliance --rdma-cm perftest serves -R clients)");
  return g;
}

}  // namespace roce::client
