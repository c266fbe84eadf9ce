#include "lib/rdma/counters.hpp"

namespace roce::rdma {

std::string_view counter_name(Counter c) {
  switch (c) {
    case Counter::SentPkts: return "sent_pkts";
    case Counter::RcvdPkts: return "rcvd_pkts";
    case Counter::DuplicateRequest: return "duplicate_request";
    case Counter::OutOfSeqRequest: return "out_of_seq_request";
    case Counter::RcvdRnrErr: return "rcvd_rnr_err";
    case Counter::SendRnrErr: return "send_rnr_err";
    case Counter::RcvdSeqErr: return "rcvd_seq_err";
    case Counter::AckDeferred: return "ack_deferred";
    case Counter::RetryExceededErr: return "retry_exceeded_err";
    case Counter::RetryRnrExceededErr: return "retry_rnr_exceeded_err";
    case Counter::CompleterRetryErr: return "completer_retry_err";
    case Counter::SendErr: return "send_err";
    case Counter::RdmaSends: return "rdma_sends";
    case Counter::RdmaRecvs: return "rdma_recvs";
    case Counter::RetransmittedPkts: return "retransmitted_pkts";
    case Counter::RetransmitTimeouts: return "retransmit_timeouts";
    case Counter::EarlyRetransmits: return "early_retransmits";
    case Counter::SpuriousEarlyRetransmits: return "spurious_early_retransmits";
    case Counter::TailProbes: return "tail_probes";
    case Counter::OldestProbes: return "oldest_probes";
    case Counter::ProbedHoles: return "probed_holes";
    case Counter::LossEvents: return "loss_events";
    case Counter::DuplicateLossSignals: return "duplicate_loss_signals";
    case Counter::WindowCuts: return "window_cuts";
    case Counter::RnrWaits: return "rnr_waits";
    case Counter::AcksSent: return "acks_sent";
    case Counter::NaksSent: return "naks_sent";
    case Counter::ReadResponsesSent: return "read_responses_sent";
    case Counter::AtomicAcksSent: return "atomic_acks_sent";
    case Counter::AcksReceived: return "acks_received";
    case Counter::NaksReceived: return "naks_received";
    case Counter::GhostResponses: return "ghost_responses";
    case Counter::UnsolicitedResponses: return "unsolicited_responses";
    case Counter::DuplicateAtomicReplayed: return "duplicate_atomic_replayed";
    case Counter::DuplicateReadReexecuted: return "duplicate_read_reexecuted";
    case Counter::RemoteAccessErrors: return "remote_access_errors";
    case Counter::InvalidRequests: return "invalid_requests";
    case Counter::RemoteOperationalErrors: return "remote_operational_errors";
    case Counter::OpcodeSequenceErrors: return "opcode_sequence_errors";
    case Counter::BadStateDrops: return "bad_state_drops";
    case Counter::ResponderBusyDrops: return "responder_busy_drops";
    case Counter::QkeyViolations: return "qkey_violations";
    case Counter::UcMessagesDropped: return "uc_messages_dropped";
    case Counter::UdNoReceiveDrops: return "ud_no_receive_drops";
    case Counter::CnpSent: return "cnp_sent";
    case Counter::CnpReceived: return "cnp_received";
    case Counter::CnpIgnored: return "cnp_ignored";
    case Counter::EcnCeReceived: return "ecn_ce_received";
    case Counter::WcErrors: return "wc_errors";
    case Counter::SacksSent: return "sacks_sent";
    case Counter::SacksReceived: return "sacks_received";
    case Counter::OutOfOrderBuffered: return "out_of_order_buffered";
    case Counter::ReorderDuplicates: return "reorder_duplicates";
    case Counter::ReorderOverflows: return "reorder_overflows";
    case Counter::ReorderPlaced: return "reorder_placed";
    case Counter::ReorderPoolExhausted: return "reorder_pool_exhausted";
    case Counter::SelectiveResends: return "selective_resends";
    case Counter::ReadHoleRequests: return "read_hole_requests";
    case Counter::ReadResponsesAhead: return "read_responses_ahead";
    case Counter::AckTimeoutsDeferred: return "ack_timeouts_deferred";
    case Counter::Count: break;
  }
  return "unknown";
}

}  // namespace roce::rdma
