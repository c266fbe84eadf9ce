// Selective READ responses at the requester (docs/loss.md, part 2, "READ responses"): on a QP
// that agreed to selective repeat, a READ of at most kSackSpan packets places each response
// where its PSN puts it (every response but the last carries one MTU), keeps per PSN what
// arrived, and asks for each missing range with an ordinary READ request for that range alone.
// The READ completes once every PSN arrived; completions stay in posting order (retire()).
#include "lib/rdma/requester.hpp"
#include "protocol/psn.hpp"

namespace roce::rdma {

using namespace roce::proto;

Requester::ReadArrival Requester::on_read_arrival(SendWqe& w, std::uint32_t psn, std::uint32_t* asked_tx) {
  const auto i = static_cast<std::uint32_t>(psn_diff(psn, w.first_psn));
  PsnSlot& s = rd_slot(psn);
  if (i < w.read_packets_received || (s.flags & kArrived)) return ReadArrival::Duplicate;
  *asked_tx = (s.flags & kAsked) ? s.tx : 0;
  if ((s.flags & kAskPending) && rd_pending_ > 0) --rd_pending_;
  s.flags = kArrived;
  if (i + 1 > w.read_high) w.read_high = i + 1;
  return ReadArrival::Arrived;
}

std::uint32_t Requester::ask_read_holes(const SendWqe& w, std::uint32_t below, std::uint32_t lost_tx, bool only_asked) {
  std::uint32_t marked = 0;
  for (std::uint32_t i = w.read_packets_received; i < below && i < w.npackets; ++i) {
    PsnSlot& s = rd_slot(psn_add(w.first_psn, i));
    if ((s.flags & (kArrived | kAskPending)) || (only_asked && !(s.flags & kAsked))) continue;
    // Asked already: its answer may still come, unless one asked at or after it came first.
    if ((s.flags & kAsked) && !(lost_tx != 0 && static_cast<std::int32_t>(s.tx - lost_tx) <= 0)) continue;
    s.flags = kAskPending;
    ++rd_pending_;
    ++marked;
  }
  return marked;
}

void Requester::advance_read(SendWqe& w) const {
  while (w.read_packets_received < w.npackets && (rd_flags(psn_add(w.first_psn, w.read_packets_received)) & kArrived))
    ++w.read_packets_received;
  w.read_expect_first = false;
}

bool Requester::overlaps_earlier_read(const QpContext& qp, std::uint64_t index) const {
  const SendWqe& w = qp.sq.at(index);
  const LocalSegment* mine = qp.send_segs(w);
  for (std::uint64_t q = qp.sq.head(); q < index; ++q) {
    const SendWqe& e = qp.sq.at(q);
    if (e.state != WqeState::InFlight || !e.is_read()) continue;
    const LocalSegment* theirs = qp.send_segs(e);
    for (std::uint32_t a = 0; a < w.num_seg; ++a)
      for (std::uint32_t b = 0; b < e.num_seg; ++b)
        if (mine[a].length != 0 && theirs[b].length != 0 && mine[a].ptr < theirs[b].ptr + theirs[b].length &&
            theirs[b].ptr < mine[a].ptr + mine[a].length)
          return true;
  }
  return false;
}

bool Requester::build_read_hole(QpContext& qp, TxFrame& frame) {
  for (std::uint64_t q = qp.sq.head(); q < qp.sq.tail(); ++q) {
    SendWqe& w = qp.sq.at(q);
    if (w.state != WqeState::InFlight || !tracks_read(w)) continue;
    for (std::uint32_t i = w.read_packets_received; i < w.npackets; ++i) {
      if (!(rd_flags(psn_add(w.first_psn, i)) & kAskPending)) continue;
      // The run of missing responses from here: one READ request for exactly those.
      std::uint32_t n = 0;
      while (i + n < w.npackets && (rd_flags(psn_add(w.first_psn, i + n)) & kAskPending)) ++n;
      read_hole_first_ = i;
      read_hole_count_ = n;
      const std::uint32_t next = w.next_packet;
      const bool expect_first = w.read_expect_first;
      write_packet(qp, w, frame);
      w.next_packet = next;
      w.read_expect_first = expect_first;
      read_hole_count_ = 0;
      for (std::uint32_t k = 0; k < n; ++k) {
        PsnSlot& s = rd_slot(psn_add(w.first_psn, i + k));
        s.flags = kAsked;
        s.tx = tx_seq_;  // write_packet counted this transmission
      }
      rd_pending_ = rd_pending_ > n ? rd_pending_ - n : 0;
      qp.counters.inc(Counter::ReadHoleRequests);
      return true;
    }
  }
  rd_pending_ = 0;  // the rest arrived or their READs finished meanwhile
  return false;
}

}  // namespace roce::rdma
