#include "tests/support/sim_network.hpp"

#include "protocol/checksum.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

namespace roce::test {

using namespace roce::proto;

namespace {
constexpr std::size_t kBurst = 32;

// Sets CE on an ECN-capable IPv4 frame and fixes the header checksum (the ICRC masks TOS).
bool mark_ce(std::vector<std::byte>& f) {
  constexpr std::size_t l3 = sizeof(EthernetHeader);
  if (f.size() < l3 + sizeof(Ipv4Header) || std::to_integer<unsigned>(f[12]) != 0x08 || std::to_integer<unsigned>(f[13]) != 0x00)
    return false;
  const auto tos = std::to_integer<std::uint8_t>(f[l3 + 1]);
  if ((tos & 3) == 0 || (tos & 3) == 3) return false;
  f[l3 + 1] = std::byte{static_cast<std::uint8_t>(tos | 3)};
  f[l3 + 10] = f[l3 + 11] = std::byte{0};
  const std::uint16_t sum = internet_checksum(std::span{f}.subspan(l3, sizeof(Ipv4Header)));
  f[l3 + 10] = std::byte{static_cast<std::uint8_t>(sum >> 8)};
  f[l3 + 11] = std::byte{static_cast<std::uint8_t>(sum & 0xFF)};
  return true;
}
constexpr std::uint32_t kFrameBytes = 4096 + 256;
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

Engine& SimNetwork::add_host(const std::string& name, MacAddr mac, Ipv4Addr ip, EngineConfig cfg) {
  Host h;
  h.name = name;
  h.mrs = std::make_unique<MrTable>();
  cfg.path.local.mac = mac;
  cfg.path.local.ip = IpAddress::ipv4(ip);
  if (!cfg.path.resolve_mac)
    cfg.path.resolve_mac = [this](const IpAddress& a) -> std::optional<MacAddr> {
      const auto it = macs_by_ip_.find(to_string(a));
      if (it == macs_by_ip_.end()) return std::nullopt;
      return it->second;
    };
  macs_by_ip_[ipv4_to_string(ip)] = mac;
  h.engine = std::make_unique<Engine>(std::move(cfg), *h.mrs);
  h.buffers.assign(kBurst, std::vector<std::byte>(kFrameBytes));
  index_[name] = hosts_.size();
  hosts_.push_back(std::move(h));
  return *hosts_.back().engine;
}

void SimNetwork::connect(const std::string& a, const std::string& b, const LinkFaults& a_to_b, const LinkFaults& b_to_a) {
  Host& ha = hosts_.at(index_.at(a));
  Host& hb = hosts_.at(index_.at(b));
  ha.peer = index_.at(b);
  ha.faults = a_to_b;
  hb.peer = index_.at(a);
  hb.faults = b_to_a;
}

void SimNetwork::emit(Host& from, std::span<const std::byte> frame) {
  if (on_transmit) on_transmit(from.name, frame, now_);
  LinkStats& st = from.link_stats;
  ++st.sent;
  const std::uint64_t index = from.frames_out++;
  if (!from.peer) return;
  const LinkFaults& f = from.faults;
  std::uniform_real_distribution<double> u(0, 1);
  // Serialisation on the link happens whatever the fate of the frame.
  Nanos depart = std::max(now_, from.link_free_at);
  if (f.bandwidth_bps > 0) {
    depart += static_cast<Nanos>(static_cast<double>(frame.size()) * 8e9 / f.bandwidth_bps);
    from.link_free_at = depart;
  }
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
  for (Host& h : hosts_) {
    // Like a NIC with a short TX ring: the engine is asked for frames only while the link is
    // free, so what it queues later (a retransmission, an ACK) is not stuck behind a backlog.
    while (h.link_free_at <= now_ + kTxRingNs) {
      std::vector<TxFrame> frames(kBurst);
      for (std::size_t i = 0; i < kBurst; ++i) frames[i] = TxFrame{h.buffers[i].data(), kFrameBytes, 0};
      const std::size_t n = h.engine->transmit(frames, now_);
      for (std::size_t i = 0; i < n; ++i) {
        const std::span<const std::byte> f{frames[i].data, frames[i].length};
        if (pcap_) pcap_->write(f, now_);
        emit(h, f);
      }
      if (n < kBurst) break;
    }
  }
}

Nanos SimNetwork::next_event() const {
  Nanos t = queue_.empty() ? kNever : queue_.front().at;
  for (const Host& h : hosts_) {
    t = std::min(t, h.engine->next_deadline());
    if (h.engine->has_tx_work()) t = std::min(t, std::max(h.link_free_at - kTxRingNs, now_));
  }
  return t;
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
    to.engine->receive(f.frame, now_);
  }
  for (Host& h : hosts_) h.engine->advance(now_);
}

bool SimNetwork::run_until(const std::function<bool()>& done, Nanos limit) {
  while (!done()) {
    if (now_ > limit) return false;
    const bool busy = std::any_of(hosts_.begin(), hosts_.end(), [](const Host& h) { return h.engine->has_tx_work(); });
    if (!busy && next_event() == kNever) return done();
    step();
  }
  return true;
}

void SimNetwork::run_idle(Nanos limit) {
  run_until([] { return false; }, limit);
}

}  // namespace roce::test
