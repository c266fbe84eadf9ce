#include "apps/replay/dpdk_run.hpp"

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <unistd.h>

#include <filesystem>

#include "apps/replay/setup.hpp"
#include "apps/replay/timeline.hpp"
#include "dataplane/dataplane.hpp"
#include "dataplane/eal.hpp"

namespace roce::replay {

namespace {

constexpr const char* kPortName = "net_pcap0";
// Polls a delivered frame may take to come off the PMD before the run gives up on it.
constexpr int kRxAttempts = 1000;

struct RxRewrite {
  const KeyMap* keys = nullptr;
  std::uint64_t mapped = 0;
  std::uint64_t unmapped = 0;
};

// Runs inside rte_eth_rx_burst on the polling thread: the capture's keys become ours before
// the worker sees the frame, as the plain engine path does before receive().
std::uint16_t rewrite_keys(std::uint16_t, std::uint16_t, rte_mbuf** pkts, std::uint16_t n, std::uint16_t, void* arg) {
  auto* rw = static_cast<RxRewrite*>(arg);
  for (std::uint16_t i = 0; i < n; ++i) {
    if (pkts[i]->nb_segs != 1) continue;  // the worker counts and drops these
    const proto::MutableByteSpan frame{rte_pktmbuf_mtod(pkts[i], std::byte*), pkts[i]->data_len};
    const Rewrite r = rw->keys->rewrite(frame);
    rw->mapped += r == Rewrite::Mapped;
    rw->unmapped += r == Rewrite::Unmapped;
  }
  return n;
}

// The timeline's host (timeline.hpp) on the dataplane: each step is one iteration of the
// worker's own poll loop, handed the capture's time instead of the TSC's. The worker takes no
// frame from the PMD except when one is delivered.
struct WorkerSteps {
  dp::Worker& w;
  ReplaySetup& setup;
  std::uint64_t frames_in = 0;

  Nanos next_deadline() const { return w.engine().next_deadline(); }
  Status apply(const Action& a) { return setup.apply(a); }
  Status step(Nanos now) {
    w.set_rx_burst(0);
    w.poll(now);
    return {};
  }
  Status deliver(std::size_t k, Nanos now) {
    w.set_rx_burst(1);
    const std::uint64_t before = w.stats().rx_packets;
    for (int i = 0; i < kRxAttempts && w.stats().rx_packets == before; ++i) w.poll(now);
    w.set_rx_burst(0);
    if (w.stats().rx_packets == before)
      return make_error(EIO, "net_pcap delivered " + std::to_string(k) + " frames of the capture, then none");
    ++frames_in;
    return {};
  }
};

class DpdkRun {
 public:
  DpdkRun(const Scenario& s, const std::vector<Frame>& input, const DpdkRunOptions& o) : s_(s), input_(input), o_(o) {}

  Result<RunResult> run() {
    if (o_.input.find(',') != std::string::npos || o_.output.find(',') != std::string::npos)
      return make_error(EINVAL, "--dpdk: the capture paths may not contain ',' (the net_pcap device arguments split on it)");
    const bool own_prefix = o_.eal_args.size() <= 1;
    if (Status st = dp::Eal::init(dpdk_eal_args(o_)); !st) return st.error();
    const std::string runtime_dir = rte_eal_get_runtime_dir();
    Result<RunResult> r = run_dataplane();
    dp::Eal::cleanup();
    // With the default arguments the runtime directory is this run's own; leave nothing behind.
    std::error_code ec;
    if (own_prefix) std::filesystem::remove_all(runtime_dir, ec);
    if (!r) return r;
    auto sent = read_frames(o_.output);
    if (!sent) return make_error(EIO, "reading what net_pcap wrote: " + sent.error().message);
    r->sent = std::move(*sent);
    r->start = r->sent.empty() ? 0 : r->sent.front().ts;
    return r;
  }

 private:
  Result<RunResult> run_dataplane() {
    dp::DataplaneOptions o;
    o.name = "replay";
    o.port.name = kPortName;
    o.ip = s_.local.ip;
    o.mac = s_.local.mac;
    o.workers = 1;
    o.mbufs = 2047;
    o.engine = engine_config(s_);
    auto made = dp::Dataplane::create(o);
    if (!made) return made.error();
    std::unique_ptr<dp::Dataplane> d = std::move(*made);
    dp::Worker& w = d->worker(0);
    w.set_rx_burst(0);  // nothing comes off the PMD until the timeline releases it
    Result<RunResult> r = drive(*d, w);
    return r;
  }

  Result<RunResult> drive(dp::Dataplane& d, dp::Worker& w) {
    auto setup = ReplaySetup::create(w.engine(), s_);
    if (!setup) return setup.error();
    RxRewrite rw{&(*setup)->keys()};
    const rte_eth_rxtx_callback* cb = rte_eth_add_rx_callback(d.port().id, 0, rewrite_keys, &rw);
    if (cb == nullptr) return make_error(EINVAL, "cannot add an RX callback to " + std::string(kPortName));
    WorkerSteps host{w, **setup};
    const Status st = run_timeline(input_, start_time(s_.start, input_), (*setup)->actions(), s_.tail, host);
    rte_eth_remove_rx_callback(d.port().id, 0, cb);
    if (!st) return st.error();
    RunResult r;
    r.frames_in = host.frames_in;
    (*setup)->poll_completions();
    r.counters = snapshot(w.engine(), (*setup)->completions());
    r.keys_mapped = rw.mapped;
    r.keys_unmapped = rw.unmapped;
    d.flush();
    w.release_stash();
    // The setup deregisters its regions from the dataplane's table before the dataplane goes.
    setup->reset();
    return r;
  }

  const Scenario& s_;
  const std::vector<Frame>& input_;
  const DpdkRunOptions& o_;
};

}  // namespace

std::vector<std::string> dpdk_eal_args(const DpdkRunOptions& o) {
  std::vector<std::string> args = o.eal_args;
  if (args.size() <= 1) {
    if (args.empty()) args.push_back("roce-replay");
    for (const char* a : {"--no-huge", "--no-pci", "--no-shconf", "-m", "256", "--log-level=error", "--no-telemetry"})
      args.emplace_back(a);
    args.push_back("--file-prefix=roce_replay_" + std::to_string(getpid()));
  }
  args.push_back(std::string("--vdev=") + kPortName + ",rx_pcap=" + o.input + ",tx_pcap=" + o.output);
  return args;
}

Result<RunResult> run_on_dpdk(const Scenario& s, const std::vector<Frame>& input, const DpdkRunOptions& o) {
  return DpdkRun(s, input, o).run();
}

}  // namespace roce::replay
