#include "lib/cm/cm_counters.hpp"

#include "protocol/cm_reject.hpp"

namespace roce::cm {

namespace {

std::string slot_name(std::size_t slot) {
  if (slot == 11) return proto::cm_attribute_name(0x0001);
  return proto::cm_attribute_name(static_cast<std::uint16_t>(0x0010 + slot));
}

// "stale connection" -> "stale_connection"
std::string reason_key(std::uint16_t code) {
  std::string s = proto::rej_reason_name(code).value_or("reason_" + std::to_string(code));
  for (auto& ch : s) {
    if (ch == ' ' || ch == '/') ch = '_';
    else ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return s;
}

}  // namespace

void CmCounters::for_each(const std::function<void(const std::string&, std::uint64_t)>& f) const {
  const std::pair<const char*, const PerAttribute*> groups[] = {
      {"cm_tx_msgs", &tx_msgs}, {"cm_tx_retries", &tx_retries}, {"cm_rx_msgs", &rx_msgs},
      {"cm_rx_duplicates", &rx_duplicates}, {"cm_rx_unmatched", &rx_unmatched}};
  for (const auto& [group, values] : groups)
    for (std::size_t i = 0; i < kCmAttributeSlots; ++i) f(std::string(group) + "." + slot_name(i), (*values)[i]);
  for (std::size_t i = 1; i < rx_malformed.size(); ++i)
    f("rx_malformed." + proto::to_string(static_cast<proto::MadError>(i)), rx_malformed[i]);
  for (std::size_t i = 1; i < kRejReasonSlots; ++i) {
    f("rej_sent." + reason_key(static_cast<std::uint16_t>(i)), rej_sent[i]);
    f("rej_received." + reason_key(static_cast<std::uint16_t>(i)), rej_received[i]);
  }
  f("req_no_listener", req_no_listener);
  f("req_stale", req_stale);
  f("req_no_resources", req_no_resources);
  f("req_bad_transport", req_bad_transport);
  f("req_bad_mtu", req_bad_mtu);
  f("rep_stale", rep_stale);
  f("dreq_qpn_mismatch", dreq_qpn_mismatch);
  f("sidr_no_listener", sidr_no_listener);
  f("sidr_no_resources", sidr_no_resources);
  f("unmatched_held", unmatched_held);
  f("unmatched_held_delivered", unmatched_held_delivered);
  f("unmatched_hold_full", unmatched_hold_full);
  f("req_timeouts", req_timeouts);
  f("rep_timeouts", rep_timeouts);
  f("dreq_timeouts", dreq_timeouts);
  f("sidr_timeouts", sidr_timeouts);
  f("consumer_timeouts", consumer_timeouts);
  f("timewait_exits", timewait_exits);
  f("alternate_path_ignored", alternate_path_ignored);
  f("class_port_info_answered", class_port_info_answered);
  f("mad_status_replies", mad_status_replies);
  f("established", established);
}

}  // namespace roce::cm
