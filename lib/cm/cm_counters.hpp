// The CM's counters. Per attribute the four groups Linux's cm.c keeps in sysfs (cm_tx_msgs,
// cm_tx_retries, cm_rx_msgs, cm_rx_duplicates), then one counter per drop or refusal reason.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "protocol/mad.hpp"
#include "protocol/mad_parser.hpp"

namespace roce::cm {

// Index of a CM attribute in the per-attribute arrays: REQ 0 ... APR 10, ClassPortInfo 11.
inline constexpr std::size_t kCmAttributeSlots = 12;
constexpr std::size_t attribute_slot(proto::CmAttribute a) {
  const auto id = static_cast<std::uint16_t>(a);
  return id == 0x0001 ? 11 : static_cast<std::size_t>(id - 0x0010);
}

inline constexpr std::size_t kRejReasonSlots = 36;  // codes 0..35

struct CmCounters {
  using PerAttribute = std::array<std::uint64_t, kCmAttributeSlots>;
  PerAttribute tx_msgs{};       // every MAD sent, retransmissions included
  PerAttribute tx_retries{};    // retransmissions by the timer
  PerAttribute rx_msgs{};       // every MAD parsed
  PerAttribute rx_duplicates{}; // answered or dropped as a duplicate
  PerAttribute rx_unmatched{};  // no ID for it (or the wrong state): dropped, or answered as IBA says

  std::array<std::uint64_t, static_cast<std::size_t>(proto::MadError::Count)> rx_malformed{};
  std::array<std::uint64_t, kRejReasonSlots> rej_sent{};      // by reason
  std::array<std::uint64_t, kRejReasonSlots> rej_received{};  // by reason

  std::uint64_t req_no_listener = 0;        // REJ invalid service ID
  std::uint64_t req_stale = 0;              // REJ stale connection (and DREQ to the old one)
  std::uint64_t req_no_resources = 0;       // REJ no resources: an ID cap was reached
  std::uint64_t req_bad_transport = 0;      // REJ invalid transport type
  std::uint64_t req_bad_mtu = 0;            // REJ invalid MTU
  std::uint64_t rep_stale = 0;              // REJ stale connection to a REP
  std::uint64_t dreq_qpn_mismatch = 0;      // DREQ naming another QPN: dropped
  std::uint64_t sidr_no_listener = 0;       // SIDR_REP "service ID unsupported"
  std::uint64_t sidr_no_resources = 0;      // SIDR_REP "rejected": an ID cap was reached
  std::uint64_t unmatched_held = 0;         // REQs and SIDR_REQs held for a listener (CmConfig::unmatched_request_hold)
  std::uint64_t unmatched_held_delivered = 0;  // ... of them, taken by a listener that came within the hold
  std::uint64_t unmatched_hold_full = 0;    // refused at once: max_held_requests were held
  std::uint64_t req_timeouts = 0;           // REQ retries exhausted
  std::uint64_t rep_timeouts = 0;
  std::uint64_t dreq_timeouts = 0;
  std::uint64_t sidr_timeouts = 0;
  std::uint64_t consumer_timeouts = 0;
  std::uint64_t timewait_exits = 0;
  std::uint64_t alternate_path_ignored = 0; // LAP/APR: Linux's CM ignores them on RoCE
  std::uint64_t class_port_info_answered = 0;
  std::uint64_t mad_status_replies = 0;     // GetResp with an error status to a Get/Set we do not serve
  std::uint64_t established = 0;

  // Every counter with its name ("cm_tx_msgs.REQ", "rej_sent.stale_connection", ...).
  void for_each(const std::function<void(const std::string&, std::uint64_t)>& f) const;
};

}  // namespace roce::cm
