// The device runtime of one process (library mode): the EAL, one dataplane on the configured
// port and the thread that drives it. Started by the first ibv_open_device and kept until the
// process exits (DPDK's EAL cannot be initialised twice in a process).
//
// Who steps the engine: the dataplane thread, except while a program thread polls a CQ. A
// poll that finds the CQ empty runs one dataplane iteration itself (under the engine lock), so
// a program that busy-polls its CQ drives the engine from its own thread, as roce-gen's traffic
// drivers do from the worker lcore, and the dataplane thread sleeps meanwhile instead of
// spinning beside it. When the program lets go (a linger for the peer's answer ended without
// one, or it armed a CQ to block for its event) or has not stepped for a while, the dataplane
// thread takes over; idle, it sleeps on the port's packet socket (docs/verbs.md, "Who steps
// the engine").
#pragma once

#include <atomic>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "dataplane/dataplane.hpp"
#include "verbs/config.hpp"
#include "verbs/engine_lock.hpp"
#include "verbs/port_wait.hpp"

namespace roce::verbs {

// A CQ armed by ibv_req_notify_cq: checked after every dataplane iteration under the lock.
class CompletionWatch {
 public:
  virtual ~CompletionWatch() = default;
  // Signals the completion channel if the CQ has an entry; true when it did (the watch ends).
  virtual bool check() = 0;
};

struct LinkState {
  bool up = false;
  std::uint32_t speed_mbps = 0;
};

class Runtime {
 public:
  // Brings the device up on first use (EAL, port, dataplane thread); later calls return the
  // running one. Errors carry a message for the program's stderr.
  static Result<Runtime*> start(const DeviceConfig& c);
  // The running runtime, or nullptr.
  static Runtime* running();

  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const DeviceConfig& config() const { return cfg_; }
  EngineLock& lock() { return lock_; }
  // Engine and memory table: only with the lock held.
  rdma::Engine& engine() { return dp_->worker(0).engine(); }
  rdma::MrTable& memory() { return dp_->memory(); }
  const rdma::LocalAddress& local() const { return dp_->local(); }
  const dp::PortInfo& port() const { return dp_->port(); }
  std::uint32_t active_mtu() const { return active_mtu_; }  // bytes
  Nanos now() const { return dp_->now(); }
  int ifindex() const { return ifindex_; }                   // of the kernel interface, 0 if none
  LinkState link() const;

  // One dataplane iteration by a program thread; the lock is held. Returns frames received.
  // `may_hold`: when nothing was owed to the peer before the step, what the step's frames owe
  // (the ACK of the peer's WRITE or SEND) is held back instead of sent, for the program's
  // answer to take along: the caller then either hands the program a completion (which it is
  // about to act on: its next post sends both in one burst) or calls send_held().
  unsigned step_from_app(bool may_hold = false);
  bool holds_tx() const { return tx_held_; }
  // Sends what a step held back (lock held).
  void send_held() {
    if (tx_held_) step_from_app();
  }
  // After a post: sends it at once (one iteration) unless a program thread drives the engine
  // anyway, so that a program that posts and then blocks (ibv_get_cq_event) does not wait for
  // the dataplane thread's wake-up; the lock is held.
  void doorbell_from_app();
  // A program thread's poll stepped the engine (`received` frames) and found completions, the
  // last of them `last`. A WRITE or SEND completed by that step's ACK alone, with its QP's send
  // queue now empty, means the program is likely to wait for its peer next, perhaps without
  // calling verbs at all (ib_write_lat spins on its buffer): the poll then lingers
  // (`linger_us`) for the peer's next frame and, if none came, lets go of the engine
  // (release_from_app). After a READ or atomic, a receive, or with the peer's answer in the
  // same burst, the program acts on what it got instead. The lock is held.
  void completions_from_step(const ibv_wc& last, unsigned received);
  // A program thread armed a CQ and is about to block for its event: the dataplane thread
  // steps from now on, without waiting out the handoff.
  void program_waits() {
    send_held();
    release_from_app();
  }
  // When a step last received a frame or had something to send (on any thread): roce-verbsd's
  // loop naps only once its rings and the port have both been quiet for a while.
  Nanos last_traffic() const { return last_traffic_.load(std::memory_order_relaxed); }
  // Arms a watch (lock held); it is checked after every iteration until it fires.
  void watch(CompletionWatch* w);
  void unwatch(CompletionWatch* w);

  // The MAC of a peer on the link: ARP, waiting up to `wait` (lock not held).
  std::optional<proto::MacAddr> resolve(const rdma::IpAddress& ip, Nanos wait);

  // Stops the dataplane thread (process exit); verbs fail afterwards.
  void shutdown();
  bool stopped() const { return stop_.load(std::memory_order_acquire); }

 private:
  explicit Runtime(DeviceConfig c) : cfg_(std::move(c)) {}
  void thread_main(std::promise<Status>* ready);
  Status bring_up();
  void loop();
  void sleep_while_program_steps(Nanos check);  // until `check` after the program's last step, or let go
  void release_from_app();
  bool linger_from_app();  // true when a frame came
  unsigned step_locked(Nanos now, bool& tx_work);  // one iteration; the lock is held
  void after_step();

  DeviceConfig cfg_;
  EngineLock lock_;
  std::unique_ptr<dp::Dataplane> dp_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::uint32_t active_mtu_ = 1024;
  int ifindex_ = 0;
  PortWait port_wait_;  // the port's packet sockets, when it has them (net_af_packet)
  // Set by program threads that step: the dataplane thread leaves the engine to them meanwhile.
  alignas(64) std::atomic<Nanos> last_app_step_{0};
  // The longest time between two of those steps since the dataplane thread last looked (loop()).
  std::atomic<Nanos> longest_step_gap_{0};
  // Set by a program thread that is likely to stop stepping (completions_to_app, program_waits);
  // cleared by its next step. The dataplane thread, asleep on wake_fd_ (sleeping_), is woken.
  std::atomic<bool> app_released_{false};
  std::atomic<Nanos> last_traffic_{0};
  alignas(64) std::atomic<bool> sleeping_{false};
  int wake_fd_ = -1;
  std::vector<CompletionWatch*> watches_;  // under the lock
  // A program thread's step held back what the engine owes (step_from_app's may_hold); under
  // the lock. The next post, a poll that finds nothing, arming a CQ, or the dataplane thread
  // taking over sends it.
  bool tx_held_ = false;
};

}  // namespace roce::verbs
