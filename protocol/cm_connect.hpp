// The connection-establishment messages of the IB Communication Manager (IBA 12.6.5, 12.6.8,
// 12.6.9; tables 106, 110, 111): REQ, REP and RTU, as the 232 bytes after the MAD header.
// Offsets in the comments are from the start of that CM payload (MAD byte 24).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "protocol/be.hpp"
#include "protocol/bitfield.hpp"
#include "protocol/gid.hpp"
#include "protocol/mad.hpp"

namespace roce::proto {

// REQ Transport Service Type (with Extended Transport Type 1 when it is 3: XRC).
enum class CmTransport : std::uint8_t { Rc = 0, Uc = 1, Rd = 2, Extended = 3 };
inline constexpr std::uint8_t kCmExtendedTransportXrc = 1;

// One path of a REQ (primary at 52, alternate at 96): 44 bytes.
struct CmReqPath {
  Be16 local_lid;          // 0xFFFF (permissive) on RoCE when the hop limit is above 1
  Be16 remote_lid;
  Gid local_gid;           // the active side's GID
  Gid remote_gid;          // the passive side's GID
  Be32 flow_label_word;    // flow label(20) | reserved(6) | packet rate(6)
  std::uint8_t traffic_class;
  std::uint8_t hop_limit;
  std::uint8_t sl_byte;    // SL(4) | subnet local(1) | reserved(3)
  std::uint8_t ack_byte;   // local ACK timeout(5) | reserved(3); the alternate's bit 2 is SAP supported

  using FlowLabel = BitField<std::uint32_t, 12, 20>;
  using PacketRate = BitField<std::uint32_t, 0, 6>;
  using Sl = BitField<std::uint8_t, 4, 4>;
  using SubnetLocal = BitField<std::uint8_t, 3, 1>;
  using LocalAckTimeout = BitField<std::uint8_t, 3, 5>;

  constexpr std::uint32_t flow_label() const { return read_field<FlowLabel>(flow_label_word); }
  constexpr void set_flow_label(std::uint32_t v) { write_field<FlowLabel>(flow_label_word, v); }
  constexpr std::uint8_t packet_rate() const { return static_cast<std::uint8_t>(read_field<PacketRate>(flow_label_word)); }
  constexpr void set_packet_rate(std::uint8_t v) { write_field<PacketRate>(flow_label_word, v); }
  constexpr std::uint8_t sl() const { return read_field<Sl>(sl_byte); }
  constexpr void set_sl(std::uint8_t v) { write_field<Sl>(sl_byte, v); }
  constexpr bool subnet_local() const { return read_field<SubnetLocal>(sl_byte) != 0; }
  constexpr void set_subnet_local(bool v) { write_field<SubnetLocal>(sl_byte, v); }
  constexpr std::uint8_t local_ack_timeout() const { return read_field<LocalAckTimeout>(ack_byte); }
  constexpr void set_local_ack_timeout(std::uint8_t v) { write_field<LocalAckTimeout>(ack_byte, v); }
};
static_assert(sizeof(CmReqPath) == 44);

inline constexpr std::size_t kCmReqPrivateBytes = 92;

struct CmReq {
  Be32 local_comm_id;      // 0
  Be32 vendor_word;        // 4: reserved(8) | ECE vendor ID(24) (Linux >= 5.9)
  Be64 service_id;         // 8
  Be64 local_ca_guid;      // 16
  Be32 reserved24;         // 24
  Be32 local_qkey;         // 28
  Be32 qpn_word;           // 32: local QPN(24) | responder resources(8)
  Be32 eecn_word;          // 36: local EECN(24) | initiator depth(8)
  Be32 remote_eecn_word;   // 40: remote EECN(24) | remote CM response timeout(5) | transport(2) | e2e flow control(1)
  Be32 psn_word;           // 44: starting PSN(24) | local CM response timeout(5) | retry count(3)
  Be16 partition_key;      // 48
  std::uint8_t mtu_byte;   // 50: path MTU(4) | RDC exists(1) | RNR retry count(3)
  std::uint8_t retry_byte; // 51: max CM retries(4) | SRQ(1) | extended transport type(3)
  CmReqPath primary;       // 52
  CmReqPath alternate;     // 96
  std::array<std::uint8_t, kCmReqPrivateBytes> private_data;  // 140

  using VendorId = BitField<std::uint32_t, 0, 24>;
  using LocalQpn = BitField<std::uint32_t, 8, 24>;
  using ResponderResources = BitField<std::uint32_t, 0, 8>;
  using LocalEecn = BitField<std::uint32_t, 8, 24>;
  using InitiatorDepth = BitField<std::uint32_t, 0, 8>;
  using RemoteEecn = BitField<std::uint32_t, 8, 24>;
  using RemoteCmResponseTimeout = BitField<std::uint32_t, 3, 5>;
  using TransportServiceType = BitField<std::uint32_t, 1, 2>;
  using EndToEndFlowControl = BitField<std::uint32_t, 0, 1>;
  using StartingPsn = BitField<std::uint32_t, 8, 24>;
  using LocalCmResponseTimeout = BitField<std::uint32_t, 3, 5>;
  using RetryCount = BitField<std::uint32_t, 0, 3>;
  using PathMtuField = BitField<std::uint8_t, 4, 4>;
  using RdcExists = BitField<std::uint8_t, 3, 1>;
  using RnrRetryCount = BitField<std::uint8_t, 0, 3>;
  using MaxCmRetries = BitField<std::uint8_t, 4, 4>;
  using Srq = BitField<std::uint8_t, 3, 1>;
  using ExtendedTransportType = BitField<std::uint8_t, 0, 3>;
  using SapSupported = BitField<std::uint8_t, 2, 1>;  // in the alternate path's last byte

  constexpr std::uint32_t vendor_id() const { return read_field<VendorId>(vendor_word); }
  constexpr void set_vendor_id(std::uint32_t v) { write_field<VendorId>(vendor_word, v); }
  constexpr std::uint32_t local_qpn() const { return read_field<LocalQpn>(qpn_word); }
  constexpr void set_local_qpn(std::uint32_t v) { write_field<LocalQpn>(qpn_word, v); }
  constexpr std::uint8_t responder_resources() const { return static_cast<std::uint8_t>(read_field<ResponderResources>(qpn_word)); }
  constexpr void set_responder_resources(std::uint8_t v) { write_field<ResponderResources>(qpn_word, v); }
  constexpr std::uint32_t local_eecn() const { return read_field<LocalEecn>(eecn_word); }
  constexpr void set_local_eecn(std::uint32_t v) { write_field<LocalEecn>(eecn_word, v); }
  constexpr std::uint8_t initiator_depth() const { return static_cast<std::uint8_t>(read_field<InitiatorDepth>(eecn_word)); }
  constexpr void set_initiator_depth(std::uint8_t v) { write_field<InitiatorDepth>(eecn_word, v); }
  constexpr std::uint32_t remote_eecn() const { return read_field<RemoteEecn>(remote_eecn_word); }
  constexpr void set_remote_eecn(std::uint32_t v) { write_field<RemoteEecn>(remote_eecn_word, v); }
  constexpr std::uint8_t remote_cm_response_timeout() const {
    return static_cast<std::uint8_t>(read_field<RemoteCmResponseTimeout>(remote_eecn_word));
  }
  constexpr void set_remote_cm_response_timeout(std::uint8_t v) { write_field<RemoteCmResponseTimeout>(remote_eecn_word, v); }
  constexpr CmTransport transport() const {
    return static_cast<CmTransport>(read_field<TransportServiceType>(remote_eecn_word));
  }
  constexpr void set_transport(CmTransport t) { write_field<TransportServiceType>(remote_eecn_word, static_cast<std::uint8_t>(t)); }
  constexpr bool end_to_end_flow_control() const { return read_field<EndToEndFlowControl>(remote_eecn_word) != 0; }
  constexpr void set_end_to_end_flow_control(bool v) { write_field<EndToEndFlowControl>(remote_eecn_word, v); }
  constexpr std::uint32_t starting_psn() const { return read_field<StartingPsn>(psn_word); }
  constexpr void set_starting_psn(std::uint32_t v) { write_field<StartingPsn>(psn_word, v); }
  constexpr std::uint8_t local_cm_response_timeout() const {
    return static_cast<std::uint8_t>(read_field<LocalCmResponseTimeout>(psn_word));
  }
  constexpr void set_local_cm_response_timeout(std::uint8_t v) { write_field<LocalCmResponseTimeout>(psn_word, v); }
  constexpr std::uint8_t retry_count() const { return static_cast<std::uint8_t>(read_field<RetryCount>(psn_word)); }
  constexpr void set_retry_count(std::uint8_t v) { write_field<RetryCount>(psn_word, v); }
  // The IBA MTU enumeration (1 = 256 ... 5 = 4096); see mtu.hpp.
  constexpr std::uint8_t path_mtu() const { return read_field<PathMtuField>(mtu_byte); }
  constexpr void set_path_mtu(std::uint8_t v) { write_field<PathMtuField>(mtu_byte, v); }
  constexpr bool rdc_exists() const { return read_field<RdcExists>(mtu_byte) != 0; }
  constexpr void set_rdc_exists(bool v) { write_field<RdcExists>(mtu_byte, v); }
  constexpr std::uint8_t rnr_retry_count() const { return read_field<RnrRetryCount>(mtu_byte); }
  constexpr void set_rnr_retry_count(std::uint8_t v) { write_field<RnrRetryCount>(mtu_byte, v); }
  constexpr std::uint8_t max_cm_retries() const { return read_field<MaxCmRetries>(retry_byte); }
  constexpr void set_max_cm_retries(std::uint8_t v) { write_field<MaxCmRetries>(retry_byte, v); }
  constexpr bool srq() const { return read_field<Srq>(retry_byte) != 0; }
  constexpr void set_srq(bool v) { write_field<Srq>(retry_byte, v); }
  constexpr std::uint8_t extended_transport() const { return read_field<ExtendedTransportType>(retry_byte); }
  constexpr void set_extended_transport(std::uint8_t v) { write_field<ExtendedTransportType>(retry_byte, v); }
  constexpr bool sap_supported() const { return read_field<SapSupported>(alternate.ack_byte) != 0; }
  constexpr void set_sap_supported(bool v) { write_field<SapSupported>(alternate.ack_byte, v); }
  // Linux's cm_req_has_alt_path(): an alternate path is present when its local LID is set.
  constexpr bool has_alternate_path() const { return alternate.local_lid.get() != 0; }
};
static_assert(sizeof(CmReq) == kMadDataBytes);

inline constexpr std::size_t kCmRepPrivateBytes = 196;

struct CmRep {
  Be32 local_comm_id;      // 0
  Be32 remote_comm_id;     // 4: the REQ's local comm ID
  Be32 local_qkey;         // 8
  Be32 qpn_word;           // 12: local QPN(24) | reserved(8)
  Be32 eecn_word;          // 16: local EE context(24) | reserved(8)
  Be32 psn_word;           // 20: starting PSN(24) | reserved(8)
  std::uint8_t responder_resources;  // 24
  std::uint8_t initiator_depth;      // 25
  std::uint8_t ack_delay_byte;       // 26: target ACK delay(5) | failover accepted(2) | e2e flow control(1)
  std::uint8_t rnr_byte;             // 27: RNR retry count(3) | SRQ(1) | reserved(4)
  Be64 local_ca_guid;      // 28
  std::array<std::uint8_t, kCmRepPrivateBytes> private_data;  // 36

  using LocalQpn = BitField<std::uint32_t, 8, 24>;
  using LocalEecn = BitField<std::uint32_t, 8, 24>;
  using StartingPsn = BitField<std::uint32_t, 8, 24>;
  using TargetAckDelay = BitField<std::uint8_t, 3, 5>;
  using FailoverAccepted = BitField<std::uint8_t, 1, 2>;
  using EndToEndFlowControl = BitField<std::uint8_t, 0, 1>;
  using RnrRetryCount = BitField<std::uint8_t, 5, 3>;
  using Srq = BitField<std::uint8_t, 4, 1>;

  constexpr std::uint32_t local_qpn() const { return read_field<LocalQpn>(qpn_word); }
  constexpr void set_local_qpn(std::uint32_t v) { write_field<LocalQpn>(qpn_word, v); }
  constexpr std::uint32_t local_eecn() const { return read_field<LocalEecn>(eecn_word); }
  constexpr void set_local_eecn(std::uint32_t v) { write_field<LocalEecn>(eecn_word, v); }
  constexpr std::uint32_t starting_psn() const { return read_field<StartingPsn>(psn_word); }
  constexpr void set_starting_psn(std::uint32_t v) { write_field<StartingPsn>(psn_word, v); }
  constexpr std::uint8_t target_ack_delay() const { return read_field<TargetAckDelay>(ack_delay_byte); }
  constexpr void set_target_ack_delay(std::uint8_t v) { write_field<TargetAckDelay>(ack_delay_byte, v); }
  constexpr std::uint8_t failover_accepted() const { return read_field<FailoverAccepted>(ack_delay_byte); }
  constexpr void set_failover_accepted(std::uint8_t v) { write_field<FailoverAccepted>(ack_delay_byte, v); }
  constexpr bool end_to_end_flow_control() const { return read_field<EndToEndFlowControl>(ack_delay_byte) != 0; }
  constexpr void set_end_to_end_flow_control(bool v) { write_field<EndToEndFlowControl>(ack_delay_byte, v); }
  constexpr std::uint8_t rnr_retry_count() const { return read_field<RnrRetryCount>(rnr_byte); }
  constexpr void set_rnr_retry_count(std::uint8_t v) { write_field<RnrRetryCount>(rnr_byte, v); }
  constexpr bool srq() const { return read_field<Srq>(rnr_byte) != 0; }
  constexpr void set_srq(bool v) { write_field<Srq>(rnr_byte, v); }
};
static_assert(sizeof(CmRep) == kMadDataBytes);

inline constexpr std::size_t kCmRtuPrivateBytes = 224;

struct CmRtu {
  Be32 local_comm_id;
  Be32 remote_comm_id;
  std::array<std::uint8_t, kCmRtuPrivateBytes> private_data;
};
static_assert(sizeof(CmRtu) == kMadDataBytes);

std::string to_string(CmTransport t);

}  // namespace roce::proto
