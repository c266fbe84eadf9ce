// A simulated switched network for transport and congestion-control tests: hosts (engines) each
// joined to one output-queued switch by a full-duplex link (bandwidth, propagation delay). The
// switch forwards by destination IP address into the egress queue of the port toward that host:
// a lib/cc congestion point with RED marking on dequeue (CE set in the frame, IPv4 checksum
// rewritten), a byte capacity with tail drop, and serialisation at the port's line rate. A
// discrete-event loop on virtual time drives it, as SimNetwork does. Hosts hand frames to their
// link only while it can take them (a short NIC TX ring), so congestion queues in the switch.
//
// Every link and port counts link bytes (cc::link_bytes: frame + FCS + preamble + gap), the
// same bytes the DCQCN pacer charges, so a sender at Rc = C exactly fills its link.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/cc/congestion_point.hpp"
#include "lib/rdma/engine.hpp"
#include "tests/support/capture_file.hpp"
#include "tests/support/sim_host.hpp"

namespace roce::test {

struct FabricLink {
  double bandwidth_bps = 10e9;  // each direction; also the line rate of the switch port
  Nanos delay = 1 * kMicro;     // propagation, each direction
};

// What one switch egress port did since the last SimFabric::start_window().
struct PortWindow {
  Nanos since = 0;
  double queue_byte_ns = 0;  // integral of the queue occupancy over time
  std::uint64_t queue_max_bytes = 0;
  std::uint64_t departed_bytes = 0;  // link bytes that started serialising on the port
  std::uint64_t departed_packets = 0;
  std::uint64_t marked = 0;
  std::uint64_t dropped = 0;
  double mean_queue_bytes(Nanos now) const {
    return now > since ? queue_byte_ns / static_cast<double>(now - since) : 0;
  }
};

class SimFabric {
 public:
  using FrameId = std::uint32_t;
  using EgressQueue = cc::CongestionPoint<FrameId>;

  // Each port's marking generator is seeded from `seed` and the port number. With
  // ROCE_TEST_PCAP_DIR set, the first 128 bytes of every frame a host sends go to
  // <dir>/<test suite>.<test name>-fabric-<seed>.pcap.
  explicit SimFabric(std::uint64_t seed);
  ~SimFabric();
  SimFabric(const SimFabric&) = delete;
  SimFabric& operator=(const SimFabric&) = delete;

  // Adds a host on a switch port of its own; `egress` is the queue of that port toward the host
  // (its line_rate_bps and seed are set here). Returns the host's index (= its port).
  std::size_t add_host(const std::string& name, proto::MacAddr mac, proto::Ipv4Addr ip, rdma::EngineConfig cfg = {},
                       FabricLink link = {}, cc::CpParams egress = {});
  std::size_t index(const std::string& name) const;
  std::size_t size() const { return hosts_.size(); }
  rdma::Engine& host(std::size_t i) { return hosts_.at(i)->sim.engine(); }
  rdma::Engine& host(const std::string& name) { return host(index(name)); }
  rdma::MrTable& memory(std::size_t i) { return hosts_.at(i)->sim.memory(); }

  // The switch egress port toward host i.
  const EgressQueue& egress(std::size_t i) const { return hosts_.at(i)->egress; }
  const PortWindow& window(std::size_t i) const { return hosts_.at(i)->window; }
  // Restarts every port's window at now().
  void start_window();
  // Frames the switch could not route (not IP, or no host has the destination address).
  std::uint64_t unroutable() const { return unroutable_; }
  // The bandwidth the host's link and port were added with.
  double bandwidth_bps(std::size_t i) const { return hosts_.at(i)->link.bandwidth_bps; }

  Nanos now() const { return now_; }
  // Handles everything due up to and including `t`, then sets the clock to `t`.
  void run_to(Nanos t);
  // Runs until `done` holds or virtual time passes `limit`; returns whether `done` held.
  bool run_until(const std::function<bool()>& done, Nanos limit);
  // One event time: transmit, then deliver what arrives, dequeue the ports, run the timers.
  void step();

  void capture_to(const std::string& path, std::uint32_t snap_bytes = 128);
  // Sees every frame as it reaches a host (after any marking), before the engine does.
  std::function<void(std::size_t host, std::span<const std::byte>, Nanos)> on_deliver;

 private:
  // A host, its link and the switch port toward it.
  struct Port {
    Port(std::string name, rdma::EngineConfig cfg, const rdma::IpAddress& ip, FabricLink link, const cc::CpParams& egress)
        : sim(std::move(name), std::move(cfg)), ip(ip), link(link), egress(egress) {}
    SimHost sim;
    rdma::IpAddress ip;
    FabricLink link;
    EgressQueue egress;
    PortWindow window;
    Nanos queue_since = 0;  // when queue_bytes was last sampled into the window
    std::uint64_t queue_bytes = 0;
  };
  struct Event {
    Nanos at;
    std::uint64_t seq;
    FrameId frame;
    std::uint32_t host;  // the sender for arrivals at the switch, the receiver otherwise
    bool to_host;
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  struct Frame {
    std::vector<std::byte> bytes;
    std::uint32_t length = 0;
    std::span<std::byte> view() { return {bytes.data(), length}; }
  };

  Nanos next_event() const;
  void transmit_all();
  void handle(const Event& e);
  void at_switch(const Event& e);
  void dequeue(std::size_t port);
  void track_queue(Port& p);
  FrameId store(std::span<const std::byte> frame);
  void release(FrameId id) { free_.push_back(id); }
  void push(Nanos at, FrameId frame, std::size_t host, bool to_host);

  std::uint64_t seed_;
  std::vector<std::unique_ptr<Port>> hosts_;
  AddressBook addresses_;
  std::vector<Frame> frames_;
  std::vector<FrameId> free_;
  std::vector<Event> events_;  // min-heap on (at, seq)
  std::uint64_t seq_ = 0;
  std::uint64_t unroutable_ = 0;
  Nanos now_ = 0;
  std::uint64_t steps_at_now_ = 0;
  std::unique_ptr<capture::CaptureWriter> pcap_;
};

}  // namespace roce::test
