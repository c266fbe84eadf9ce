#include "apps/appliance/options.hpp"

// --vdev values carry commas (net_tap0,iface=x): keep them whole.
#define CXXOPTS_VECTOR_DELIMITER '\0'
#include <cxxopts.hpp>

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "client/cli.hpp"
#include "protocol/mtu.hpp"

namespace roce::client {

namespace {

constexpr const char* kUsage = R"(roce-appliance: turns a host with a plain NIC into a RoCEv2 endpoint.

  roce-appliance [DPDK EAL arguments --] --dev PORT --ip ADDR [options]

It exposes one memory region (anonymous, or a file with --mr-file so it serves as remote memory)
and accepts connections set up the way the real tools do it, over TCP port 18515:
ibv_rc_pingpong clients (SENDs are echoed) and perftest clients. Every perftest bandwidth test
(ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw, any -q, -a, -n) and ib_read_lat and
ib_atomic_lat need no option. Two latency tests need the server to act, and perftest's exchange
does not say which test runs, so name it as perftest's own server is named: --perftest
ib_send_lat (each SEND is answered) or --perftest ib_write_lat (the server writes first; give it
the client's -s, or -a and -n, as ib_write_lat's server needs them). A -b (bidirectional) client
needs the server to send as it does: --perftest ib_write_bw -b (or ib_read_bw, ib_send_bw,
ib_atomic_bw) with the client's -s or -a, and -n, as perftest's server is given them. UC and UD clients need -c UC
or -c UD, as perftest's server does. Any RDMA peer can WRITE, READ and run atomics on the region
with the rkey and address the exchange gives it.
For each perftest session it prints on stdout what perftest's server prints (the test, both
sides' address lines, the figures). A line of status every second on stderr; a JSON report at
the end (after the printout when it too goes to stdout); a control socket with --control.

Example (no NIC: a TAP device):
  roce-appliance --vdev net_tap0,iface=rdp0 --dev net_tap0 --ip 10.77.0.2 --control /run/roce.sock)";

// A file the appliance will create (or replace) once DPDK is up: refused here, at the command
// line, with the reason, when it cannot work.
Status check_creatable(const std::string& option, const std::string& path) {
  if (path.empty()) return make_error(EINVAL, option + " needs a path");
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  const std::string d = dir.empty() ? "." : dir.string();
  if (::access(d.c_str(), W_OK | X_OK) != 0)
    return make_error(errno, option + " " + path + ": cannot create it in " + d + ": " + std::strerror(errno));
  return {};
}

// The region file is opened only after DPDK is up; a path that cannot work is refused here.
Status check_mr_file(const std::string& path) {
  if (path.empty()) return make_error(EINVAL, "--mr-file needs a path");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) return make_error(EINVAL, "--mr-file " + path + " is not a regular file");
    if (::access(path.c_str(), R_OK | W_OK) != 0)
      return make_error(errno, "--mr-file " + path + ": " + std::strerror(errno));
    return {};
  }
  if (errno != ENOENT) return make_error(errno, "--mr-file " + path + ": " + std::strerror(errno));
  return check_creatable("--mr-file", path);
}

Status check_report(const std::string& path) {
  if (path == "-") return {};
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return make_error(EISDIR, "--report " + path + " is a directory");
    if (::access(path.c_str(), W_OK) != 0) return make_error(errno, "--report " + path + ": " + std::strerror(errno));
    return {};
  }
  return check_creatable("--report", path);
}

// Seconds on the command line, milliseconds inside; 0.001 s .. 1 day.
Result<int> milliseconds(const std::string& option, double seconds) {
  if (!(seconds >= 0.001 && seconds <= 86400)) return make_error(EINVAL, option + " must be 0.001 .. 86400 seconds");
  return static_cast<int>(seconds * 1000 + 0.5);
}

// -b's -D and --run_infinitely, as perftest's parser takes them: no -a with either, no SEND
// with --run_infinitely, the margin the whole seconds of a quarter of the run.
Status parse_duplex_duration(const cxxopts::ParseResult& r, ServedTest& t) {
  t.infinite = r.count("run_infinitely") > 0;
  if (!r.count("test-duration") && !t.infinite) return {};
  if (t.sizes.size() > 1) return make_error(EINVAL, "-D and --run_infinitely run one size, as perftest's: no -a");
  if (t.infinite && t.verb == Verb::Send)
    return make_error(EINVAL, "perftest refuses ib_send_bw -b --run_infinitely: no SEND here either");
  const double seconds = r.count("test-duration") ? r["test-duration"].as<double>() : 5.0;
  if (!(seconds > 0 && seconds <= 86400)) return make_error(EINVAL, "-D must be 0 .. 86400 seconds (more than 0)");
  const double margin = std::floor(std::floor(seconds) / 4);
  if (!t.infinite && !(seconds > 2 * margin)) return make_error(EINVAL, "-D must be more than twice the margin");
  t.duration = static_cast<Nanos>(seconds * 1e9);
  t.margin = static_cast<Nanos>(margin * 1e9);
  return {};
}

// --perftest and the options that go with it (--echo and --write-echo are its older spellings).
Status parse_served_test(const cxxopts::ParseResult& r, const std::string& perftest, const std::string& size,
                         const std::string& write_echo, const std::string& connection, ApplianceOptions& o) {
  const int named = (r.count("perftest") > 0) + (r.count("echo") > 0) + (r.count("write-echo") > 0);
  if (named > 1) return make_error(EINVAL, "give one of --perftest, --echo and --write-echo");
  std::optional<std::pair<Verb, Measure>> test;
  if (r.count("perftest")) {
    test = parse_perftest_program(perftest);
    if (!test)
      return make_error(EINVAL, "bad --perftest '" + perftest + "': a perftest program such as ib_write_lat or ib_send_lat");
  }
  if (r.count("echo")) test = std::pair{Verb::Send, Measure::Latency};
  if (r.count("write-echo")) test = std::pair{Verb::Write, Measure::Latency};
  const bool write_lat = test && *test == std::pair{Verb::Write, Measure::Latency};
  const bool duplex = r.count("bidirectional") > 0;
  if (duplex && (!test || test->second != Measure::Bandwidth))
    return make_error(EINVAL, "-b needs the bandwidth test it serves: --perftest ib_write_bw, ib_read_bw, ib_send_bw or "
                              "ib_atomic_bw");
  if (!write_lat && !duplex && (r.count("size") || r.count("iters") || r.count("all")))
    return make_error(EINVAL, "-s, -n and -a are for --perftest ib_write_lat and -b: the other tests' servers need not "
                              "know them");
  if (r.count("write-echo") && r.count("size")) return make_error(EINVAL, "--write-echo gives the size: leave out -s");
  if (connection == "RC") o.qp.type = IBV_QPT_RC;
  else if (connection == "UC") o.qp.type = IBV_QPT_UC;
  else if (connection == "UD") o.qp.type = IBV_QPT_UD;
  else return make_error(EINVAL, "bad --connection '" + connection + "': RC, UC or UD");
  if (test && o.qp.type == IBV_QPT_UC && (test->first == Verb::Read || test->first == Verb::Atomic))
    return make_error(EINVAL, "-c UC serves write and send tests only (UC has no READ or atomics)");
  if (test && o.qp.type == IBV_QPT_UD && test->first != Verb::Send) return make_error(EINVAL, "-c UD serves send tests only");
  if (!test) return {};
  ServedTest t;
  t.verb = test->first;
  t.measure = test->second;
  if (write_lat) {
    const std::string& text = r.count("write-echo") ? write_echo : size;
    const auto sz = parse_size(text);
    if (!sz || *sz == 0 || *sz > (1u << 30))
      return make_error(EINVAL, std::string("bad ") + (r.count("write-echo") ? "--write-echo" : "-s") + " '" + text +
                                    "': 1 byte up to 1G");
    if (r.count("all")) {
      // ib_write_lat -a: 2 B to 8 MiB, each size -n times (perftest's default 1000).
      t.sizes.clear();
      for (std::uint32_t n = 2; n <= (8u << 20); n *= 2) t.sizes.push_back(n);
      t.iters = 1000;
    } else {
      t.sizes = {static_cast<std::uint32_t>(*sz)};
    }
    if (r.count("iters")) t.iters = r["iters"].as<std::uint64_t>();
    if (r.count("iters") && t.iters < 5) return make_error(EINVAL, "-n must be at least 5, as perftest's");
  }
  if (duplex) {
    // perftest's server given -b sends as its client does: its -s (default 65536) or -a, its -n
    // (default 5000 for ib_write_bw, else 1000).
    t.duplex = true;
    if (r.count("all")) {
      if (t.verb == Verb::Atomic) return make_error(EINVAL, "atomic tests run one size: no -a");
      t.sizes.clear();
      for (std::uint32_t n = 2; n <= (8u << 20); n *= 2) t.sizes.push_back(n);
    } else if (r.count("size")) {
      const auto sz = parse_size(size);
      if (!sz || *sz == 0 || *sz > (1u << 30)) return make_error(EINVAL, "bad -s '" + size + "': 1 byte up to 1G");
      t.sizes = {static_cast<std::uint32_t>(*sz)};
    } else {
      t.sizes = {t.verb == Verb::Atomic ? 8u : 65536u};
    }
    t.iters = r.count("iters") ? r["iters"].as<std::uint64_t>() : t.verb == Verb::Write ? 5000 : 1000;
    if (t.iters < 5) return make_error(EINVAL, "-n must be at least 5, as perftest's");
    if (Status s = parse_duplex_duration(r, t); !s) return s;
  } else if (r.count("test-duration") || r.count("run_infinitely")) {
    return make_error(EINVAL, "-D and --run_infinitely are for -b: a one-way client's server need not know them");
  }
  o.test = t;
  return {};
}

}  // namespace

std::uint64_t default_mr_quota() {
  // Half the machine's memory: regions are pinned-style working memory the kernel cannot
  // reclaim from us, and the rest of the host (DPDK's pool included) needs room too.
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  while (meminfo >> key) {
    if (key == "MemTotal:") {
      meminfo >> kib;
      break;
    }
    std::getline(meminfo, key);
  }
  if (kib == 0) return 4ull << 30;  // no /proc: a conservative 4 GiB
  return kib * 1024 / 2;
}

Result<ApplianceCli> parse_appliance_options(const std::vector<std::string>& args) {
  ApplianceCli cli;
  ApplianceOptions& o = cli.options;
  cxxopts::Options opts("roce-appliance", kUsage);
  opts.custom_help("[EAL args --] --dev PORT --ip ADDR [options]");
  std::string overrun_marks, backlog_marks;
  std::string ip, mr_size, recv_size, mtu, dcqcn, profile, write_echo, perftest, connection, size, mr_quota, rdma_cm;
  double handshake_s = 5, control_idle_s = 60, control_line_s = 10;
  std::uint32_t control_clients = 16;
  opts.add_options("Memory")
      ("mr-size", "size of the exposed region (K/M/G suffixes)", cxxopts::value<std::string>(mr_size)->default_value("64M"))
      ("mr-file", "back the exposed region with this file (kept after exit)", cxxopts::value<std::string>(o.mr_file))
      ("recv-size", "receive buffer: the largest SEND accepted", cxxopts::value<std::string>(recv_size)->default_value("8M"))
      ("recv-depth", "receives kept posted per QP (--use-srq: in the session's shared receive queue)", cxxopts::value<std::uint32_t>(o.recv_depth)->default_value("256"))
      ("use-srq", "as perftest's server --use-srq: the QPs of a perftest session (TCP exchange) take their receives from one shared receive queue, refilled at its limit event")
      ("echo", "the same as --perftest ib_send_lat")
      ("write-echo", "the same as --perftest ib_write_lat -s SIZE", cxxopts::value<std::string>(write_echo));
  opts.add_options("perftest")
      ("perftest", "the perftest test the clients run, where the server must act: ib_send_lat, ib_write_lat, a bandwidth test with -b",
       cxxopts::value<std::string>(perftest))
      ("s,size", "ib_write_lat, -b: the clients' -s", cxxopts::value<std::string>(size)->default_value("2"))
      ("n,iters", "ib_write_lat, -b: the clients' -n (ib_write_lat's default: answer until the client leaves, 1000 with -a; -b: perftest's)",
       cxxopts::value<std::uint64_t>())
      ("a,all", "ib_write_lat, -b: the clients run -a")
      ("D,test-duration", "-b: the clients' -D seconds", cxxopts::value<double>())
      ("run_infinitely", "-b: the clients run --run_infinitely (a WRITE or READ test; -D: their period)")
      ("b,bidirectional", "the clients run -b: the server sends as they do (with their -s or -a, and -n)")
      ("c,connection", "the clients' transport: RC, UC or UD", cxxopts::value<std::string>(connection)->default_value("RC"));
  opts.add_options("Connections")
      ("listen-ip", "address for the TCP exchange", cxxopts::value<std::string>(o.listen_ip)->default_value("0.0.0.0"))
      ("p,oob-port", "TCP port of the exchange", cxxopts::value<std::uint16_t>(o.oob_port)->default_value("18515"))
      ("m,mtu", "largest path MTU offered: 256 .. 4096", cxxopts::value<std::string>(mtu)->default_value("1024"))
      ("rdma-cm", "rdma_cm listeners, comma-separated: rping (TCP 7174, as rping -s), ucmatose (TCP 7471, as ucmatose's server), udaddy (UDP 7174, as udaddy's server), rdma_server (TCP 7471, as librdmacm's rdma_server; TCP 7472 when ucmatose holds 7471: rdma_client -p 7472), or all; perftest (TCP 18515: ib_*_bw/_lat -R, served as the TCP exchange is; not in all); NAME:PORT picks another port", cxxopts::value<std::string>(rdma_cm))
      ("cm-messages", "ucmatose, udaddy: messages each way (their -C)", cxxopts::value<std::uint32_t>(o.rdma_cm.messages)->default_value("10"))
      ("cm-message-size", "ucmatose, udaddy: bytes per message (their -S)", cxxopts::value<std::uint32_t>(o.rdma_cm.message_size)->default_value("100"))
      ("max-sessions", "clients served at once", cxxopts::value<std::uint32_t>(o.max_sessions)->default_value("64"))
      ("selective-repeat", kSelectiveRepeatHelp, cxxopts::value<std::uint32_t>(o.selective_repeat)->default_value(std::to_string(kDefaultSelectiveRepeatWindow)))
      ("handshake-timeout", "seconds a client may take to send its first bytes, and again to send what follows them at once (perftest: version, sizes, MTU)", cxxopts::value<double>(handshake_s)->default_value("5"));
  unsigned max_rd_atomic = 16;
  std::vector<std::string> nvmf_namespaces;
  opts.add_options("NVMe-oF")
      ("nvmf-subsystem", "serve this NVMe subsystem NQN over NVMe/RDMA (rdma_cm, with the discovery subsystem)", cxxopts::value<std::string>(o.nvmf.subsystem))
      ("nvmf-namespace", "a namespace of it, NSIDs 1, 2, ... in order: mem:SIZE or file:PATH[:SIZE] (repeatable)", cxxopts::value<std::vector<std::string>>(nvmf_namespaces))
      ("nvmf-allow-host", "a host NQN allowed to connect (repeatable; none: any host)", cxxopts::value<std::vector<std::string>>(o.nvmf.allowed_hosts))
      ("nvmf-port", "rdma_cm TCP port of the NVMe/RDMA listener", cxxopts::value<std::uint16_t>(o.nvmf.port)->default_value("4420"));
  opts.add_options("Limits")
      ("max-qps", "queue pairs per worker", cxxopts::value<std::uint32_t>(o.max_qps)->default_value("1024"))
      ("max-mrs", "memory regions in all", cxxopts::value<std::uint32_t>(o.max_mrs)->default_value("4096"))
      ("max-qp-wr", "outstanding work requests per send or receive queue", cxxopts::value<std::uint32_t>(o.max_qp_wr)->default_value("16384"))
      ("max-rd-atomic", "outstanding RDMA READ/atomic requests per QP, each way", cxxopts::value<unsigned>(max_rd_atomic)->default_value("16"))
      ("mr-quota", "bytes of memory regions in all: the exposed region, the receive buffer and what create_mr makes (K/M/G; default: half the machine's memory)", cxxopts::value<std::string>(mr_quota))
      ("control-clients", "control socket clients at once", cxxopts::value<std::uint32_t>(control_clients)->default_value("16"))
      ("control-idle-timeout", "seconds a control client may stay silent before it is closed", cxxopts::value<double>(control_idle_s)->default_value("60"))
      ("control-line-timeout", "seconds a control command line may take from its first byte to its newline", cxxopts::value<double>(control_line_s)->default_value("10"));
  opts.add_options("Operation")
      ("vdev", "create a DPDK virtual device first (repeatable)", cxxopts::value<std::vector<std::string>>())
      ("dev", "DPDK port to serve on (name or number)", cxxopts::value<std::string>(o.dev))
      ("ip", "the appliance's IPv4 or IPv6 address on that port (its GID)", cxxopts::value<std::string>(ip))
      ("workers", "transport worker lcores", cxxopts::value<unsigned>(o.workers)->default_value("1"))
      ("dcqcn", "congestion control: on or off", cxxopts::value<std::string>(dcqcn)->default_value("off"))
      ("dcqcn-profile", "paper, mlx or hpcc", cxxopts::value<std::string>(profile)->default_value("paper"))
      ("line-rate-gbps", "line rate for DCQCN, Gb/s", cxxopts::value<double>(o.line_rate_gbps)->default_value("10"))
      ("overrun-marks", "on: the port's receive drops (a full RX ring) mark as many arriving ECN-capable frames CE, for DCQCN to slow the senders (docs/loss.md); off: only counted", cxxopts::value<std::string>(overrun_marks)->default_value("on"))
      ("backlog-marks", "off, on or KMIN,KMAX,PMAX: mark arriving ECN-capable frames CE by the RX queue's backlog in frames, before it overflows (a switch's RED; on: 64,256,0.1; docs/loss.md)", cxxopts::value<std::string>(backlog_marks)->default_value("off"))
      ("control", "control socket path (JSON lines, owner only)", cxxopts::value<std::string>(o.control_socket))
      ("status-interval", "seconds between status lines (0: none)", cxxopts::value<double>(o.status_interval_s)->default_value("1"))
      ("report", "write the final JSON report here (- for stdout)", cxxopts::value<std::string>(o.report_path)->default_value("-"))
      ("duration", "stop after this many seconds (0: until SIGINT or the stop command)", cxxopts::value<double>(o.duration_s)->default_value("0"))
      ("h,help", "this text");
  // Old spellings, kept for scripts and left out of the help (dcqcn-trace's name is the one).
  opts.add_options("Aliases")("line-rate", "same as --line-rate-gbps", cxxopts::value<double>());
  auto parsed = parse_cli(opts, args);
  if (!parsed) return parsed.error();
  const cxxopts::ParseResult& r = *parsed;
  if (r.count("help")) {
    cli.help = true;
    cli.help_text = opts.help({"Memory", "perftest", "Connections", "Limits", "Operation"});
    return cli;
  }
  if (!r.unmatched().empty()) return make_error(EINVAL, "unexpected argument '" + r.unmatched().front() + "'");
  if (r.count("line-rate")) {
    if (r.count("line-rate-gbps")) return make_error(EINVAL, "--line-rate is the old name of --line-rate-gbps; give one of them");
    o.line_rate_gbps = r["line-rate"].as<double>();
  }
  if (!parse_ipv4(o.listen_ip)) return make_error(EINVAL, "bad --listen-ip '" + o.listen_ip + "': an IPv4 address");
  if (r.count("vdev")) o.vdevs = r["vdev"].as<std::vector<std::string>>();
  if (o.dev.empty()) return make_error(EINVAL, "--dev is required: the DPDK port to serve on");
  const auto addr = parse_ip(ip);
  if (!addr) return make_error(EINVAL, "--ip is required: the appliance's IPv4 or IPv6 address (got '" + ip + "')");
  o.ip = *addr;
  const auto mrb = parse_size(mr_size);
  if (!mrb || *mrb == 0 || *mrb > (256ull << 30)) return make_error(EINVAL, "bad --mr-size '" + mr_size + "'");
  o.mr_bytes = *mrb;
  const auto rb = parse_size(recv_size);
  if (!rb || *rb == 0 || *rb > (1ull << 31)) return make_error(EINVAL, "bad --recv-size '" + recv_size + "' (up to 2G)");
  o.recv_bytes = *rb;
  if (o.recv_depth == 0 || o.recv_depth > 16384) return make_error(EINVAL, "--recv-depth must be 1..16384");
  o.qp.recv_depth = o.recv_depth + 16;
  o.use_srq = r.count("use-srq") > 0;
  o.qp.access |= rdma::kAccessFlushGlobal;  // the QPs as the exposed region: FLUSH of global visibility
  const auto m = parse_size(mtu);
  const auto pm = m ? proto::mtu_from_bytes(static_cast<std::uint32_t>(*m)) : std::nullopt;
  if (!pm) return make_error(EINVAL, "bad --mtu '" + mtu + "': 256, 512, 1024, 2048 or 4096");
  o.qp.mtu = static_cast<ibv_mtu>(*pm);
  if (r.count("mr-file"))
    if (Status s = check_mr_file(o.mr_file); !s) return s.error();
  if (Status s = check_report(o.report_path); !s) return s.error();
  if (!o.control_socket.empty())
    if (Status s = check_creatable("--control", o.control_socket); !s) return s.error();
  if (o.control_socket.size() >= sizeof(sockaddr_un{}.sun_path))
    return make_error(ENAMETOOLONG, "--control path longer than " + std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) +
                                        " bytes: " + o.control_socket);
  if (Status s = parse_served_test(r, perftest, size, write_echo, connection, o); !s) return s.error();
  if (r.count("rdma-cm")) {
    auto cm = parse_cm_listeners(rdma_cm);
    if (!cm) return cm.error();
    cm->messages = o.rdma_cm.messages;
    cm->message_size = o.rdma_cm.message_size;
    o.rdma_cm = *cm;
  }
  for (const std::string& n : nvmf_namespaces) {
    auto ns = parse_nvmf_namespace(n);
    if (!ns) return make_error(ns.error().code, "--nvmf-namespace " + ns.error().message);
    o.nvmf.namespaces.push_back(*ns);
  }
  if (!o.nvmf.enabled() && (!o.nvmf.namespaces.empty() || !o.nvmf.allowed_hosts.empty()))
    return make_error(EINVAL, "--nvmf-namespace and --nvmf-allow-host need --nvmf-subsystem");
  if (o.rdma_cm.messages == 0 || o.rdma_cm.messages > 4096) return make_error(EINVAL, "--cm-messages must be 1..4096");
  if (o.rdma_cm.message_size == 0 || o.rdma_cm.message_size > 65536) return make_error(EINVAL, "--cm-message-size must be 1..65536");
  if (o.rdma_cm.udaddy && o.rdma_cm.message_size > 4096)
    return make_error(EINVAL, "--cm-message-size above 4096 does not fit a UD datagram (udaddy)");
  if (dcqcn != "on" && dcqcn != "off") return make_error(EINVAL, "--dcqcn takes on or off");
  o.dcqcn = dcqcn == "on";
  if (overrun_marks != "on" && overrun_marks != "off") return make_error(EINVAL, "--overrun-marks takes on or off");
  o.overrun_marks = overrun_marks == "on";
  auto backlog = dp::parse_backlog_marks(backlog_marks);
  if (!backlog) return backlog.error();
  o.backlog_marks = *backlog;
  const auto prof = cc::profile_from_string(profile);
  if (!prof) return make_error(EINVAL, "--dcqcn-profile takes paper, mlx or hpcc");
  o.dcqcn_profile = *prof;
  if (o.workers == 0 || o.workers > 16) return make_error(EINVAL, "--workers must be 1..16");
  if (o.line_rate_gbps <= 0) return make_error(EINVAL, "--line-rate-gbps must be positive");
  if (o.status_interval_s < 0) return make_error(EINVAL, "--status-interval must not be negative");
  if (o.duration_s < 0) return make_error(EINVAL, "--duration must not be negative");
  if (o.max_sessions == 0) return make_error(EINVAL, "--max-sessions must be at least 1");
  if (!valid_selective_repeat_window(o.selective_repeat))
    return make_error(EINVAL, "--selective-repeat takes 0 (go-back-N) or a power of two from 8 to 128, not " + std::to_string(o.selective_repeat));
  o.rdma_cm.selective_repeat = o.nvmf.selective_repeat = o.selective_repeat;
  auto hs = milliseconds("--handshake-timeout", handshake_s);
  if (!hs) return hs.error();
  o.handshake_timeout_ms = *hs;
  auto idle = milliseconds("--control-idle-timeout", control_idle_s);
  if (!idle) return idle.error();
  o.control.idle_timeout_ms = *idle;
  auto line = milliseconds("--control-line-timeout", control_line_s);
  if (!line) return line.error();
  o.control.line_timeout_ms = *line;
  if (control_clients == 0 || control_clients > 1024) return make_error(EINVAL, "--control-clients must be 1..1024");
  o.control.max_clients = control_clients;
  if (r.count("mr-quota")) {
    const auto q = parse_size(mr_quota);
    if (!q || *q == 0) return make_error(EINVAL, "bad --mr-quota '" + mr_quota + "' (bytes, with K/M/G)");
    o.mr_quota = *q;
  } else {
    o.mr_quota = default_mr_quota();
  }
  if (o.mr_bytes + o.recv_bytes > o.mr_quota)
    return make_error(EDQUOT, "--mr-size " + mr_size + " and --recv-size " + recv_size + " exceed the memory region quota (" +
                                  std::to_string(o.mr_quota >> 20) + " MiB; --mr-quota)");
  // The appliance itself needs QPs and regions to serve anyone: its exposed region and receive
  // buffer, and at least one QP per session.
  if (o.max_qps == 0 || o.max_qps > (1u << 16)) return make_error(EINVAL, "--max-qps must be 1..65536");
  if (o.max_mrs < 2 || o.max_mrs > (1u << 20)) return make_error(EINVAL, "--max-mrs must be 2..1048576 (the appliance registers 2 itself)");
  const std::uint32_t queue_depth = std::max(o.qp.send_depth, o.qp.recv_depth);
  if (o.max_qp_wr < queue_depth || o.max_qp_wr > (1u << 20))
    return make_error(EINVAL, "--max-qp-wr must be " + std::to_string(queue_depth) +
                                  " (the appliance's own queue depth, see --recv-depth) .. 1048576");
  if (max_rd_atomic == 0 || max_rd_atomic > 255) return make_error(EINVAL, "--max-rd-atomic must be 1..255");
  o.max_rd_atomic = static_cast<std::uint8_t>(max_rd_atomic);
  o.qp.max_rd_atomic = std::min(o.qp.max_rd_atomic, o.max_rd_atomic);
  return cli;
}

}  // namespace roce::client
