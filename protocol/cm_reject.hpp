// REJ and MRA (IBA 12.6.6, 12.6.7; tables 107, 108) and the REJ reason table (12.6.7.2).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "protocol/be.hpp"
#include "protocol/bitfield.hpp"
#include "protocol/mad.hpp"

namespace roce::proto {

// Which message a REJ rejects or an MRA acknowledges.
enum class CmMessage : std::uint8_t { Req = 0, Rep = 1, Other = 2 };

enum class RejReason : std::uint16_t {
  NoQp = 1,
  NoEec = 2,
  NoResources = 3,
  Timeout = 4,
  Unsupported = 5,
  InvalidCommId = 6,
  InvalidCommInstance = 7,
  InvalidServiceId = 8,
  InvalidTransportType = 9,
  StaleConnection = 10,
  RdcNotExist = 11,
  InvalidGid = 12,
  InvalidLid = 13,
  InvalidSl = 14,
  InvalidTrafficClass = 15,
  InvalidHopLimit = 16,
  InvalidPacketRate = 17,
  InvalidAltGid = 18,
  InvalidAltLid = 19,
  InvalidAltSl = 20,
  InvalidAltTrafficClass = 21,
  InvalidAltHopLimit = 22,
  InvalidAltPacketRate = 23,
  PortCmRedirect = 24,
  PortRedirect = 25,
  InvalidMtu = 26,
  InsufficientResponderResources = 27,
  ConsumerDefined = 28,
  InvalidRnrRetry = 29,
  DuplicateLocalCommId = 30,
  InvalidClassVersion = 31,
  InvalidFlowLabel = 32,
  InvalidAltFlowLabel = 33,
  VendorOptionNotSupported = 35,
};

// The reason's name as IBTA table 109 words it, or nullopt for a code it does not define.
std::optional<std::string> rej_reason_name(std::uint16_t code);

inline constexpr std::size_t kCmRejAriBytes = 72;
inline constexpr std::size_t kCmRejPrivateBytes = 148;

struct CmRej {
  Be32 local_comm_id;        // 0: 0 when the REJ answers a REQ that never got an ID
  Be32 remote_comm_id;       // 4: the rejected message's local comm ID
  std::uint8_t message_byte; // 8: message rejected(2) | reserved(6)
  std::uint8_t ari_byte;     // 9: reject info length(7) | reserved(1)
  Be16 reason;               // 10
  std::array<std::uint8_t, kCmRejAriBytes> ari;                 // 12
  std::array<std::uint8_t, kCmRejPrivateBytes> private_data;    // 84

  using MessageRejected = BitField<std::uint8_t, 6, 2>;
  using RejectInfoLength = BitField<std::uint8_t, 1, 7>;

  // 3 is reserved: the parser refuses it, so after a successful parse this is a CmMessage.
  constexpr std::uint8_t message_rejected_raw() const { return read_field<MessageRejected>(message_byte); }
  constexpr CmMessage message_rejected() const { return static_cast<CmMessage>(message_rejected_raw()); }
  constexpr void set_message_rejected(CmMessage m) { write_field<MessageRejected>(message_byte, static_cast<std::uint8_t>(m)); }
  constexpr std::uint8_t reject_info_length() const { return read_field<RejectInfoLength>(ari_byte); }
  constexpr void set_reject_info_length(std::uint8_t v) { write_field<RejectInfoLength>(ari_byte, v); }
  constexpr std::uint16_t reason_code() const { return reason.get(); }
  constexpr void set_reason(RejReason r) { reason.set(static_cast<std::uint16_t>(r)); }
};
static_assert(sizeof(CmRej) == kMadDataBytes);

inline constexpr std::size_t kCmMraPrivateBytes = 222;

struct CmMra {
  Be32 local_comm_id;
  Be32 remote_comm_id;
  std::uint8_t message_byte;   // 8: message MRAed(2) | reserved(6)
  std::uint8_t timeout_byte;   // 9: service timeout(5) | reserved(3)
  std::array<std::uint8_t, kCmMraPrivateBytes> private_data;  // 10

  using MessageMraed = BitField<std::uint8_t, 6, 2>;
  using ServiceTimeout = BitField<std::uint8_t, 3, 5>;

  constexpr std::uint8_t message_mraed_raw() const { return read_field<MessageMraed>(message_byte); }
  constexpr CmMessage message_mraed() const { return static_cast<CmMessage>(message_mraed_raw()); }
  constexpr void set_message_mraed(CmMessage m) { write_field<MessageMraed>(message_byte, static_cast<std::uint8_t>(m)); }
  // Extra time the sender asks for, as 4.096 us * 2^value.
  constexpr std::uint8_t service_timeout() const { return read_field<ServiceTimeout>(timeout_byte); }
  constexpr void set_service_timeout(std::uint8_t v) { write_field<ServiceTimeout>(timeout_byte, v); }
};
static_assert(sizeof(CmMra) == kMadDataBytes);

std::string to_string(CmMessage m);
// "invalid service ID (8)", or "reason 34" for a code the table does not define.
std::string to_string(RejReason r);
std::string rej_reason_to_string(std::uint16_t code);

}  // namespace roce::proto
