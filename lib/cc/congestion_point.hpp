// DCQCN congestion point: one switch egress queue with RED-style ECN marking on dequeue
// (spec 6), byte capacity with tail drop, and a serialising link at line rate, so that it can be
// the bottleneck of a discrete-event simulation. Packets are opaque handles with a size and an
// ECN codepoint; the queue tells the caller whether to set CE, it never touches the packet.
//
// Marking: p = 0 at or below Kmin, Pmax*(Q-Kmin)/(Kmax-Kmin) up to Kmax, 1 above Kmax, where Q is
// the occupancy after removing the departing packet. Only ECT(0)/ECT(1) packets get CE; a packet
// is marked iff U < p with U from a seeded generator.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "lib/time.hpp"
#include "protocol/headers.hpp"

namespace roce::cc {

struct RedParams {
  std::uint64_t kmin_bytes = 5'000;
  std::uint64_t kmax_bytes = 200'000;
  double pmax = 0.01;
};

double mark_probability(const RedParams& red, std::uint64_t queue_bytes);
constexpr bool ecn_capable(proto::Ecn e) { return e == proto::Ecn::Ect0 || e == proto::Ecn::Ect1; }

// Uniform [0, 1) draws from a seeded mt19937_64 (its sequence is fixed by the C++ standard; the
// conversion is done here because std::uniform_real_distribution is not portable).
class MarkingRng {
 public:
  explicit MarkingRng(std::uint64_t seed) : gen_(seed) {}
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }

 private:
  std::mt19937_64 gen_;
};

struct CpParams {
  RedParams red{};
  bool ecn_marking = true;  // false for the CNP/ACK priority queue
  std::uint64_t capacity_bytes = 1'000'000;
  std::uint32_t capacity_packets = 4096;  // ring slots, allocated once
  double line_rate_bps = 100e9;
  std::uint64_t seed = 1;
};

std::optional<std::string> check(const CpParams& p);

enum class EnqueueResult : std::uint8_t { Queued, DroppedBufferFull, DroppedNoSlot };

struct CpCounters {
  std::uint64_t enqueued = 0;
  std::uint64_t dropped_buffer_full = 0;
  std::uint64_t dropped_no_slot = 0;
  std::uint64_t dequeued = 0;
  std::uint64_t marked_ce = 0;
  std::uint64_t arrived_ce = 0;         // already CE when dequeued
  std::uint64_t not_ect_above_kmin = 0;  // would have been marked, but Not-ECT
  std::uint64_t max_occupancy_bytes = 0;
};

template <typename Handle>
struct Departure {
  Handle packet{};
  std::uint32_t wire_bytes = 0;
  proto::Ecn ecn = proto::Ecn::NotEct;  // after marking
  bool marked = false;                   // this queue set CE
  Nanos start = 0;                       // first bit on the link (rounded up to 1 ns)
  Nanos end = 0;                         // last bit on the link (rounded up to 1 ns)
  std::uint64_t queue_bytes_after = 0;   // the occupancy the marking decision used
};

// The parts that do not depend on the handle type: occupancy, marking and link timing.
// Link time is kept in picoseconds so back-to-back packets do not drift by rounding.
class CongestionPointCore {
 public:
  explicit CongestionPointCore(const CpParams& p);

  EnqueueResult admit(std::uint32_t wire_bytes, bool slot_free);
  // The start (ps) of a packet that reached the head at enqueue time `enq_ns`.
  std::int64_t start_ps(Nanos enq_ns) const;
  struct Decision {
    proto::Ecn ecn;
    bool marked;
    std::uint64_t queue_bytes_after;
    std::int64_t start_ps;
    std::int64_t end_ps;
  };
  Decision depart(Nanos enq_ns, std::uint32_t wire_bytes, proto::Ecn ecn);

  std::uint64_t occupancy_bytes() const { return occupancy_; }
  const CpCounters& counters() const { return counters_; }
  const CpParams& params() const { return params_; }

 private:
  CpParams params_;
  double ps_per_byte_;
  std::uint64_t occupancy_ = 0;
  std::int64_t busy_until_ps_ = 0;
  MarkingRng rng_;
  CpCounters counters_;
};

constexpr Nanos ps_to_ns_ceil(std::int64_t ps) { return (ps + 999) / 1000; }

template <typename Handle>
class CongestionPoint {
 public:
  explicit CongestionPoint(const CpParams& p) : core_(p), ring_(p.capacity_packets) {}

  EnqueueResult enqueue(Nanos now, Handle packet, std::uint32_t wire_bytes, proto::Ecn ecn) {
    const EnqueueResult r = core_.admit(wire_bytes, count_ < ring_.size());
    if (r != EnqueueResult::Queued) return r;
    ring_[(head_ + count_) % ring_.size()] = Entry{packet, wire_bytes, ecn, now};
    ++count_;
    return r;
  }

  // When the head packet can start on the link; kNever when the queue is empty.
  Nanos next_dequeue_time() const {
    return count_ == 0 ? kNever : ps_to_ns_ceil(core_.start_ps(ring_[head_].enqueued));
  }

  // Takes the head packet off if it may start by `now`, and decides its mark.
  std::optional<Departure<Handle>> dequeue(Nanos now) {
    if (count_ == 0 || next_dequeue_time() > now) return std::nullopt;
    const Entry e = ring_[head_];
    head_ = (head_ + 1) % ring_.size();
    --count_;
    const auto d = core_.depart(e.enqueued, e.wire_bytes, e.ecn);
    return Departure<Handle>{e.packet,        e.wire_bytes,        d.ecn, d.marked, ps_to_ns_ceil(d.start_ps),
                             ps_to_ns_ceil(d.end_ps), d.queue_bytes_after};
  }

  std::uint64_t occupancy_bytes() const { return core_.occupancy_bytes(); }
  std::size_t size() const { return count_; }
  const CpCounters& counters() const { return core_.counters(); }

 private:
  struct Entry {
    Handle packet{};
    std::uint32_t wire_bytes = 0;
    proto::Ecn ecn = proto::Ecn::NotEct;
    Nanos enqueued = 0;
  };
  CongestionPointCore core_;
  std::vector<Entry> ring_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

std::string to_string(EnqueueResult r);

}  // namespace roce::cc
