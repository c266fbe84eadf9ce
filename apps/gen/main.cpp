// roce-gen: start-up and wiring only; the tests live in client/ and apps/gen.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "client/buffers.hpp"
#include "client/cli.hpp"
#include "client/oob_server.hpp"
#include "client/perftest_client.hpp"
#include "client/perftest_server_print.hpp"
#include "client/runtime.hpp"
#include "dataplane/report.hpp"
#include "client/traffic/perftest_text.hpp"
#include "apps/gen/emulate.hpp"
#include "apps/gen/gen_json.hpp"
#include "apps/gen/nvme_bench.hpp"
#include "apps/gen/options.hpp"
#include "apps/gen/perftest_printout.hpp"
#include "apps/gen/cm_clients.hpp"
#include "apps/gen/pingpong_client.hpp"
#include "apps/gen/progress_line.hpp"
#include "apps/gen/raw/raw_main.hpp"
#include "apps/gen/ud_pingpong_client.hpp"

using namespace roce;
using namespace roce::client;

namespace {

constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
constexpr std::uint32_t kMaxInline = 912;  // perftest's MAX_INLINE: what -I may ask for

bool g_json_errors = false;

int fail(const std::string& why, int code = 1) {
  std::fprintf(stderr, "roce-gen: %s\n", why.c_str());
  if (g_json_errors) std::printf("%s\n", gen_error_json(why, code).c_str());
  return code;
}

// The loops' published counters: the run's loops may still be running.
ReceiveQueueFigures receive_queue_of(dp::Dataplane& dp) {
  dp.publish_stats();
  const dp::DataplaneSnapshot s = dp.snapshot();
  ReceiveQueueFigures f;
  const auto add = [&f](const auto& st) {
    f.overrun_frames += st.rx_overrun_frames;
    f.overrun_ce_marks += st.rx_overrun_ce_marks;
    f.backlog_bursts += st.rx_backlog_bursts;
    f.backlog_ce_marks += st.rx_backlog_ce_marks;
    f.backlog_max_frames = std::max(f.backlog_max_frames, st.rx_backlog_max_frames);
  };
  for (const dp::WorkerSnapshot& w : s.workers) add(w.stats);
  if (s.io) add(s.io->stats);
  return f;
}

// ibv_rc_pingpong and ibv_ud_pingpong are not perftest: their figures keep roce-gen's own table.
void print_pingpong(const GenOptions& g, dp::Dataplane& dp, const LatFigures& lat, const RunCounters& c) {
  if (g.json) {
    GenJsonRun r;
    r.lat = {lat};
    r.counters = c;
    r.receive_queue = receive_queue_of(dp);
    std::printf("%s\n", gen_result_json(g, r).c_str());
    return;
  }
  std::printf("%s%s%s%s", table_rule().c_str(), lat_table_header().c_str(), lat_table_row(lat).c_str(), table_rule().c_str());
  std::printf(" errors %llu%s%s, retransmitted packets %llu, NAKs %llu, timeouts %llu, CNPs received %llu\n",
              static_cast<unsigned long long>(c.errors), c.first_error.empty() ? "" : " (first: ",
              c.first_error.empty() ? "" : (c.first_error + ")").c_str(), static_cast<unsigned long long>(c.retransmits),
              static_cast<unsigned long long>(c.naks), static_cast<unsigned long long>(c.timeouts),
              static_cast<unsigned long long>(c.cnps_received));
}

// The transport's side of a run, after perftest's table (perftest has no such line).
// `selective_repeat`: the reorder window the server agreed to, 0 = go-back-N.
void print_counters(const RunCounters& c, std::uint32_t selective_repeat) {
  std::fprintf(stderr, "roce-gen: errors %llu%s%s, retransmitted packets %llu, NAKs %llu, timeouts %llu, CNPs received %llu\n",
               static_cast<unsigned long long>(c.errors), c.first_error.empty() ? "" : " (first: ",
               c.first_error.empty() ? "" : (c.first_error + ")").c_str(), static_cast<unsigned long long>(c.retransmits),
               static_cast<unsigned long long>(c.naks), static_cast<unsigned long long>(c.timeouts),
               static_cast<unsigned long long>(c.cnps_received));
  if (selective_repeat)
    std::fprintf(stderr, "roce-gen: packets sent %llu; selective repeat (window %u): SACKs received %llu, packets resent %llu\n",
                 static_cast<unsigned long long>(c.packets_sent), selective_repeat,
                 static_cast<unsigned long long>(c.sacks_received), static_cast<unsigned long long>(c.selective_resends));
  else
    std::fprintf(stderr, "roce-gen: packets sent %llu; go-back-N (the server did not agree to selective repeat)\n",
                 static_cast<unsigned long long>(c.packets_sent));
}

int run_perftest(const GenOptions& g, dp::Dataplane& dp) {
  const PerftestFlags& p = g.perftest;
  ClientOptions co = client_options_of(g);
  const PerftestStyle style = style_of(g);
  ProgressLine progress(!g.json && ::isatty(STDERR_FILENO), p.gbits);
  auto print = [&](const std::string& s) {
    if (g.json) return;
    progress.clear();
    std::fputs(s.c_str(), stdout);
    std::fflush(stdout);
  };
  print_as_perftest(co, g, print);
  auto run = run_perftest_client(dp, co, [&](const ClientProgress& pr) { progress.show(pr); });
  progress.clear();
  if (!run) return fail(run.error().message);
  const std::string verify = !g.verify                   ? ""
                             : g.spec.verb == Verb::Send ? "not possible for SEND (the server keeps its receives)"
                             : run->verified             ? "remote memory as written"
                                                         : "MISMATCH";
  if (g.json) {
    const ClientConnection connection{run->local, run->remote, run->mtu, run->remote_version};
    GenJsonRun r;
    r.connection = &connection;
    r.bw = run->bw;
    r.lat = run->lat;
    r.lat_duration = run->lat_duration;
    r.counters = run->counters;
    r.verify = verify;
    r.cpu_util_percent = run->cpu_util_percent;
    r.stopped = run->stopped;
    r.selective_repeat = run->selective_repeat;
    r.receive_queue = receive_queue_of(dp);
    std::printf("%s\n", gen_result_json(g, r).c_str());
  } else {
    print(perftest_closing(style));
    if (p.output == PerftestOutput::Full) print_counters(run->counters, run->selective_repeat);
    if (!verify.empty()) std::fprintf(stderr, "roce-gen: verify: %s\n", verify.c_str());
  }
  return run->counters.errors || (g.verify && g.spec.verb != Verb::Send && !run->verified) ? 1 : 0;
}

}  // namespace

int gen_main(int argc, char** argv) {
  const dp::SplitArgs split = dp::split_args(argc, argv, default_eal_args("roce-gen"));
  // Two more modes with their own options: raw packet streams (roce-craft's) and the link emulator.
  const std::string mode = split.app.size() > 1 ? split.app[1] : "";
  if (mode == "raw") {
    std::vector<std::string> app{"roce-gen raw"};
    app.insert(app.end(), split.app.begin() + 2, split.app.end());
    return gen::raw_main("roce-gen raw", split.eal, app);
  }
  if (mode == "rping" || mode == "ucmatose" || mode == "udaddy" || mode == "rdma_client") return cm_client_main(mode, split);  // rdma_cm clients
  if (mode == "emulate") {
    auto eo = parse_emulate_options(split.app);
    if (!eo) {
      std::fprintf(stderr, "roce-gen emulate: %s (try --help)\n", eo.error().message.c_str());
      return 2;
    }
    if (eo->help) {
      std::cout << eo->help_text;
      return 0;
    }
    return run_emulate(*eo, split.eal);
  }
  if (mode.rfind("nvme-", 0) == 0) {
    auto no = parse_nvme_bench_options(split.app);
    if (!no) {
      std::fprintf(stderr, "roce-gen %s: %s (try --help)\n", mode.c_str(), no.error().message.c_str());
      return 2;
    }
    if (no->help) {
      std::cout << no->help_text;
      return 0;
    }
    return run_nvme_bench(*no, split.eal);
  }
  g_json_errors = json_requested(split.app);
  auto parsed = parse_gen_options(split.app);
  if (!parsed) return fail(parsed.error().message + " (try --help)", 2);
  const GenOptions& g = *parsed;
  if (g.help) {
    std::cout << g.help_text;
    return 0;
  }
  if (!g.json)
    for (const std::string& note : g.perftest.notes) std::fprintf(stderr, "roce-gen: %s\n", note.c_str());
  ToolEal eal;
  if (int rc = eal.start(split.eal, g.vdevs, fail)) return rc;

  dp::DataplaneOptions dopt;
  dopt.name = "gen";
  dopt.port.name = g.dev;
  dopt.ip = g.ip;
  dopt.workers = g.workers;
  dopt.mode = g.workers > 1 ? dp::Mode::Pipeline : dp::Mode::RunToCompletion;
  dopt.engine.max_inline = kMaxInline;
  // -T: the ECN bits of the TOS byte are the engine's to set on every packet it sends.
  if (g.perftest.traffic_class) dopt.engine.tuning.data_ecn = static_cast<proto::Ecn>(*g.perftest.traffic_class & 3);
  dopt.overrun.mark = g.overrun_marks;
  dopt.backlog = g.backlog_marks;
  if (g.dcqcn) {
    dopt.engine.tuning.congestion.enabled = true;
    dopt.engine.tuning.congestion.rp = cc::params_for(g.dcqcn_profile, g.line_rate_gbps * 1e9);
  }
  auto dpr = dp::Dataplane::create(dopt);
  if (!dpr) return fail(dpr.error().message, dpr.error().code == ENODEV ? 2 : 1);
  dp::Dataplane& dp = **dpr;
  RunningDataplane running;
  if (Status s = running.start(dp); !s) return fail(s.error().message);

  int rc = 0;
  if (g.listen) {
    // Server mode: one client, like a perftest server.
    const ServedTest served = served_test_of(g);
    const std::uint32_t largest = served.sizes.back();
    const std::size_t exposed_bytes = std::max<std::size_t>(2 * std::size_t{largest}, 1 << 20);
    auto exposed = MappedBuffer::anonymous(exposed_bytes);
    auto recv = MappedBuffer::anonymous(std::max<std::size_t>(largest + kUdGrhBytes, 4096));
    if (!exposed || !recv) return fail("cannot allocate buffers");
    Connector conn(dp, static_cast<std::uint64_t>(dp.now()) | 1);
    auto emr = conn.register_memory(exposed->data(), exposed->size(), kAll);
    auto rmr = conn.register_memory(recv->data(), recv->size(), IBV_ACCESS_LOCAL_WRITE);
    if (!emr || !rmr) return fail("cannot register buffers");
    DriverSet drivers(dp);
    ServerConfig cfg;
    cfg.qp = g.qp;
    cfg.selective_repeat = g.selective_repeat;
    cfg.exposed = LocalBuffer{exposed->data(), exposed->size(), (*emr)->lkey()};
    cfg.recv_region = LocalBuffer{recv->data(), recv->size(), (*rmr)->lkey()};
    // roce-gen's server knows its test, as perftest's does (ib_send_lat answers, ib_write_lat writes first).
    cfg.test = served;
    cfg.use_srq = g.perftest.use_srq;
    auto listener = TcpListener::listen("0.0.0.0", g.oob_port);
    if (!listener) return fail(listener.error().message, 2);
    std::fprintf(stderr, "roce-gen: waiting for a client on TCP port %u\n", listener->port());
    std::atomic<bool> stop{false};
    Result<TcpStream> tcp = make_error(ETIMEDOUT, "no client");
    while (!dp::StopSignals::requested()) {
      tcp = listener->accept(200);
      if (tcp || tcp.error().code != ETIMEDOUT) break;
    }
    if (!tcp) {
      rc = fail(dp::StopSignals::requested() ? "stopped before a client came" : tcp.error().message);
    } else {
      OobServer server(conn, drivers, cfg);
      std::thread watch([&] {
        while (!stop) {
          if (dp::StopSignals::requested()) stop = true;
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      });
      auto report = server.serve(*tcp, stop);
      stop = true;
      watch.join();
      if (!report) {
        rc = fail(report.error().message);
      } else {
        // What perftest's server prints; ours knows its test from the command line.
        ServerPrintSettings ps;
        ps.device = g.dev;
        ps.recv_depth = cfg.recv_depth;
        ps.max_rd_atomic = g.qp.max_rd_atomic;
        ps.gbits = g.perftest.gbits;
        ps.test = cfg.test;
        if (!g.json) std::fputs(perftest_server_printout(*report, ps).c_str(), stdout);
        std::fprintf(stderr, "roce-gen: served %s %s from %s: %u QP(s), %llu messages received (%llu bytes)\n",
                     report->tool.c_str(), report->remote_version.c_str(), report->peer.c_str(), report->qps,
                     static_cast<unsigned long long>(report->received_messages),
                     static_cast<unsigned long long>(report->received_bytes));
      }
    }
  } else if (g.pingpong) {
    ProgressLine progress(!g.json && ::isatty(STDERR_FILENO), false);
    auto run = run_pingpong_client(dp, g.server, g.oob_port, g.spec, g.qp, [&](const std::string& line) { progress.show(line); });
    progress.clear();
    if (!run) {
      rc = fail(run.error().message);
    } else {
      print_pingpong(g, dp, run->lat, run->counters);
      rc = run->counters.errors ? 1 : 0;
    }
  } else if (g.ud_pingpong) {
    auto run = run_ud_pingpong_client(dp, g.server, g.oob_port, g.spec);
    if (!run) {
      rc = fail(run.error().message);
    } else {
      print_pingpong(g, dp, run->lat, run->counters);
      if (!g.json) std::printf(" payload check: %llu of %llu echoes differ from what was sent\n",
                               static_cast<unsigned long long>(run->payload_mismatches),
                               static_cast<unsigned long long>(run->lat.iterations));
      rc = run->counters.errors || run->payload_mismatches ? 1 : 0;
    }
  } else {
    rc = run_perftest(g, dp);
  }
  running.stop();
  dpr->reset();
  return rc;
}

int main(int argc, char** argv) {
  // roce-craft, the raw mode's old name, is a link to roce-gen: called by it, roce-gen is `roce-gen raw`.
  if (argc > 0 && std::filesystem::path(argv[0]).filename() == "roce-craft") {
    const dp::SplitArgs split = dp::split_args(argc, argv, default_eal_args("roce-craft"));
    return guarded_main("roce-craft", [&] { return gen::raw_main("roce-craft", split.eal, split.app); });
  }
  return guarded_main("roce-gen", [&] { return gen_main(argc, argv); }, fail);
}
