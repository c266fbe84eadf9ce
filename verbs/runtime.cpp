#include "verbs/runtime.hpp"

#include <net/if.h>
#include <pthread.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>

#include "dataplane/eal.hpp"
#include "protocol/mtu.hpp"
#include "verbs/export.hpp"
#include "verbs/port_quiet.hpp"

namespace roce::verbs {
namespace {

std::mutex g_start_mutex;
Runtime* g_runtime = nullptr;

// A program thread that stepped within this long, and did not let go, is driving the engine;
// the dataplane thread sleeps meanwhile. When the handoff has passed but a program thread holds
// the lock, the dataplane thread naps kBusyNapFirst, doubling over consecutive failures up to
// kBusyNapMost: the first retry stays quick (a program's last verb before it spins on memory),
// while a holder that lost its CPU no longer costs a wake-up every 10 us.
constexpr Nanos kHandoff = 1000 * kMicro;
// While a program thread keeps driving without a pause, the dataplane thread's check that it
// still does (a wake-up every kHandoff) doubles its interval up to kDrivenCheckMost: on a 2-CPU
// guest each wake-up is a context switch on a CPU the program or its peer spins on
// (docs/verbs.md, "Who steps the engine"). Only while no two of the program's steps since the
// last check were more than kSteadyGap apart: a program that pauses (descheduled on a loaded
// machine, or busy elsewhere) has the check back at kHandoff, so that the dataplane thread takes
// over within that as before. Letting go still wakes the thread at once.
constexpr Nanos kDrivenCheckMost = 8 * kMilli;
constexpr Nanos kSteadyGap = 200 * kMicro;
constexpr Nanos kBusyNapFirst = 10 * kMicro;
constexpr Nanos kBusyNapMost = 160 * kMicro;
// Adaptive polling: idle this long (nothing received, nothing to send) before napping.
constexpr Nanos kIdleBeforeNap = kMilli;
// The longest the exiting dataplane thread keeps sending what is queued (see thread_main).
constexpr Nanos kExitDrain = 100 * kMilli;

void nap(Nanos ns) {
  timespec ts{0, static_cast<long>(ns)};
  ::clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, nullptr);
}

// The kernel interface behind a net_af_packet vdev ("iface=NAME"): its index names the GID's
// netdev, and its MTU is the link's (the PMD reports 1500 whatever the interface has).
std::string kernel_interface(const DeviceConfig& c) {
  for (const auto& v : c.vdevs) {
    if (v.rfind("net_af_packet", 0) != 0) continue;
    const auto at = v.find("iface=");
    if (at == std::string::npos) continue;
    return v.substr(at + 6, v.find(',', at) - (at + 6));
  }
  return {};
}

std::optional<std::uint32_t> kernel_mtu(const std::string& ifname) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  ifreq r{};
  std::snprintf(r.ifr_name, sizeof r.ifr_name, "%s", ifname.c_str());
  const int rc = ::ioctl(fd, SIOCGIFMTU, &r);
  ::close(fd);
  if (rc != 0) return std::nullopt;
  return static_cast<std::uint32_t>(r.ifr_mtu);
}

// Stops the dataplane thread when the process exits, whether or not the program closed its
// device: the EAL is released and nothing of it stays behind.
struct ExitHook {
  ~ExitHook() {
    std::lock_guard g(g_start_mutex);
    if (g_runtime) g_runtime->shutdown();
  }
} g_exit_hook;

}  // namespace

Runtime* Runtime::running() {
  std::lock_guard g(g_start_mutex);
  return g_runtime && !g_runtime->stopped() ? g_runtime : nullptr;
}

Result<Runtime*> Runtime::start(const DeviceConfig& c) {
  std::lock_guard g(g_start_mutex);
  if (g_runtime) {
    if (g_runtime->stopped()) return make_error(ESHUTDOWN, "the device was shut down (process exiting)");
    return g_runtime;
  }
  if (dp::Eal::initialised())
    return make_error(EBUSY, "this process already runs a DPDK EAL; a second one cannot be started for the device");
  std::unique_ptr<Runtime> rt(new Runtime(c));
  std::promise<Status> ready;
  auto fut = ready.get_future();
  rt->thread_ = std::thread([r = rt.get(), p = &ready] { r->thread_main(p); });
  Status s = fut.get();
  if (!s) {
    rt->thread_.join();
    return s.error();
  }
  g_runtime = rt.release();  // lives until the process exits (ExitHook stops it)
  return g_runtime;
}

Runtime::~Runtime() { shutdown(); }

void Runtime::shutdown() {
  stop_.store(true, std::memory_order_release);
  if (thread_.joinable()) thread_.join();
}

Status Runtime::bring_up() {
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  const auto args = eal_arguments(cfg_, ::getpid(), cpus > 0 ? static_cast<unsigned>(cpus) : 1);
  if (Status s = dp::Eal::init(args); !s) return s;
  // Without shared config the EAL keeps no files, but it still makes its runtime folder: remove it now, so
  // that a program killed with SIGKILL leaves nothing under /var/run/dpdk.
  if (const char* dir = rte_eal_get_runtime_dir(); dir && *dir) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  const std::string port = port_name(cfg_);
  std::uint16_t id = 0;
  if (rte_eth_dev_get_port_by_name(port.c_str(), &id) != 0)
    return make_error(ENODEV, "no DPDK port named '" + port + "'; ports: " + dp::describe_ports());
  std::uint16_t port_mtu = 1500;
  rte_eth_dev_get_mtu(id, &port_mtu);
  std::uint32_t eth_mtu = port_mtu;
  if (const std::string iface = kernel_interface(cfg_); !iface.empty()) {
    ifindex_ = static_cast<int>(::if_nametoindex(iface.c_str()));
    eth_mtu = kernel_mtu(iface).value_or(eth_mtu);
  }
  active_mtu_ = std::min(cfg_.max_mtu, proto::mtu_bytes(proto::mtu_for_ethernet(eth_mtu)));

  dp::DataplaneOptions o;
  o.name = "roce_verbs";
  o.port.name = port;
  o.ip = *cfg_.ip;
  o.workers = 1;
  o.mode = dp::Mode::RunToCompletion;
  o.mbufs = cfg_.mbufs;
  o.engine.max_qps = cfg_.max_qps;
  o.engine.max_rd_atomic = cfg_.max_rd_atomic;
  o.engine.ud_mtu = active_mtu_;
  // QPNs from a base drawn per process, as hardware and rxe do not hand the same QPN out again
  // at once: a program run again would otherwise offer its last run's QPNs, and a peer that
  // still holds that connection in TIMEWAIT refuses the REQ or REP (REJ "stale connection").
  o.engine.qpns.base = 0x11 + std::random_device{}() % 0x7FFF00;
  o.max_mrs = cfg_.max_mrs;
  auto dp = dp::Dataplane::create(o);
  if (!dp) return dp.error();
  dp_ = std::move(*dp);
  // Loopback: QPs of this device talking to each other resolve our own address.
  if (cfg_.ip->version == proto::IpVersion::V4) dp_->arp().learn(cfg_.ip->v4, dp_->local().mac);
  else dp_->neighbors().learn(cfg_.ip->v6, dp_->local().mac);
  // resolve() waits for this thread to answer instead of stepping the dataplane itself.
  dp_->set_driven_by_other_thread(true);
  port_wait_ = PortWait::for_interface(ifindex_);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return make_error(errno, "eventfd for the dataplane thread");
  return {};
}

void Runtime::thread_main(std::promise<Status>* ready) {
  ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);  // naps of microseconds, not the default 50 us slack
  Status s = bring_up();
  if (!s) {
    dp_.reset();
    dp::Eal::cleanup();
    ready->set_value(s);
    return;
  }
  // Named once the port is up: tests take the name to mean that the device takes frames.
  ::pthread_setname_np(::pthread_self(), "roce-verbs-dp");
  ready->set_value({});
  loop();
  // The process is exiting. The dataplane and the EAL stay as they are: the program's own
  // exit-time code may still call verbs on them (they answer, nothing moves any more), and the
  // kernel closes the port's socket and frees the memory; no file of the EAL exists to remove.
  EngineGuard g(lock_);
  // What the program's last calls queued still goes out: a DREQ from rdma_destroy_id, a DREP.
  // Without it the peer waits out its CM timers for a process that is gone (perftest -R's client
  // sat in rdma_get_cm_event for a minute). Bounded, so a QP with endless work cannot hold the exit.
  for (const Nanos until = dp_->now() + kExitDrain; dp_->worker(0).engine().has_tx_work() && dp_->now() < until;)
    dp_->worker(0).poll(dp_->now());
  dp_->flush();
  // ROCE_VERBS_REPORT=FILE: the dataplane's counters (JSON) when the device goes down.
  if (const char* path = std::getenv("ROCE_VERBS_REPORT"); path && *path) {
    const std::string json = dp_->report_json();
    if (FILE* f = std::strcmp(path, "-") == 0 ? stderr : std::fopen(path, "w")) {
      std::fprintf(f, "%s\n", json.c_str());
      if (f != stderr) std::fclose(f);
    }
  }
}

void Runtime::loop() {
  Nanos last_busy = dp_->now();
  Nanos busy_nap = kBusyNapFirst;
  Nanos check = kHandoff;  // how long sleep_while_program_steps sleeps past the program's last step
  bool was_driven = false;
  while (!stop_.load(std::memory_order_relaxed)) {
    Nanos now = dp_->now();
    if (!app_released_.load(std::memory_order_acquire) &&
        now - last_app_step_.load(std::memory_order_relaxed) < kHandoff) {
      // Woken by the timer with the program still driving: look again less often, if it never
      // paused meanwhile.
      if (was_driven)
        check = longest_step_gap_.exchange(0, std::memory_order_relaxed) < kSteadyGap ? std::min(2 * check, kDrivenCheckMost)
                                                                                       : kHandoff;
      sleep_while_program_steps(check);
      was_driven = true;
      continue;
    }
    was_driven = false;
    check = kHandoff;
    longest_step_gap_.store(0, std::memory_order_relaxed);
    // Never queue for the lock behind a program thread: a ticket taken here and then preempted
    // (more runnable threads than CPUs) would stall the program's verbs until this thread ran.
    if (!lock_.try_lock()) {
      // Not a whole handoff: a program thread in its last verb before it spins on memory
      // (ib_write_lat) would leave the peer's frame that late (tried: 1-2.5 ms round trips live).
      nap(busy_nap);
      busy_nap = std::min(2 * busy_nap, kBusyNapMost);
      continue;
    }
    busy_nap = kBusyNapFirst;
    now = dp_->now();
    bool tx_work;
    const unsigned received = step_locked(now, tx_work);
    lock_.unlock();
    if (cfg_.poll != PollMode::Adaptive) continue;
    if (received || tx_work) {
      last_busy = now;
    } else if (port_wait_.can_wait()) {
      // Nothing to do: sleep until a frame comes (the timers get their turn after the nap).
      port_wait_.wait(static_cast<Nanos>(cfg_.idle_nap_us) * kMicro);
    } else if (now - last_busy > kIdleBeforeNap) {
      nap(static_cast<Nanos>(cfg_.idle_nap_us) * kMicro);
    }
  }
}

// A program thread drives the engine: this thread sleeps until the program lets go (release())
// or has not stepped for kHandoff. Every wake-up of this thread costs the CPU the program spins
// on a context switch, so it does not watch the port meanwhile: a frame the program leaves
// there after letting go is what it waits for next (in loop()).
void Runtime::sleep_while_program_steps(Nanos check) {
  sleeping_.store(true, std::memory_order_seq_cst);
  bool woken = true;
  if (!app_released_.load(std::memory_order_seq_cst)) {
    const Nanos left = last_app_step_.load(std::memory_order_relaxed) + check - dp_->now();
    pollfd p{wake_fd_, POLLIN, 0};
    const Nanos wait = std::clamp<Nanos>(left, kMicro, check);
    const timespec ts{static_cast<time_t>(wait / kSecond), static_cast<long>(wait % kSecond)};
    woken = ::ppoll(&p, 1, &ts, nullptr) > 0;
  }
  sleeping_.store(false, std::memory_order_relaxed);
  // Only a wake-up has anything to read: a timeout needs no system call more.
  std::uint64_t v;
  while (woken && ::read(wake_fd_, &v, sizeof v) == sizeof v) {
  }
}

void Runtime::release_from_app() {
  if (app_released_.exchange(true, std::memory_order_seq_cst)) return;
  if (sleeping_.load(std::memory_order_seq_cst)) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(wake_fd_, &one, sizeof one);
  }
}

unsigned Runtime::step_locked(Nanos now, bool& tx_work) {
  dp::Worker& w = dp_->worker(0);
  const bool had_tx_work = w.engine().has_tx_work();
  const unsigned received = w.poll(now);
  tx_held_ = false;
  after_step();
  tx_work = w.engine().has_tx_work();
  if (received || had_tx_work) last_traffic_.store(now, std::memory_order_relaxed);
  return received;
}

// Holding back the ACK: on net_af_packet every burst sent is a sendto(), which on a veth runs
// the peer's receive path in the call (about 1.5 us here). A ping-pong program (ib_write_lat,
// ib_send_lat) answers the frame that completed its wait at once; sending the ACK of that frame
// in a burst of its own, and the answer in the next, cost every round trip one more sendto
// than roce-gen, whose driver posts between the receive and the transmit half of one iteration.
unsigned Runtime::step_from_app(bool may_hold) {
  const Nanos now = dp_->now();
  const Nanos gap = now - last_app_step_.load(std::memory_order_relaxed);
  last_app_step_.store(now, std::memory_order_relaxed);
  if (gap > longest_step_gap_.load(std::memory_order_relaxed)) longest_step_gap_.store(gap, std::memory_order_relaxed);
  if (app_released_.load(std::memory_order_relaxed)) app_released_.store(false, std::memory_order_relaxed);
  dp::Worker& w = dp_->worker(0);
  const bool had_tx_work = w.engine().has_tx_work();
  const bool hold = may_hold && !had_tx_work;
  const unsigned received = w.poll(now, !hold);
  after_step();
  tx_held_ = hold && w.engine().has_tx_work();
  if (received || had_tx_work) last_traffic_.store(now, std::memory_order_relaxed);
  return received;
}

void Runtime::doorbell_from_app() {
  if (tx_held_ || app_released_.load(std::memory_order_relaxed) ||
      dp_->now() - last_app_step_.load(std::memory_order_relaxed) >= kHandoff)
    step_from_app();
}

// Busy-polling before going quiet, as a socket's SO_BUSY_POLL does: the peer's answer often
// follows the acknowledgement that completed the program's send by a few microseconds, and a
// frame taken here costs nothing, while one left for the dataplane thread costs a wake-up and a
// context switch on the CPU the program spins on (ib_write_lat: several times roce-gen's
// latency without it). Only where the program is likely to wait for its peer next (see
// completions_from_step): after a READ's completion, say, it goes on at once, and a poll that
// lingered would cost every ib_read_lat round trip the whole linger.
void Runtime::completions_from_step(const ibv_wc& last, unsigned received) {
  if (last.opcode != IBV_WC_RDMA_WRITE && last.opcode != IBV_WC_SEND) return;
  if (received > 1) return;  // the peer's answer may have come with the ACK
  const rdma::QueuePair* qp = engine().find_qp(last.qp_num);
  if (qp != nullptr && !qp->context().sq.empty()) return;
  if (linger_from_app()) return;
  send_held();
  release_from_app();
}

// The frame that ends the linger is the peer's answer: its ACK is held for the program's next
// post (see step_from_app).
bool Runtime::linger_from_app() {
  if (cfg_.linger_us == 0 || tx_held_ || engine().has_tx_work()) return false;
  const Nanos until = dp_->now() + static_cast<Nanos>(cfg_.linger_us) * kMicro;
  for (Nanos now = dp_->now(); now < until; now = dp_->now()) {
    if (step_from_app(true)) return true;
    if (tx_held_ && step_from_app()) return true;  // a timer's work, not an answer: sent now
  }
  return false;
}

void Runtime::after_step() {
  if (watches_.empty()) return;
  std::erase_if(watches_, [](CompletionWatch* w) { return w->check(); });
}

void Runtime::watch(CompletionWatch* w) {
  if (std::find(watches_.begin(), watches_.end(), w) == watches_.end()) watches_.push_back(w);
}

void Runtime::unwatch(CompletionWatch* w) { std::erase(watches_, w); }

std::optional<proto::MacAddr> Runtime::resolve(const rdma::IpAddress& ip, Nanos wait) { return dp_->resolve(ip, wait); }

LinkState Runtime::link() const {
  rte_eth_link l{};
  LinkState s;
  if (rte_eth_link_get_nowait(dp_->port().id, &l) == 0) {
    s.up = l.link_status == RTE_ETH_LINK_UP;
    s.speed_mbps = l.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 : l.link_speed;
  }
  return s;
}

}  // namespace roce::verbs

ROCE_VERBS_EXPORT std::int64_t roce_verbs_port_quiet_ns() {
  const roce::verbs::Runtime* rt = roce::verbs::Runtime::running();
  return rt ? rt->now() - rt->last_traffic() : -1;
}
