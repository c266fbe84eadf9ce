// Selective READ responses at the completer (docs/loss.md, part 2, "READ responses"): a
// response of a tracked READ is placed where its PSN puts it, whatever arrived before it; the
// responses it shows missing are asked for alone (requester_read_holes.cpp), never with a
// go-back. The READ completes when its last missing response arrives, and what the responder
// acknowledged after it completes then, in order.
#include <algorithm>

#include "lib/rdma/completer.hpp"
#include "protocol/psn.hpp"

namespace roce::rdma {

using namespace roce::proto;

CompleterOutcome Completer::on_tracked_read_response(QpContext& qp, Requester& req, SendWqe& w, const Packet& pkt, Nanos now,
                                                     bool placed) {
  const std::uint32_t psn = pkt.psn();
  const std::uint32_t pmtu = qp.cfg.pmtu;
  const auto i = static_cast<std::uint32_t>(psn_diff(psn, w.first_psn));
  const std::uint64_t offset = std::uint64_t{i} * pmtu;
  const bool last = i + 1 == w.npackets;
  // Every response but the READ's last carries one MTU, whichever READ request it answers (its
  // own or one for a hole): the length is what places it, not the FIRST/MIDDLE/LAST position.
  if (pkt.payload_length != (last ? w.length - offset : pmtu)) {
    qp.counters.inc(Counter::GhostResponses);
    return CompleterOutcome::Nothing;
  }
  std::uint32_t asked_tx = 0;
  if (req.on_read_arrival(w, psn, &asked_tx) == Requester::ReadArrival::Duplicate) {
    qp.counters.inc(Counter::GhostResponses);
    return CompleterOutcome::Nothing;
  }
  if (!placed)
    place_payload(pkt,
                  segment_dest(qp.send_segs(w), w.num_seg, offset, pkt.payload_length,
                               last ? 0 : std::min<std::uint64_t>(pmtu, w.length - offset - pkt.payload_length)),
                  qp.tuning->crc, false);
  if (i != w.read_packets_received) qp.counters.inc(Counter::ReadResponsesAhead);
  // Answers come in the order they were asked for: below this one, what the same READ request
  // or an earlier one asked for and did not come was lost; in other READs, what a hole request
  // sent before this one's asked for (their own streams may still be on the way).
  req.ask_read_holes(w, i, asked_tx);
  if (asked_tx != 0)
    for (std::uint64_t k = qp.sq.head(); k < qp.sq.tail(); ++k) {
      const SendWqe& o = qp.sq.at(k);
      if (&o != &w && o.state == WqeState::InFlight && req.tracks_read(o)) req.ask_read_holes(o, o.npackets, asked_tx, true);
    }
  // While responses keep coming the responder is working through its queue, and a hole's
  // answer waits behind what was queued before its request: the early timer waits for silence.
  arm_early(qp, now);
  req.advance_read(w);
  if (w.read_packets_received == w.npackets) finish(qp, req, w, IBV_WC_SUCCESS);
  // The response acknowledges every request before it, and its own READ up to it.
  return acknowledge_in_turn(qp, req, psn, now);
}

CompleterOutcome Completer::acknowledge_in_turn(QpContext& qp, Requester& req, std::uint32_t psn, Nanos now) {
  if (psn_after(psn_next(psn), acked_end_)) acked_end_ = psn_next(psn);
  const std::uint32_t before = una_;
  std::uint32_t retry_psn = 0;
  const AckResult r = acknowledge_before(qp, req, acked_end_, &retry_psn);
  if (una_ != before) progressed(qp, req, now);
  if (r == AckResult::ResponseLost) return retry(qp, req, retry_psn, now, false);
  return CompleterOutcome::Progress;
}

}  // namespace roce::rdma
