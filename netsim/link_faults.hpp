// What the link emulator does to the frames of one direction, and its per-fate counters.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "lib/cc/congestion_point.hpp"
#include "lib/time.hpp"

namespace roce::netsim {

// Stages, in the order a frame meets them: loss, duplication (the copy follows right behind
// the original), the bottleneck queue (when rate_bps > 0: serialisation at that rate, tail
// drop beyond queue_bytes, RED ECN marking on dequeue), then the wire (delay + jitter, or
// reorder_delay more for a frame chosen to be held back so that later frames overtake it).
struct DirectionFaults {
  double loss = 0;       // probability a frame vanishes
  double duplicate = 0;  // probability a frame is delivered twice
  double reorder = 0;    // probability a frame is held back by reorder_delay
  Nanos reorder_delay = 100 * kMicro;
  Nanos delay = 0;       // one-way propagation delay
  Nanos jitter = 0;      // extra delay uniform in [0, jitter]; it never reorders frames
  double rate_bps = 0;   // bottleneck rate (Ethernet preamble, IFG and FCS included); 0 = no queue
  std::uint64_t queue_bytes = 1'000'000;  // bottleneck buffer; frames beyond it are tail-dropped
  std::uint32_t queue_frames = 4096;      // slots of the bottleneck buffer (allocated once)
  bool ecn_marking = true;                // RED marking of ECT frames on dequeue
  cc::RedParams red{};

  bool has_queue() const { return rate_bps > 0; }
};

// nullopt when usable, else what is wrong (for a one-line start-up error).
std::optional<std::string> check(const DirectionFaults& f);
// "loss=0.02 dup=0.01 reorder=0.01/100us delay=10us jitter=0 rate=10Gb/s ..." for logs.
std::string to_string(const DirectionFaults& f);

// The two directions of the wire between side X and side Y.
enum class Direction : std::uint8_t { XtoY, YtoX };
std::string to_string(Direction d);

// Every fate of a frame, counted per direction. Conservation:
//   Received + Duplicated = Forwarded + Lost + TailDropped + DelayLineFull + Held.
enum class LinkCounter : std::uint8_t {
  Received,
  ReceivedBytes,
  Forwarded,        // handed to the egress port
  ForwardedBytes,
  Lost,             // random loss
  Duplicated,       // extra copies made
  DuplicateNoMbuf,  // a duplicate was due but the pool was empty (the original still goes)
  Reordered,        // held back by reorder_delay
  Marked,           // CE set by the bottleneck queue
  MarkNotWritable,  // chosen for CE but the mbuf was shared or its headers not in one segment
  TailDropped,      // the bottleneck buffer was full
  DelayLineFull,    // more frames in flight than the delay line holds
  TxBusy,           // the egress port refused a frame for now; it waits and goes again
  Held,             // gauge: frames in the queue and on the wire now
  QueueMaxBytes,    // gauge: highest bottleneck occupancy seen
  Count,
};
inline constexpr std::size_t kLinkCounterCount = static_cast<std::size_t>(LinkCounter::Count);
std::string to_string(LinkCounter c);

struct LinkStats {
  std::array<std::uint64_t, kLinkCounterCount> v{};
  std::uint64_t get(LinkCounter c) const { return v[static_cast<std::size_t>(c)]; }
};
// "received=10 forwarded=9 lost=1 ..." (zero counters left out).
std::string to_string(const LinkStats& s);

}  // namespace roce::netsim
