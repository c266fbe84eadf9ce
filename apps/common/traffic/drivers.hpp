// The verbs work of a test, run on the worker lcore that owns the QP, once per poll-loop
// iteration: post work requests up to the queue depth, reap completions, take timestamps.
// No allocation after construction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/common/connector.hpp"
#include "apps/common/traffic/spec.hpp"

namespace roce::app {

struct LocalBuffer {
  std::byte* ptr = nullptr;
  std::uint64_t length = 0;
  std::uint32_t lkey = 0;
};

struct RemoteBuffer {
  std::uint64_t addr = 0;
  std::uint32_t rkey = 0;
};

// Outcome shared by the drivers: what finished, and the first error if any.
struct DriverStatus {
  bool done = false;
  std::uint64_t completed = 0;
  std::uint64_t errors = 0;
  ibv_wc_status first_error = IBV_WC_SUCCESS;
};

// Bandwidth client: keeps tx_depth operations in flight until `iters` completed (or until the
// duration ran out), records the time of the first post and last completion, and the peak:
// the best rate over the whole 1 ms intervals of the run (the average when it ran shorter).
class BwClient {
 public:
  BwClient(const LocalQp& qp, const TrafficSpec& spec, LocalBuffer local, RemoteBuffer remote);
  void poll(Engine& e, Nanos now);
  const DriverStatus& status() const { return st_; }
  Nanos first_post() const { return first_post_; }
  Nanos last_completion() const { return last_completion_; }
  double peak_bytes_per_s() const { return peak_; }

 private:
  bool may_post(Nanos now);
  LocalQp qp_;
  TrafficSpec spec_;
  LocalBuffer local_;
  RemoteBuffer remote_;
  std::uint64_t posted_ = 0;
  Nanos first_post_ = -1;
  Nanos last_completion_ = 0;
  Nanos deadline_ = kNever;
  double tokens_ = 0;  // rate limit, bytes
  Nanos tokens_at_ = 0;
  Nanos bucket_start_ = 0;
  std::uint64_t bucket_ops_ = 0;
  double peak_ = 0;
  DriverStatus st_;
};

// Latency client: one operation at a time. READ/atomic: time to the completion. SEND: until the
// echoed SEND arrives. WRITE: until the peer's WRITE of the same sequence lands in the second
// half of our 2 x size buffer (see WriteEcho).
class LatClient {
 public:
  LatClient(const LocalQp& qp, const TrafficSpec& spec, LocalBuffer local, RemoteBuffer remote);
  void poll(Engine& e, Nanos now);
  const DriverStatus& status() const { return st_; }
  const std::vector<Nanos>& samples() const { return samples_; }
  // SEND and WRITE measure a round trip; perftest reports half of it.
  bool round_trip() const { return spec_.verb == Verb::Send || spec_.verb == Verb::Write; }

 private:
  void start_one(Engine& e, Nanos now);
  LocalQp qp_;
  TrafficSpec spec_;
  LocalBuffer local_;
  RemoteBuffer remote_;
  bool in_flight_ = false;
  bool send_done_ = false, recv_done_ = false;
  Nanos started_ = 0;
  std::uint8_t seq_ = 0;
  std::vector<Nanos> samples_;
  DriverStatus st_;
};

// Server side of SEND tests: keeps receives posted (all into one region: a sink) and, in echo
// mode, sends every message back (ibv_rc_pingpong's server, ib_send_lat's server).
class ReceiveServer {
 public:
  ReceiveServer(const LocalQp& qp, LocalBuffer region, std::uint32_t depth, bool echo);
  void poll(Engine& e, Nanos now);
  std::uint64_t received() const { return received_; }
  std::uint64_t bytes() const { return bytes_; }
  const DriverStatus& status() const { return st_; }

 private:
  void post_receives(Engine& e);
  LocalQp qp_;
  LocalBuffer region_;
  std::uint32_t depth_;
  bool echo_;
  std::uint32_t posted_ = 0;
  std::uint64_t received_ = 0;
  std::uint64_t bytes_ = 0;
  DriverStatus st_;
};

// Server side of the WRITE latency test. Both sides keep 2 x size bytes: they send from the
// first half and the peer writes into the second (the address each advertises). The echo
// watches the last byte of its second half and, when the client's sequence number lands,
// writes its first half back carrying the same number.
class WriteEcho {
 public:
  WriteEcho(const LocalQp& qp, std::uint32_t size, LocalBuffer local, RemoteBuffer remote);
  void poll(Engine& e, Nanos now);
  std::uint64_t echoed() const { return echoed_; }

 private:
  LocalQp qp_;
  std::uint32_t size_;
  LocalBuffer local_;
  RemoteBuffer remote_;
  std::uint8_t expect_ = 1;
  std::uint64_t echoed_ = 0;
};

}  // namespace roce::app
