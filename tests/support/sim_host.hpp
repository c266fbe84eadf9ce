// What the simulated networks share: a host (an engine with its own memory region table and the
// transmit side of its NIC), the serialising link its NIC drives, and MAC lookup by IP address.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/rdma/engine.hpp"

namespace roce::test {

// A transmitter: frames serialise one after another at the bandwidth (0: infinitely fast).
// Time is kept in picoseconds so back-to-back frames do not drift by rounding.
class SerialLink {
 public:
  explicit SerialLink(double bandwidth_bps = 0) : ps_per_byte_(bandwidth_bps > 0 ? 8e12 / bandwidth_bps : 0) {}
  // The first bit goes at max(now, free_at()); returns when the last bit has left (ns, rounded up).
  Nanos send(Nanos now, std::uint64_t bytes) {
    busy_until_ps_ = std::max(busy_until_ps_, now * 1000) + std::llround(static_cast<double>(bytes) * ps_per_byte_);
    return free_at();
  }
  Nanos free_at() const { return (busy_until_ps_ + 999) / 1000; }

 private:
  double ps_per_byte_;
  std::int64_t busy_until_ps_ = 0;
};

class AddressBook {
 public:
  void add(const rdma::IpAddress& ip, proto::MacAddr mac) { by_ip_[to_string(ip)] = mac; }
  // Looks addresses up in this book, which must outlive the resolver.
  rdma::MacResolver resolver() const {
    return [this](const rdma::IpAddress& a) -> std::optional<proto::MacAddr> {
      const auto it = by_ip_.find(to_string(a));
      if (it == by_ip_.end()) return std::nullopt;
      return it->second;
    };
  }

 private:
  std::map<std::string, proto::MacAddr> by_ip_;
};

class SimHost {
 public:
  static constexpr std::size_t kBurst = 32;
  static constexpr std::uint32_t kFrameBytes = 4096 + 256;  // a 4096-byte path MTU and every header

  // `cfg.path.local` and `cfg.path.resolve_mac` are the caller's to fill.
  SimHost(std::string name, rdma::EngineConfig cfg);

  const std::string& name() const { return name_; }
  rdma::Engine& engine() { return *engine_; }
  const rdma::Engine& engine() const { return *engine_; }
  rdma::MrTable& memory() { return *mrs_; }
  SerialLink& link() { return link_; }
  const SerialLink& link() const { return link_; }

  // Like a NIC with a short TX ring: the engine is asked for frames only while the link is free
  // within `ring` of now, so what it queues later (a retransmission, an ACK, a CNP) is not stuck
  // behind a backlog, and a congested network queues in the switch rather than in the host.
  // `emit(frame)` puts each frame on link().
  template <typename Emit>
  void transmit(Nanos now, Nanos ring, Emit&& emit) {
    while (link_.free_at() <= now + ring) {
      for (rdma::TxFrame& f : frames_) f.length = 0;
      const std::size_t n = engine_->transmit(frames_, now);
      for (std::size_t i = 0; i < n; ++i) emit(std::span<const std::byte>{frames_[i].data, frames_[i].length});
      if (n < frames_.size()) break;
    }
  }
  // One transmit call of up to kBurst frames, whatever the link (a poll-mode loop's TX turn,
  // SimNetwork::set_poller); returns how many frames `emit` got.
  template <typename Emit>
  std::size_t transmit_once(Nanos now, Emit&& emit) {
    for (rdma::TxFrame& f : frames_) f.length = 0;
    const std::size_t n = engine_->transmit(frames_, now);
    for (std::size_t i = 0; i < n; ++i) emit(std::span<const std::byte>{frames_[i].data, frames_[i].length});
    return n;
  }
  // When transmit() next has something to do; kNever while the engine has nothing to send.
  Nanos next_transmit(Nanos now, Nanos ring) const {
    return engine_->has_tx_work() ? std::max(link_.free_at() - ring, now) : kNever;
  }

 private:
  std::string name_;
  std::unique_ptr<rdma::MrTable> mrs_;
  std::unique_ptr<rdma::Engine> engine_;
  SerialLink link_;
  std::vector<std::vector<std::byte>> buffers_;
  std::vector<rdma::TxFrame> frames_;
};

}  // namespace roce::test
