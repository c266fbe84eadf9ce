#include "tests/support/sim_fabric.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "lib/cc/pacer.hpp"
#include "tests/support/ip_frame.hpp"

namespace roce::test {

using namespace roce::proto;

namespace {
constexpr Nanos kTxRingNs = 2 * kMicro;  // what a small NIC TX ring holds at the link rate
constexpr std::uint64_t kMaxStepsPerInstant = 1'000'000;
}  // namespace

SimFabric::SimFabric(std::uint64_t seed) : seed_(seed) {
  const char* dir = std::getenv("ROCE_TEST_PCAP_DIR");
  if (dir == nullptr || *dir == '\0') return;
  std::string name = "fabric";
  if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info())
    name = std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : name)
    if (c == '/') c = '_';
  capture_to(std::string(dir) + "/" + name + "-fabric-" + std::to_string(seed) + ".pcap");
}

SimFabric::~SimFabric() = default;

std::size_t SimFabric::add_host(const std::string& name, MacAddr mac, Ipv4Addr ip, rdma::EngineConfig cfg, FabricLink link,
                                cc::CpParams egress) {
  cfg.path.local.mac = mac;
  cfg.path.local.ip = rdma::IpAddress::ipv4(ip);
  if (!cfg.path.resolve_mac) cfg.path.resolve_mac = addresses_.resolver();
  addresses_.add(cfg.path.local.ip, mac);
  egress.line_rate_bps = link.bandwidth_bps;
  egress.seed = seed_ * 1'000'003 + hosts_.size();
  if (const auto bad = cc::check(egress)) throw std::invalid_argument("switch port " + name + ": " + *bad);
  const rdma::IpAddress address = cfg.path.local.ip;
  hosts_.push_back(std::make_unique<Port>(name, std::move(cfg), address, link, egress));
  hosts_.back()->sim.link() = SerialLink(link.bandwidth_bps);
  hosts_.back()->window.since = now_;
  hosts_.back()->queue_since = now_;
  return hosts_.size() - 1;
}

std::size_t SimFabric::index(const std::string& name) const {
  for (std::size_t i = 0; i < hosts_.size(); ++i)
    if (hosts_[i]->sim.name() == name) return i;
  throw std::out_of_range("no host " + name);
}

void SimFabric::capture_to(const std::string& path, std::uint32_t snap_bytes) {
  pcap_ = open_sim_capture(path, snap_bytes);
}

void SimFabric::start_window() {
  for (auto& p : hosts_) {
    track_queue(*p);
    p->window = PortWindow{};
    p->window.since = now_;
    p->window.queue_max_bytes = p->queue_bytes;
  }
}

void SimFabric::track_queue(Port& p) {
  const Nanos from = std::max(p.queue_since, p.window.since);
  if (now_ > from) p.window.queue_byte_ns += static_cast<double>(p.queue_bytes) * static_cast<double>(now_ - from);
  p.queue_since = now_;
  p.queue_bytes = p.egress.occupancy_bytes();
  p.window.queue_max_bytes = std::max(p.window.queue_max_bytes, p.queue_bytes);
}

SimFabric::FrameId SimFabric::store(std::span<const std::byte> frame) {
  if (free_.empty()) {
    free_.push_back(static_cast<FrameId>(frames_.size()));
    frames_.push_back(Frame{std::vector<std::byte>(SimHost::kFrameBytes), 0});
  }
  const FrameId id = free_.back();
  free_.pop_back();
  Frame& f = frames_[id];
  if (f.bytes.size() < frame.size()) f.bytes.resize(frame.size());
  std::copy(frame.begin(), frame.end(), f.bytes.begin());
  f.length = static_cast<std::uint32_t>(frame.size());
  return id;
}

void SimFabric::push(Nanos at, FrameId frame, std::size_t host, bool to_host) {
  events_.push_back(Event{at, seq_++, frame, static_cast<std::uint32_t>(host), to_host});
  std::push_heap(events_.begin(), events_.end(), std::greater<>{});
}

void SimFabric::transmit_all() {
  for (std::size_t i = 0; i < hosts_.size(); ++i) {
    Port& p = *hosts_[i];
    p.sim.transmit(now_, kTxRingNs, [&](std::span<const std::byte> f) {
      if (pcap_) write_sim_frame(*pcap_, f, now_);
      const Nanos sent = p.sim.link().send(now_, cc::link_bytes(static_cast<std::uint32_t>(f.size())));
      push(sent + p.link.delay, store(f), i, false);
    });
  }
}

void SimFabric::at_switch(const Event& e) {
  Frame& f = frames_[e.frame];
  const auto dst = ip_destination(f.view());
  Port* out = nullptr;
  if (dst)
    for (auto& p : hosts_)
      if (p->ip == *dst) out = p.get();
  if (out == nullptr) {
    ++unroutable_;
    release(e.frame);
    return;
  }
  const auto r = out->egress.enqueue(now_, e.frame, cc::link_bytes(f.length), ip_ecn(f.view()));
  if (r != cc::EnqueueResult::Queued) {
    ++out->window.dropped;
    release(e.frame);
    return;
  }
  track_queue(*out);
}

void SimFabric::dequeue(std::size_t port) {
  Port& p = *hosts_[port];
  while (p.egress.next_dequeue_time() <= now_) {
    const auto d = p.egress.dequeue(now_);
    if (!d) break;
    track_queue(p);
    ++p.window.departed_packets;
    p.window.departed_bytes += d->wire_bytes;
    if (d->marked) {
      mark_ce(frames_[d->packet].view());
      ++p.window.marked;
    }
    push(d->end + p.link.delay, d->packet, port, true);
  }
}

void SimFabric::handle(const Event& e) {
  if (!e.to_host) {
    at_switch(e);
    return;
  }
  Frame& f = frames_[e.frame];
  if (on_deliver) on_deliver(e.host, f.view(), now_);
  hosts_[e.host]->sim.engine().receive(f.view(), now_);
  release(e.frame);
}

Nanos SimFabric::next_event() const {
  Nanos t = events_.empty() ? kNever : events_.front().at;
  for (const auto& p : hosts_)
    t = std::min({t, p->egress.next_dequeue_time(), p->sim.engine().next_deadline(),
                  p->sim.next_transmit(now_, kTxRingNs)});
  return t;
}

void SimFabric::step() {
  transmit_all();
  const Nanos t = next_event();
  if (t == kNever) return;
  // An engine that keeps claiming work at this instant without producing any would spin here.
  steps_at_now_ = t <= now_ ? steps_at_now_ + 1 : 0;
  if (steps_at_now_ > kMaxStepsPerInstant)
    throw std::runtime_error("SimFabric: no progress at t = " + std::to_string(now_) + " ns");
  now_ = std::max(now_, t);
  // Packets before timers of the same instant (the reaction point's ordering rule).
  while (!events_.empty() && events_.front().at <= now_) {
    std::pop_heap(events_.begin(), events_.end(), std::greater<>{});
    const Event e = events_.back();
    events_.pop_back();
    handle(e);
  }
  for (std::size_t i = 0; i < hosts_.size(); ++i) dequeue(i);
  for (auto& p : hosts_) p->sim.engine().advance(now_);
}

void SimFabric::run_to(Nanos t) {
  for (;;) {
    transmit_all();
    if (next_event() > t) break;
    step();
  }
  now_ = std::max(now_, t);
}

bool SimFabric::run_until(const std::function<bool()>& done, Nanos limit) {
  while (!done()) {
    if (now_ > limit) return false;
    if (next_event() == kNever) return done();
    step();
  }
  return true;
}

}  // namespace roce::test
