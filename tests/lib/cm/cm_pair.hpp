// Two CommunicationManagers (an active side A and a passive side B) joined by a simulated
// link on a virtual clock: MADs take `latency` to cross, and a seeded RNG, or a filter that
// picks messages by attribute and ordinal, drops or duplicates them. Consumers are callbacks
// on each side's events, run as they would be by an application (accept, send RTU, ...).
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lib/cm/communication_manager.hpp"
#include "protocol/mad_parser.hpp"

namespace roce::cm::test {

inline Gid gid_of(std::uint8_t last) { return proto::gid_from_ipv4({10, 0, 0, last}); }

struct WireRecord {
  Nanos at = 0;
  bool from_a = false;
  proto::CmAttribute attribute{};
  std::uint16_t attribute_id = 0;
  bool dropped = false;
  Mad mad{};
};

class CmPair;

struct Side {
  Side(const CmConfig& cfg, Gid g) : cm(cfg), gid(g) {}
  CommunicationManager cm;
  Gid gid;
  std::vector<CmEvent> events;
  // The consumer: called for each event as it happens.
  std::function<void(Side&, const CmEvent&)> consumer;
  CmPair* pair = nullptr;

  std::size_t count(CmEventType t) const {
    return static_cast<std::size_t>(std::count_if(events.begin(), events.end(), [t](const CmEvent& e) { return e.type == t; }));
  }
  const CmEvent* last(CmEventType t) const {
    for (auto it = events.rbegin(); it != events.rend(); ++it)
      if (it->type == t) return &*it;
    return nullptr;
  }
};

inline CmConfig config_a() {
  CmConfig c;
  c.local_ca_guid = 0x0202020000000001;
  c.id_seed = 0xA;
  c.tid_high = 0xA;
  return c;
}
inline CmConfig config_b() {
  CmConfig c;
  c.local_ca_guid = 0x0202020000000002;
  c.id_seed = 0xB;
  c.tid_high = 0xB;
  return c;
}

class CmPair {
 public:
  CmPair(const CmConfig& a_cfg = config_a(), const CmConfig& b_cfg = config_b(), std::uint64_t seed = 1)
      : a(a_cfg, gid_of(1)), b(b_cfg, gid_of(2)), rng_(seed) {
    a.pair = this;
    b.pair = this;
  }

  Side a, b;
  Nanos now = 0;
  Nanos latency = 50 * kMicro;
  double loss = 0.0;
  double duplicate = 0.0;
  // Returns true to drop this MAD (from_a says which side sent it).
  std::function<bool(const WireRecord&)> drop_filter;
  std::vector<WireRecord> wire;

  // Feeds what a call into one side's CM produced into the link and that side's consumer.
  void flush(Side& from, CmOutput& out) {
    std::vector<CmEvent> events = std::move(out.events);
    for (auto& m : out.mads) put_on_wire(from, m);
    out.clear();
    for (auto& e : events) {
      from.events.push_back(e);
      if (from.consumer) from.consumer(from, e);
    }
  }

  // Calls f(cm, now, out) on a side and flushes its output.
  template <typename F>
  auto call(Side& s, F&& f) {
    CmOutput out;
    auto r = f(s.cm, now, out);
    flush(s, out);
    return r;
  }

  // Delivers a MAD to a side as if it came from the other one.
  void inject(Side& to, const Mad& mad, std::optional<MadPeer> from = std::nullopt) {
    Side& other = &to == &a ? b : a;
    CmOutput out;
    to.cm.on_mad(mad, from.value_or(MadPeer{other.gid}), now, out);
    flush(to, out);
  }

  // Runs the link and both sides' timers up to t.
  void run_until(Nanos t) {
    for (;;) {
      Nanos next = std::min(a.cm.next_deadline(), b.cm.next_deadline());
      if (!in_flight_.empty()) next = std::min(next, in_flight_.begin()->first.first);
      if (next > t || next == kNever) break;
      now = std::max(now, next);
      if (!in_flight_.empty() && in_flight_.begin()->first.first <= now) {
        auto it = in_flight_.begin();
        Flight f = it->second;
        in_flight_.erase(it);
        Side& to = f.to_b ? b : a;
        CmOutput out;
        to.cm.on_mad(f.mad, f.from, now, out);
        flush(to, out);
        continue;
      }
      CmOutput out;
      if (a.cm.next_deadline() <= now) {
        a.cm.on_timer(now, out);
        flush(a, out);
      }
      if (b.cm.next_deadline() <= now) {
        b.cm.on_timer(now, out);
        flush(b, out);
      }
    }
    now = std::max(now, t);
  }
  void run_for(Nanos d) { run_until(now + d); }
  // Runs until nothing is in flight and no timer is armed (bounded by `limit`).
  void run_to_quiet(Nanos limit = 3600 * kSecond) {
    const Nanos end = now + limit;
    while ((a.cm.next_deadline() != kNever || b.cm.next_deadline() != kNever || !in_flight_.empty()) && now < end) {
      Nanos next = std::min(a.cm.next_deadline(), b.cm.next_deadline());
      if (!in_flight_.empty()) next = std::min(next, in_flight_.begin()->first.first);
      run_until(std::min(next, end));
    }
  }

  std::size_t sent(bool from_a, proto::CmAttribute attr, bool count_dropped = true) const {
    return static_cast<std::size_t>(std::count_if(wire.begin(), wire.end(), [&](const WireRecord& r) {
      return r.from_a == from_a && r.attribute_id == static_cast<std::uint16_t>(attr) && (count_dropped || !r.dropped);
    }));
  }
  std::vector<const WireRecord*> records(bool from_a, proto::CmAttribute attr) const {
    std::vector<const WireRecord*> out;
    for (const auto& r : wire)
      if (r.from_a == from_a && r.attribute_id == static_cast<std::uint16_t>(attr)) out.push_back(&r);
    return out;
  }
  std::size_t in_flight() const { return in_flight_.size(); }

 private:
  struct Flight {
    bool to_b;
    MadPeer from;
    Mad mad;
  };

  void put_on_wire(Side& from, const OutMad& m) {
    WireRecord r;
    r.at = now;
    r.from_a = &from == &a;
    r.attribute_id = static_cast<std::uint16_t>(std::to_integer<unsigned>(m.mad[16]) << 8 | std::to_integer<unsigned>(m.mad[17]));
    r.attribute = static_cast<proto::CmAttribute>(r.attribute_id);
    r.mad = m.mad;
    std::uniform_real_distribution<double> u(0, 1);
    r.dropped = (drop_filter && drop_filter(r)) || (loss > 0 && u(rng_) < loss);
    wire.push_back(r);
    if (r.dropped) return;
    Side& to = r.from_a ? b : a;
    // The receiver sees the sender's GID and QP1, and the P_Key the MAD was sent with.
    const MadPeer source{from.gid, m.to.qpn == proto::kGsiQpn ? proto::kGsiQpn : m.to.qpn, m.to.pkey};
    EXPECT_EQ(m.to.gid, to.gid) << "a MAD addressed to a GID that is not the other side's: " << proto::cm_attribute_name(r.attribute_id) << " from_a " << r.from_a;
    in_flight_.insert({{now + latency, seq_++}, Flight{r.from_a, source, m.mad}});
    if (duplicate > 0 && u(rng_) < duplicate) in_flight_.insert({{now + 2 * latency, seq_++}, Flight{r.from_a, source, m.mad}});
  }

  std::mt19937_64 rng_;
  std::uint64_t seq_ = 0;
  std::multimap<std::pair<Nanos, std::uint64_t>, Flight> in_flight_;
};

// Drops the n-th (0-based) MAD of an attribute sent by one side.
inline std::function<bool(const WireRecord&)> drop_nth(CmPair& p, bool from_a, proto::CmAttribute attr, std::size_t n) {
  return [&p, from_a, attr, n](const WireRecord& r) {
    return r.from_a == from_a && r.attribute == attr && p.sent(from_a, attr) == n;
  };
}

// Drops every MAD of an attribute sent by one side.
inline std::function<bool(const WireRecord&)> drop_all(bool from_a, proto::CmAttribute attr) {
  return [from_a, attr](const WireRecord& r) { return r.from_a == from_a && r.attribute == attr; };
}

inline ConnectParams connect_params(const Side& from, const Side& to, std::uint64_t service_id, std::uint32_t qpn = 0x11) {
  ConnectParams p;
  p.service_id = service_id;
  p.path.local_gid = from.gid;
  p.path.remote_gid = to.gid;
  p.local_qpn = qpn;
  p.starting_psn = 0x61A80C;
  p.responder_resources = 1;
  p.initiator_depth = 2;
  p.retry_count = 6;
  p.rnr_retry_count = 5;
  return p;
}

inline AcceptParams accept_params(std::uint32_t qpn = 0x22) {
  AcceptParams p;
  p.local_qpn = qpn;
  p.starting_psn = 0x184BCE;
  p.responder_resources = 2;
  p.initiator_depth = 1;
  p.rnr_retry_count = 7;
  return p;
}

// Consumers that do what rdma_cm does without asking: accept every REQ (with QPNs counting up
// from 0x100), answer every REP with RTU.
inline void auto_accept(Side& s, std::uint32_t first_qpn = 0x100) {
  auto next_qpn = std::make_shared<std::uint32_t>(first_qpn);
  s.consumer = [next_qpn](Side& side, const CmEvent& e) {
    if (e.type != CmEventType::ReqReceived) return;
    side.pair->call(side, [&](CommunicationManager& cm, Nanos now, CmOutput& out) {
      return cm.accept(e.id, accept_params((*next_qpn)++), now, out);
    });
  };
}
inline void auto_rtu(Side& s) {
  s.consumer = [](Side& side, const CmEvent& e) {
    if (e.type != CmEventType::RepReceived) return;
    side.pair->call(side, [&](CommunicationManager& cm, Nanos now, CmOutput& out) { return cm.ready_to_use(e.id, now, out); });
  };
}

}  // namespace roce::cm::test
