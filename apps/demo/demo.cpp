#include "apps/demo/demo.hpp"

#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "apps/appliance/appliance.hpp"
#include "capture/capture_writer.hpp"
#include "apps/demo/dcqcn_share.hpp"
#include "apps/demo/soak.hpp"
#include "client/perftest_client.hpp"
#include "client/traffic/perftest_text.hpp"
#include "dataplane/ring_port.hpp"
#include "netsim/link_emulator.hpp"

namespace roce::client {

namespace {

// The emulator's bottleneck marks with RED; the simulated picture uses the same thresholds.
constexpr cc::RedParams kBottleneckRed{20'000, 200'000, 0.2};

// The DCQCN figure: the same reaction, notification and congestion points stepped on a
// virtual clock (dcqcn_share.hpp), written next to the live trace and summed up in one line.
void draw_share(const DemoOptions& o) {
  ShareConfig c;
  c.flows = o.flows;
  c.line_rate_bps = o.line_rate_gbps * 1e9;
  c.bottleneck_bps = o.bottleneck_gbps * 1e9;
  c.red = kBottleneckRed;
  std::ofstream csv(o.out_dir + "/dcqcn_share.csv");
  if (!csv) {
    std::printf(" DCQCN picture: cannot write %s/dcqcn_share.csv\n\n", o.out_dir.c_str());
    return;
  }
  csv << "# title=DCQCN: " << o.flows << " flows share a " << o.bottleneck_gbps
      << " Gb/s bottleneck (lib/cc on a virtual clock)\n# bottleneck_gbps=" << o.bottleneck_gbps
      << "\n# ymax_gbps=" << 2.5 * o.bottleneck_gbps << "\n# flows=" << o.flows << "\n";
  const ShareResult r = run_dcqcn_share(c, csv);
  std::printf(" DCQCN picture (lib/cc on a virtual clock, %s/dcqcn_share.csv): %u flows joining %.0f ms apart on the %.1f Gb/s\n"
              "   bottleneck settle at", o.out_dir.c_str(), o.flows, static_cast<double>(c.join_every) / 1e6, o.bottleneck_gbps);
  for (std::size_t i = 0; i < r.throughput_bps.size(); ++i) std::printf("%s %.2f", i ? "," : "", r.throughput_bps[i] / 1e9);
  std::printf(" Gb/s (fair share %.2f, Jain index %.3f)\n\n", o.bottleneck_gbps / o.flows, r.jain);
}

// The first frames crossing the emulator, in both directions, for the pcap.
struct Tap {
  std::mutex mutex;
  std::vector<std::pair<Nanos, std::vector<std::byte>>> frames;
  std::uint32_t limit = 0;
  dp::TscClock clock;
};

std::uint16_t tap_rx(std::uint16_t, std::uint16_t, rte_mbuf** pkts, std::uint16_t n, std::uint16_t, void* arg) {
  auto* tap = static_cast<Tap*>(arg);
  std::lock_guard lock(tap->mutex);  // only the demo's one polling thread takes it, and only until the limit
  for (std::uint16_t i = 0; i < n && tap->frames.size() < tap->limit; ++i) {
    const auto* p = rte_pktmbuf_mtod(pkts[i], const std::byte*);
    tap->frames.emplace_back(tap->clock.now(), std::vector<std::byte>(p, p + pkts[i]->data_len));
  }
  return n;
}

// One lcore steps everything: both dataplanes and the emulator (a 2-core machine has one
// core for polling and one for the control threads).
struct Stepper {
  dp::Dataplane* gen;
  dp::Dataplane* appl;
  netsim::LinkEmulator* emu;
  std::atomic<bool> stop{false};
  static int run(void* arg) {
    auto* s = static_cast<Stepper*>(arg);
    while (!s->stop.load(std::memory_order_relaxed)) {
      s->gen->poll_once();
      s->emu->poll(s->emu->now());
      s->appl->poll_once();
    }
    return 0;
  }
};

std::unique_ptr<dp::Dataplane> make_dp(const char* name, std::uint16_t port, proto::Ipv4Addr ip, double line_gbps) {
  dp::DataplaneOptions o;
  o.name = name;
  o.port.name = std::to_string(port);
  o.ip = rdma::IpAddress::ipv4(ip);
  o.mbufs = 16383;
  o.engine.tuning.congestion.enabled = true;
  o.engine.tuning.congestion.rp = cc::paper_params(line_gbps * 1e9);
  auto d = dp::Dataplane::create(o);
  if (!d) {
    std::fprintf(stderr, "roce-demo: %s\n", d.error().message.c_str());
    return nullptr;
  }
  d.value()->set_driven_by_other_thread(true);
  return std::move(*d);
}

}  // namespace

Status prepare_out_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error(ec.value(), "--out " + dir + ": cannot make the directory: " + ec.message());
  if (!std::filesystem::is_directory(dir, ec)) return make_error(ENOTDIR, "--out " + dir + " is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return make_error(errno, "--out " + dir + ": cannot write in it: " + std::strerror(errno));
  return {};
}

Result<DemoResult> run_demo(const DemoOptions& o) {
  if (o.soak_s == 0)
    if (Status s = prepare_out_dir(o.out_dir); !s) return s.error();
  auto left = dp::make_ring_pair("demo_gen", "demo_emu_x");
  auto right = dp::make_ring_pair("demo_emu_y", "demo_appl");
  if (!left || !right) return make_error(EIO, "cannot create the ring ports");

  auto gen = make_dp("demo_gen", left->a, {10, 77, 0, 1}, o.line_rate_gbps);
  auto appl = make_dp("demo_appl", right->b, {10, 77, 0, 2}, o.line_rate_gbps);
  if (!gen || !appl) return make_error(EIO, "cannot start the dataplanes");

  netsim::LinkEmulatorOptions eo;
  eo.name = "demo_emu";
  eo.x.name = std::to_string(left->b);
  eo.y.name = std::to_string(right->a);
  netsim::DirectionFaults f;
  f.loss = o.loss;
  f.duplicate = o.duplicate;
  f.reorder = o.reorder;
  f.delay = 5 * kMicro;
  f.rate_bps = o.bottleneck_gbps * 1e9;
  f.queue_bytes = 4 << 20;
  f.red = kBottleneckRed;
  eo.x_to_y = f;
  eo.y_to_x = f;
  eo.seed = 2026;
  auto emu = netsim::LinkEmulator::create(eo);
  if (!emu) return emu.error();

  Tap tap;
  tap.limit = o.capture_frames;
  const auto* cb_x = rte_eth_add_rx_callback(left->b, 0, tap_rx, &tap);
  const auto* cb_y = rte_eth_add_rx_callback(right->a, 0, tap_rx, &tap);

  Stepper stepper{gen.get(), appl.get(), emu->get()};
  const unsigned lcore = rte_get_next_lcore(rte_lcore_id(), 1, 0);
  std::thread fallback;
  if (lcore < RTE_MAX_LCORE) {
    rte_eal_remote_launch(&Stepper::run, &stepper, lcore);
  } else {
    fallback = std::thread([&] { Stepper::run(&stepper); });
  }
  auto finish = [&] {
    stepper.stop = true;
    if (lcore < RTE_MAX_LCORE) rte_eal_wait_lcore(lcore);
    if (fallback.joinable()) fallback.join();
    rte_eth_remove_rx_callback(left->b, 0, cb_x);
    rte_eth_remove_rx_callback(right->a, 0, cb_y);
  };

  // The appliance, serving the exchange on loopback.
  ApplianceOptions ao;
  ao.oob_port = 0;  // any free port
  ao.listen_ip = "127.0.0.1";
  ao.mr_bytes = 16 << 20;
  ao.status_interval_s = 0;
  // Destroyed before finish(): its destructor detaches drivers through the (still polling) worker.
  auto appliance = std::make_unique<Appliance>(*appl, ao);
  if (Status s = appliance->start(); !s) {
    appliance.reset();
    finish();
    return s.error();
  }
  std::thread serving([&] { appliance->run(); });
  if (o.soak_s > 0) {
    const SoakOutcome soaked = run_soak(*gen, *appl, **emu, appliance->oob_port(), o);
    appliance->stop();
    serving.join();
    appliance.reset();
    finish();
    return finish_soak(soaked, *gen, *appl, **emu);
  }

  draw_share(o);
  // The DCQCN trace: the generator's QP rates every 200 us while the test runs.
  std::atomic<bool> tracing{true};
  std::ofstream csv(o.out_dir + "/dcqcn_rates.csv");
  if (!csv) {
    // The appliance thread is running: stop and join it before leaving (a joinable std::thread
    // going out of scope would end the process).
    appliance->stop();
    serving.join();
    appliance.reset();
    finish();
    return make_error(EIO, "cannot write " + o.out_dir + "/dcqcn_rates.csv");
  }
  // What the picture needs besides the samples (scripts/plot_rates.py reads these comments).
  csv << "# title=roce-demo: the DCQCN rates of its " << o.flows << " sender QPs in this run\n# label=QP\n# bottleneck_gbps="
      << o.bottleneck_gbps << "\n# ymax_gbps=" << 2.5 * o.bottleneck_gbps << "\n# flows=" << o.flows << "\n";
  csv << "t_us,qp,rc_gbps,rt_gbps,alpha\n";
  const auto t0 = std::chrono::steady_clock::now();
  std::thread tracer([&] {
    while (tracing) {
      gen->call(0, [&](rdma::Engine& e) {
        const double t_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        e.for_each_qp([&](const rdma::QueuePair& q) {
          if (const rdma::QpCongestion* c = q.congestion())
            csv << t_us << "," << q.qpn() << "," << c->reaction_point().rc_bps() / 1e9 << ","
                << c->reaction_point().rt_bps() / 1e9 << "," << c->reaction_point().alpha() << "\n";
        });
        return 0;
      });
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });

  std::printf("roce-demo: roce-gen (10.77.0.1) -> link emulator (loss %.2f %%, %.1f Gb/s bottleneck with RED ECN marking) -> roce-appliance (10.77.0.2)\n",
              o.loss * 100, o.bottleneck_gbps);
  std::printf("           %s %s, %u B x %llu on each of %u QPs, DCQCN paper profile at %.0f Gb/s line rate\n\n",
              to_string(o.spec.verb).c_str(), to_string(o.spec.measure).c_str(), o.spec.size,
              static_cast<unsigned long long>(o.spec.iters), o.flows, o.line_rate_gbps);
  ClientOptions co;
  co.server = "127.0.0.1";
  co.port = appliance->oob_port();
  co.spec = o.spec;
  co.qps = o.flows;
  co.verify = o.spec.verb != Verb::Send;
  auto run = run_perftest_client(*gen, co, [](const ClientProgress& p) {
    std::printf("  %u B: %llu ops after %.0f s, %.3f Gb/s in the last second\n", p.size,
                static_cast<unsigned long long>(p.done_ops), p.elapsed_s, p.bytes_per_s * 8 / 1e9);
  });
  tracing = false;
  tracer.join();
  csv.close();
  appliance->stop();
  serving.join();
  appliance.reset();
  const netsim::LinkStats there = (*emu)->stats(netsim::Direction::XtoY);
  const netsim::LinkStats back = (*emu)->stats(netsim::Direction::YtoX);
  finish();
  if (!run) return run.error();

  std::printf("%s%s", perftest_rule().c_str(), perftest_bw_columns(o.gbits, false).c_str());
  for (const auto& f : run->bw) std::printf("%s", perftest_bw_row(f, o.gbits).c_str());
  std::printf("%s", perftest_rule().c_str());
  std::printf(" data check (READ back from the appliance): %s\n", run->verified ? "remote memory as written" : "MISMATCH");
  std::printf(" transport: %llu retransmitted packets, %llu NAKs, %llu timeouts, %llu CNPs received by the sender\n",
              static_cast<unsigned long long>(run->counters.retransmits), static_cast<unsigned long long>(run->counters.naks),
              static_cast<unsigned long long>(run->counters.timeouts), static_cast<unsigned long long>(run->counters.cnps_received));
  std::printf(" link: %llu frames to the appliance (%llu lost, %llu CE-marked, %llu tail-dropped), %llu back (%llu lost)\n",
              static_cast<unsigned long long>(there.get(netsim::LinkCounter::Forwarded)),
              static_cast<unsigned long long>(there.get(netsim::LinkCounter::Lost)),
              static_cast<unsigned long long>(there.get(netsim::LinkCounter::Marked)),
              static_cast<unsigned long long>(there.get(netsim::LinkCounter::TailDropped)),
              static_cast<unsigned long long>(back.get(netsim::LinkCounter::Forwarded)),
              static_cast<unsigned long long>(back.get(netsim::LinkCounter::Lost)));

  // The first frames, as a pcap anyone can open in Wireshark or roce-inspect.
  const std::string pcap = o.out_dir + "/first_packets.pcap";
  {
    capture::CaptureWriter w;
    if (!w.open(pcap, capture::LinkType::Ethernet, 65535, capture::TimestampPrecision::Nano))
      return make_error(EIO, w.error());
    std::lock_guard lock(tap.mutex);
    for (const auto& [t, bytes] : tap.frames)
      w.write_ns(t / kSecond, static_cast<std::uint32_t>(t % kSecond), bytes);
    if (!w.close()) return make_error(EIO, w.error());
  }
  std::printf(" files: %s (first %zu frames), %s/dcqcn_rates.csv\n", pcap.c_str(), tap.frames.size(), o.out_dir.c_str());
  DemoResult r;
  r.exit_code = run->counters.errors || !run->verified ? 1 : 0;
  return r;
}

}  // namespace roce::client
