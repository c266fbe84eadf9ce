// Transport counters, per QP and per engine. Names follow Linux rxe's hw counters where rxe
// has one, so tools and people comparing the two see the same words.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace roce::rdma {

enum class Counter : std::uint16_t {
  // rxe's names
  SentPkts,
  RcvdPkts,
  DuplicateRequest,
  OutOfSeqRequest,
  RcvdRnrErr,
  SendRnrErr,
  RcvdSeqErr,
  AckDeferred,
  RetryExceededErr,
  RetryRnrExceededErr,
  CompleterRetryErr,
  SendErr,
  RdmaSends,
  RdmaRecvs,
  // ours
  RetransmittedPkts,
  RetransmitTimeouts,
  EarlyRetransmits,      // go-back-N started by the early retransmission timer
  SpuriousEarlyRetransmits,  // ... whose ACK came back too soon to answer it (the first copy got through)
  TailProbes,            // go-back-N: the early timer resent the newest packet alone (a tail loss probe)
  OldestProbes,          // go-back-N: ... and, that probe unanswered, the oldest unacknowledged packet alone
  ProbedHoles,           // go-back-N: the oldest packet's probe was taken as new: a go-back from the next
  LossEvents,            // go-back-N resends started (by a NAK, a lost response or a timer)
  DuplicateLossSignals,  // a NAK or early timer for a range already being resent: started nothing
  WindowCuts,            // send window cuts (at most one per window of data, plus local ACK timeouts)
  RnrWaits,
  AcksSent,
  NaksSent,
  ReadResponsesSent,
  AtomicAcksSent,
  AcksReceived,
  NaksReceived,
  GhostResponses,        // response whose PSN is outside the outstanding window (or a duplicate of one placed)
  UnsolicitedResponses,  // response in the window that answers nothing outstanding: an ACK or NAK with
                         // nothing outstanding, a NAK for a PSN already acknowledged, an atomic ACK or a
                         // READ response where no atomic or READ waits
  DuplicateAtomicReplayed,
  DuplicateReadReexecuted,
  RemoteAccessErrors,    // NAK remote access error sent (bad rkey, bounds, access)
  InvalidRequests,       // NAK invalid request sent
  RemoteOperationalErrors,
  OpcodeSequenceErrors,  // MIDDLE without FIRST, FIRST while a message is open, ...
  BadStateDrops,         // packet for a QP whose state does not accept it
  ResponderBusyDrops,    // request dropped unexecuted: the response queue was full
  QkeyViolations,
  UcMessagesDropped,
  UdNoReceiveDrops,
  CnpSent,
  CnpReceived,
  CnpIgnored,
  EcnCeReceived,
  WcErrors,              // completions with a status other than success (flush included)
  // selective repeat (docs/loss.md, part 2)
  SacksSent,
  SacksReceived,
  OutOfOrderBuffered,    // requests ahead of the expected PSN held in the reorder buffer
  ReorderDuplicates,     // ... arriving again while held (dropped)
  ReorderOverflows,      // ... beyond the reorder window (dropped)
  ReorderPlaced,         // ... of them WRITE MIDDLEs placed in memory at once, only their headers held
  ReorderPoolExhausted,  // ... in the window but dropped: the engine's reorder pool had no free chunk
  SelectiveResends,      // packets resent because a SACK or a timer found them missing
  ReadHoleRequests,      // READ requests for the missing response PSNs of a READ alone
  ReadResponsesAhead,    // READ responses placed ahead of a missing one
  // both modes, since session 20
  AckTimeoutsDeferred,   // a local ACK timer expired in a stall of our own worker: moved on by the stall, no retry used
  Count,
};

inline constexpr std::size_t kCounterCount = static_cast<std::size_t>(Counter::Count);

std::string_view counter_name(Counter c);

class Counters {
 public:
  void inc(Counter c, std::uint64_t n = 1) { v_[static_cast<std::size_t>(c)] += n; }
  std::uint64_t get(Counter c) const { return v_[static_cast<std::size_t>(c)]; }
  void add(const Counters& o) {
    for (std::size_t i = 0; i < kCounterCount; ++i) v_[i] += o.v_[i];
  }
  const std::array<std::uint64_t, kCounterCount>& values() const { return v_; }

 private:
  std::array<std::uint64_t, kCounterCount> v_{};
};

}  // namespace roce::rdma
