// A simulated network for transport tests: engines joined by point-to-point links that can
// lose, reorder, duplicate, corrupt and delay frames and limit bandwidth, all from one seed,
// driven by a discrete-event loop on virtual time.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "lib/rdma/engine.hpp"
#include "tests/support/capture_file.hpp"
#include "tests/support/sim_host.hpp"

namespace roce::test {

struct LinkFaults {
  double loss = 0;       // probability a frame vanishes
  double duplicate = 0;  // probability a frame is delivered twice
  double reorder = 0;    // probability a frame is held back by reorder_delay
  double corrupt = 0;    // probability one byte of the frame is flipped (the ICRC must catch it)
  double ce_mark = 0;    // probability an ECN-capable IP frame is marked CE, as a switch would
  Nanos delay = 2 * kMicro;
  Nanos reorder_delay = 10 * kMicro;
  double bandwidth_bps = 0;  // 0 = unlimited
  // Optional hook deciding a frame's fate (for targeted drops); return true to drop it.
  std::function<bool(std::span<const std::byte>, std::uint64_t index)> drop_if;
};

// A host as a poll-mode loop on a core of its own, on virtual time (SimNetwork::set_poller): each
// iteration takes up to `burst` received frames, runs the timers and one transmit call, costs
// `iteration` + `per_rx` and `per_tx` per frame, and its frames leave when it ends. Frames that
// arrive meanwhile wait for the next iteration. What a window does to a pipeline of two busy
// cores (docs/loss.md, part 1, "Session 14"), without a loaded host's noise.
struct PollCost {
  Nanos iteration = 0;
  Nanos per_rx = 0;
  Nanos per_tx = 0;
  std::size_t burst = 32;
};

struct PollStats {
  std::uint64_t iterations = 0;  // with work
  Nanos busy = 0;                // virtual time spent in them
  std::uint64_t rx = 0, tx = 0;
  std::size_t max_tx = 0;        // most frames one iteration sent
};

struct LinkStats {
  std::uint64_t sent = 0, delivered = 0, lost = 0, duplicated = 0, reordered = 0, corrupted = 0, ce_marked = 0;
};

class SimNetwork {
 public:
  // With ROCE_TEST_PCAP_DIR set, every network writes its traffic to
  // <dir>/<test suite>.<test name>-<seed>.pcap, for Wireshark.
  explicit SimNetwork(std::uint64_t seed);

  // Adds a host with its own engine; `mrs` may be shared between hosts or not.
  rdma::Engine& add_host(const std::string& name, proto::MacAddr mac, proto::Ipv4Addr ip, rdma::EngineConfig cfg = {});
  // The same with an address of either family (an IPv6 host sends IPv6 frames).
  rdma::Engine& add_host(const std::string& name, proto::MacAddr mac, const rdma::IpAddress& ip, rdma::EngineConfig cfg = {});
  rdma::Engine& host(const std::string& name) { return hosts_.at(index_.at(name)).sim.engine(); }
  rdma::MrTable& memory(const std::string& name) { return hosts_.at(index_.at(name)).sim.memory(); }
  void connect(const std::string& a, const std::string& b, const LinkFaults& a_to_b, const LinkFaults& b_to_a);

  Nanos now() const { return now_; }
  // Runs until `done` holds or virtual time passes `limit`; returns whether `done` held.
  bool run_until(const std::function<bool()>& done, Nanos limit);
  // Runs until nothing is left to do (no frames, no work, no timers) or `limit`.
  void run_idle(Nanos limit);
  void step();

  // The host runs as a poll-mode loop with these costs (from now on).
  void set_poller(const std::string& name, const PollCost& cost) { hosts_.at(index_.at(name)).poll = cost; }
  const PollStats& poll_stats(const std::string& name) const { return hosts_.at(index_.at(name)).polled; }
  const LinkStats& stats(const std::string& from) const { return hosts_.at(index_.at(from)).link_stats; }
  // The faults of `from`'s outgoing link, for a path that changes mid-test.
  LinkFaults& faults(const std::string& from) { return hosts_.at(index_.at(from)).faults; }
  void capture_to(const std::string& path) { pcap_ = open_sim_capture(path); }
  // Observes every frame put on a link (before faults): for tests that count packets.
  std::function<void(const std::string& from, std::span<const std::byte>, Nanos)> on_transmit;
  // Observes every frame handed to a host's engine (after faults), just before it takes it.
  std::function<void(const std::string& to, std::span<const std::byte>, Nanos)> on_deliver;

 private:
  struct InFlight {
    Nanos at;
    std::uint64_t seq;
    std::size_t to;
    std::vector<std::byte> frame;
    bool operator>(const InFlight& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  struct Host {
    SimHost sim;
    std::optional<std::size_t> peer;
    LinkFaults faults;
    LinkStats link_stats;
    std::uint64_t frames_out = 0;
    std::optional<PollCost> poll;             // set_poller: a poll-mode loop
    std::deque<std::vector<std::byte>> rx;    // arrived, waiting for its next iteration
    std::vector<std::vector<std::byte>> out;  // built by the running iteration, leaving when it ends
    Nanos busy_until = 0;
    PollStats polled;
    bool has_work(Nanos now) const;
  };
  void poll(Host& h);
  void transmit_all();
  void emit(Host& from, std::span<const std::byte> frame);
  Nanos next_event() const;

  std::mt19937_64 rng_;
  std::vector<Host> hosts_;
  std::map<std::string, std::size_t> index_;
  AddressBook addresses_;
  std::vector<InFlight> queue_;  // min-heap on (at, seq)
  std::uint64_t seq_ = 0;
  Nanos now_ = 0;
  std::unique_ptr<capture::CaptureWriter> pcap_;
};

}  // namespace roce::test
