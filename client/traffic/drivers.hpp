// The verbs work of a test, run on the worker lcore that owns the QP, once per poll-loop
// iteration: post work requests up to the queue depth, reap completions, take timestamps.
// No allocation after construction.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "client/connector.hpp"
#include "client/traffic/spec.hpp"

namespace roce::client {

struct LocalBuffer {
  std::byte* ptr = nullptr;
  std::uint64_t length = 0;
  std::uint32_t lkey = 0;
};

inline constexpr std::uint32_t kPerftestQkey = 0x11111111;

// Where operations go: the peer's buffer for RDMA and atomics; for SENDs on a UD QP also the
// address handle, QP number and Q_Key of the peer (perftest's 0x11111111; rdma_cm's
// RDMA_UDP_QKEY 0x01234567 for QPs resolved through it, perftest -R).
struct RemoteBuffer {
  std::uint64_t addr = 0;
  std::uint32_t rkey = 0;
  rdma::AddressHandle* ah = nullptr;
  std::uint32_t ud_qpn = 0;
  std::uint32_t ud_qkey = kPerftestQkey;
};

// A UD receive starts with the 40-byte GRH (IPv4: its last 20 bytes are the IPv4 header).
inline constexpr std::uint32_t kUdGrhBytes = 40;

// Outcome shared by the drivers: what finished, and the first error if any.
struct DriverStatus {
  bool done = false;
  std::uint64_t completed = 0;
  std::uint64_t errors = 0;
  ibv_wc_status first_error = IBV_WC_SUCCESS;
};

// Bandwidth client, perftest's run_iter_bw: keeps tx_depth operations in flight, posting
// post_list at a time and asking for a completion every cq_mod (and for the last), until
// `iters` completed or the duration ran out. It records the time of the first post and last
// completion, with spec.record_peak every operation's post and completion time (for perftest's
// peak, client/traffic/perftest_math.hpp), and under -D the operations completed inside
// the measured window (the run less spec.margin at each end).
// Posts up to `count` receives of `landing` on the QP; returns how many went up.
std::uint32_t post_receives(rdma::Engine& e, const LocalQp& qp, LocalBuffer landing, std::uint32_t count);

class BwClient {
 public:
  BwClient(const LocalQp& qp, const TrafficSpec& spec, LocalBuffer local, RemoteBuffer remote);
  void poll(rdma::Engine& e, Nanos now);
  // Ends a -D run early (--run_infinitely's stop): what is in flight completes, nothing more is posted.
  void stop() { stopping_ = true; }
  // SEND -b: the peer sends `count` messages too (0: until the -D deadline), into `landing`, on
  // this QP's receive queue with up to `depth` receives posted; the run is done once they came.
  // `already_posted`: receives post_receives put up before the run (perftest posts them before
  // the sync that starts the traffic: a UC peer that sends at once finds them).
  void expect_sends(LocalBuffer landing, std::uint32_t depth, std::uint64_t count, std::uint32_t already_posted = 0) {
    recv_landing_ = landing;
    recv_depth_ = depth;
    recv_expected_ = count;
    recv_posted_ = already_posted;
  }
  // SEND -b (--use-srq): the QP takes its receives from a shared receive queue someone else keeps
  // stocked (SrqFeeder); the run is done once `count` messages came on this QP (0: until -D ends).
  void expect_sends_on_srq(std::uint64_t count) {
    recv_depth_ = 0;
    recv_expected_ = count;
    recv_posted_ = 0;
    srq_fed_ = true;
  }
  std::uint64_t received() const { return received_; }
  const DriverStatus& status() const { return st_; }
  Nanos first_post() const { return first_post_; }
  Nanos last_completion() const { return last_completion_; }
  std::span<const Nanos> posted_times() const { return {posted_at_.data(), stamped_posts_}; }
  std::span<const Nanos> completed_times() const { return {completed_at_.data(), stamped_completions_}; }
  // -D: the measured window and the operations completed in it (0 until it has closed).
  Nanos window_start() const { return window_start_; }
  Nanos window_end() const { return window_end_; }
  std::uint64_t window_ops() const { return window_end_ > 0 ? window_end_ops_ - window_start_ops_ : 0; }

 private:
  std::uint32_t may_post(Nanos now);
  LocalQp qp_;
  TrafficSpec spec_;
  LocalBuffer local_;
  RemoteBuffer remote_;
  std::uint64_t posted_ = 0;
  Nanos first_post_ = -1;
  Nanos last_completion_ = 0;
  Nanos deadline_ = kNever;
  bool stopping_ = false;
  double tokens_ = 0;  // rate limit, bytes
  Nanos tokens_at_ = 0;
  std::vector<ibv_send_wr> wrs_;  // one post list
  std::vector<ibv_sge> sges_;
  std::vector<Nanos> posted_at_, completed_at_;
  std::size_t stamped_posts_ = 0, stamped_completions_ = 0;
  Nanos window_start_ = 0, window_end_ = 0;
  std::uint64_t window_start_ops_ = 0, window_end_ops_ = 0;
  LocalBuffer recv_landing_;
  std::uint32_t recv_depth_ = 0;  // 0: no receives (every test but SEND -b)
  std::uint64_t recv_expected_ = 0, recv_posted_ = 0, received_ = 0;
  bool srq_fed_ = false;
  DriverStatus st_;
};

// Latency client of READ, atomics and SEND: one operation at a time. READ/atomic: time to the
// completion. SEND: until the peer's SEND comes back (perftest's run_iter_lat_send: the client
// sends first, the server answers each message). WRITE is WriteLatency.
class LatClient {
 public:
  LatClient(const LocalQp& qp, const TrafficSpec& spec, LocalBuffer local, RemoteBuffer remote);
  void poll(rdma::Engine& e, Nanos now);
  // SEND (--use-srq): the answers land in receives of a shared receive queue someone else keeps
  // stocked (SrqFeeder), not in one this client posts before each SEND.
  void receives_from_srq() { srq_fed_ = true; }
  const DriverStatus& status() const { return st_; }
  const std::vector<Nanos>& samples() const { return samples_; }
  // SEND measures a round trip; perftest reports half of it.
  bool round_trip() const { return spec_.verb == Verb::Send; }

 private:
  void start_one(rdma::Engine& e, Nanos now);
  LocalQp qp_;
  TrafficSpec spec_;
  LocalBuffer local_;
  RemoteBuffer remote_;
  bool in_flight_ = false;
  bool send_done_ = false, recv_done_ = false;
  bool srq_fed_ = false;
  Nanos started_ = 0;      // of the operation in flight
  Nanos run_started_ = -1;  // of the first operation: -D counts from here
  std::vector<Nanos> samples_;
  DriverStatus st_;
};

// perftest's ib_write_lat on either side (run_iter_lat_write): the server writes first; each side
// then waits until the peer's WRITE carrying the count it expects lands (the last byte of `size`
// bytes at the address it gave the peer) and writes its own next count from `send`. The count goes
// as its low byte and wraps through 0, as perftest's char does. `iters` 0: no end (a server that
// does not know the client's count answers until it is removed); `duration` > 0: a client stops
// writing after it. A sample is the time from a WRITE to the peer's next one: a round trip.
class WriteLatency {
 public:
  // `inline_size`: WRITEs up to that many bytes go inline (perftest's -I).
  WriteLatency(const LocalQp& qp, std::uint32_t size, std::uint64_t iters, bool writes_first, LocalBuffer send,
               const std::byte* landing, RemoteBuffer remote, Nanos duration = 0, std::uint32_t inline_size = 0);
  void poll(rdma::Engine& e, Nanos now);
  const DriverStatus& status() const { return st_; }  // completed: WRITEs done
  const std::vector<Nanos>& samples() const { return samples_; }
  std::uint64_t received() const { return received_; }

 private:
  LocalQp qp_;
  std::uint32_t size_;
  std::uint64_t iters_;
  unsigned send_flags_;
  LocalBuffer send_;
  const volatile std::byte* poll_byte_;
  RemoteBuffer remote_;
  Nanos duration_;
  bool posting_next_;  // the next step writes (else it waits for the peer's)
  std::uint64_t posted_ = 0, received_ = 0;
  Nanos last_post_ = -1, run_started_ = -1;
  std::vector<Nanos> samples_;
  DriverStatus st_;
};

// Server side of SEND tests: keeps receives posted (all into one region: a sink) and, in echo
// mode, sends every message back (ibv_rc_pingpong's server, ib_send_lat's server). On a UD QP
// each receive starts with the GRH, which is neither counted nor echoed; answers go to the peer
// set with set_ud_peer. `depth` 0: the QP takes its receives from a shared receive queue that
// someone else keeps stocked (SrqFeeder); this one only reaps and echoes.
class ReceiveServer {
 public:
  ReceiveServer(const LocalQp& qp, LocalBuffer region, std::uint32_t depth, bool echo, bool ud = false);
  void poll(rdma::Engine& e, Nanos now);
  // UD: where answers go, once the address handle exists (call on the QP's worker).
  void set_ud_peer(RemoteBuffer peer) { ud_peer_ = peer; }
  std::uint64_t received() const { return received_; }
  std::uint64_t bytes() const { return bytes_; }
  // When the first and the last message arrived (perftest's SEND server reports that span).
  Nanos first_received() const { return first_received_; }
  Nanos last_received() const { return last_received_; }
  const DriverStatus& status() const { return st_; }

 private:
  void post_receives(rdma::Engine& e);
  LocalQp qp_;
  LocalBuffer region_;
  std::uint32_t depth_;
  bool echo_;
  bool ud_;
  RemoteBuffer ud_peer_;
  std::uint32_t posted_ = 0;
  std::uint64_t received_ = 0;
  std::uint64_t bytes_ = 0;
  Nanos first_received_ = 0, last_received_ = 0;
  DriverStatus st_;
};

}  // namespace roce::client
