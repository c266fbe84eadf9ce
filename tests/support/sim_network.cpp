#include "tests/support/sim_network.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "tests/support/ip_frame.hpp"

namespace roce::test {

using namespace roce::proto;

namespace {
constexpr Nanos kTxRingNs = 2 * kMicro;  // what a small NIC TX ring holds at the link rate
}  // namespace

SimNetwork::SimNetwork(std::uint64_t seed) : rng_(seed) {
  const char* dir = std::getenv("ROCE_TEST_PCAP_DIR");
  if (dir == nullptr || *dir == '\0') return;
  std::string name = "network";
  if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info())
    name = std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : name)
    if (c == '/') c = '_';
  capture_to(std::string(dir) + "/" + name + "-" + std::to_string(seed) + ".pcap");
}

rdma::Engine& SimNetwork::add_host(const std::string& name, MacAddr mac, Ipv4Addr ip, rdma::EngineConfig cfg) {
  return add_host(name, mac, rdma::IpAddress::ipv4(ip), std::move(cfg));
}

rdma::Engine& SimNetwork::add_host(const std::string& name, MacAddr mac, const rdma::IpAddress& ip, rdma::EngineConfig cfg) {
  cfg.path.local.mac = mac;
  cfg.path.local.ip = ip;
  if (!cfg.path.resolve_mac) cfg.path.resolve_mac = addresses_.resolver();
  addresses_.add(cfg.path.local.ip, mac);
  index_[name] = hosts_.size();
  hosts_.push_back(Host{SimHost(name, std::move(cfg)), std::nullopt, {}, {}, 0, std::nullopt, {}, {}, 0, {}});
  return hosts_.back().sim.engine();
}

void SimNetwork::connect(const std::string& a, const std::string& b, const LinkFaults& a_to_b, const LinkFaults& b_to_a) {
  Host& ha = hosts_.at(index_.at(a));
  Host& hb = hosts_.at(index_.at(b));
  ha.peer = index_.at(b);
  ha.faults = a_to_b;
  ha.sim.link() = SerialLink(a_to_b.bandwidth_bps);
  hb.peer = index_.at(a);
  hb.faults = b_to_a;
  hb.sim.link() = SerialLink(b_to_a.bandwidth_bps);
}

void SimNetwork::emit(Host& from, std::span<const std::byte> frame) {
  if (on_transmit) on_transmit(from.sim.name(), frame, now_);
  LinkStats& st = from.link_stats;
  ++st.sent;
  const std::uint64_t index = from.frames_out++;
  if (!from.peer) return;
  const LinkFaults& f = from.faults;
  std::uniform_real_distribution<double> u(0, 1);
  // Serialisation on the link happens whatever the fate of the frame.
  const Nanos depart = from.sim.link().send(now_, frame.size());
  if ((f.drop_if && f.drop_if(frame, index)) || (f.loss > 0 && u(rng_) < f.loss)) {
    ++st.lost;
    return;
  }
  std::vector<std::byte> copy(frame.begin(), frame.end());
  if (f.corrupt > 0 && u(rng_) < f.corrupt) {
    // Flip a byte past the Ethernet header: in the packet, never in the masked fields only.
    std::uniform_int_distribution<std::size_t> pos(14 + 20 + 8 + 12, copy.size() - 1);
    copy[pos(rng_)] ^= std::byte{0x5A};
    ++st.corrupted;
  }
  if (f.ce_mark > 0 && u(rng_) < f.ce_mark && mark_ce(copy)) ++st.ce_marked;
  Nanos at = depart + f.delay;
  if (f.reorder > 0 && u(rng_) < f.reorder) {
    at += f.reorder_delay;
    ++st.reordered;
  }
  const bool dup = f.duplicate > 0 && u(rng_) < f.duplicate;
  if (dup) {
    ++st.duplicated;
    queue_.push_back(InFlight{at + 1, seq_++, *from.peer, copy});
    std::push_heap(queue_.begin(), queue_.end(), std::greater<>{});
  }
  queue_.push_back(InFlight{at, seq_++, *from.peer, std::move(copy)});
  std::push_heap(queue_.begin(), queue_.end(), std::greater<>{});
}

void SimNetwork::transmit_all() {
  for (Host& h : hosts_)
    if (!h.poll) h.sim.transmit(now_, kTxRingNs, [&](std::span<const std::byte> f) {
      if (pcap_) write_sim_frame(*pcap_, f, now_);
      emit(h, f);
    });
}

bool SimNetwork::Host::has_work(Nanos now) const {
  return !rx.empty() || sim.engine().has_tx_work() || sim.engine().next_deadline() <= now;
}

Nanos SimNetwork::next_event() const {
  Nanos t = queue_.empty() ? kNever : queue_.front().at;
  for (const Host& h : hosts_) {
    if (!h.poll) {
      t = std::min({t, h.sim.engine().next_deadline(), h.sim.next_transmit(now_, kTxRingNs)});
    } else if (!h.out.empty() || !h.rx.empty() || h.sim.engine().has_tx_work()) {
      t = std::min(t, std::max(h.busy_until, now_));  // the iteration's end, or the next one
    } else {
      t = std::min(t, std::max(h.busy_until, h.sim.engine().next_deadline()));
    }
  }
  return t;
}

// The end of an iteration (its frames leave), and the next one if there is work.
void SimNetwork::poll(Host& h) {
  if (h.busy_until > now_) return;
  for (const auto& f : h.out) {
    if (pcap_) write_sim_frame(*pcap_, f, now_);
    emit(h, f);
  }
  h.out.clear();
  if (!h.has_work(now_)) return;
  const PollCost& c = *h.poll;
  std::size_t got = 0;
  for (; got < c.burst && !h.rx.empty(); ++got) {
    if (on_deliver) on_deliver(h.sim.name(), h.rx.front(), now_);
    h.sim.engine().receive(h.rx.front(), now_);
    h.rx.pop_front();
  }
  h.sim.engine().advance(now_);
  const std::size_t sent = h.sim.transmit_once(now_, [&](std::span<const std::byte> f) { h.out.emplace_back(f.begin(), f.end()); });
  const Nanos cost = c.iteration + static_cast<Nanos>(got) * c.per_rx + static_cast<Nanos>(sent) * c.per_tx;
  h.busy_until = now_ + std::max<Nanos>(cost, 1);
  ++h.polled.iterations;
  h.polled.busy += cost;
  h.polled.rx += got;
  h.polled.tx += sent;
  h.polled.max_tx = std::max(h.polled.max_tx, sent);
}

void SimNetwork::step() {
  transmit_all();
  const Nanos t = next_event();
  if (t == kNever) return;
  now_ = std::max(now_, t);
  while (!queue_.empty() && queue_.front().at <= now_) {
    std::pop_heap(queue_.begin(), queue_.end(), std::greater<>{});
    InFlight f = std::move(queue_.back());
    queue_.pop_back();
    Host& to = hosts_[f.to];
    ++hosts_[to.peer.value_or(f.to)].link_stats.delivered;
    if (to.poll) {
      to.rx.push_back(std::move(f.frame));
      continue;
    }
    if (on_deliver) on_deliver(to.sim.name(), f.frame, now_);
    to.sim.engine().receive(f.frame, now_);
  }
  for (Host& h : hosts_) {
    if (h.poll) {
      poll(h);
    } else {
      h.sim.engine().advance(now_);
    }
  }
}

bool SimNetwork::run_until(const std::function<bool()>& done, Nanos limit) {
  while (!done()) {
    if (now_ > limit) return false;
    const bool busy = std::any_of(hosts_.begin(), hosts_.end(), [](const Host& h) { return h.sim.engine().has_tx_work(); });
    if (!busy && next_event() == kNever) return done();
    step();
  }
  return true;
}

void SimNetwork::run_idle(Nanos limit) {
  run_until([] { return false; }, limit);
}

}  // namespace roce::test
