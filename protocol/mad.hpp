// Management datagrams (IBA 13.4): the 24-byte common header every MAD starts with, and the
// values the Communication Manager class uses. A MAD is always 256 bytes; on RoCEv2 it rides
// in a UD SEND_ONLY to QP1 (mad_frame.hpp). CM attribute layouts are in cm_*.hpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "protocol/be.hpp"
#include "protocol/bitfield.hpp"

namespace roce::proto {

inline constexpr std::size_t kMadBytes = 256;
inline constexpr std::size_t kMadHeaderBytes = 24;
inline constexpr std::size_t kMadDataBytes = kMadBytes - kMadHeaderBytes;  // 232: a CM message

inline constexpr std::uint8_t kMadBaseVersion = 0x01;
inline constexpr std::uint8_t kMgmtClassCm = 0x07;
inline constexpr std::uint8_t kCmClassVersion = 0x02;  // IB_CM_CLASS_VERSION

using Mad = std::array<std::byte, kMadBytes>;

// Method byte: bit 7 says "response", bits 6..0 the method (ib_mad.h).
enum class MadMethod : std::uint8_t {
  Get = 0x01,
  Set = 0x02,
  Send = 0x03,
  Trap = 0x05,
  Report = 0x06,
  TrapRepress = 0x07,
  GetResp = 0x81,
  ReportResp = 0x86,
};
inline constexpr std::uint8_t kMadMethodResponse = 0x80;

// Generic MAD status (IBA 13.4.7): bits 4..2 carry the code, bit 0 "busy", bit 1 "redirect".
enum class MadStatus : std::uint16_t {
  Ok = 0x0000,
  Busy = 0x0001,
  Redirect = 0x0002,
  BadVersion = 0x0004,
  UnsupportedMethod = 0x0008,
  UnsupportedMethodAttribute = 0x000C,
  InvalidAttributeValue = 0x001C,
};

// CM attribute IDs (IBA table 104; ib_cm.h).
enum class CmAttribute : std::uint16_t {
  ClassPortInfo = 0x0001,
  Req = 0x0010,
  Mra = 0x0011,
  Rej = 0x0012,
  Rep = 0x0013,
  Rtu = 0x0014,
  Dreq = 0x0015,
  Drep = 0x0016,
  SidrReq = 0x0017,
  SidrRep = 0x0018,
  Lap = 0x0019,
  Apr = 0x001A,
};

// True for the attribute IDs the CM class defines.
constexpr bool is_cm_attribute(std::uint16_t id) {
  return id == static_cast<std::uint16_t>(CmAttribute::ClassPortInfo) || (id >= 0x0010 && id <= 0x001A);
}

struct MadHeader {
  std::uint8_t base_version;
  std::uint8_t mgmt_class;
  std::uint8_t class_version;
  std::uint8_t method_byte;  // R(1) | method(7)
  Be16 status;
  Be16 class_specific;
  Be64 transaction_id;
  Be16 attribute_id;
  Be16 reserved;
  Be32 attribute_modifier;

  using Response = BitField<std::uint8_t, 7, 1>;

  constexpr bool is_response() const { return Response::get(method_byte) != 0; }
  constexpr MadMethod method() const { return static_cast<MadMethod>(method_byte); }
  constexpr void set_method(MadMethod m) { method_byte = static_cast<std::uint8_t>(m); }
  constexpr std::uint16_t attribute() const { return attribute_id.get(); }
  constexpr void set_attribute(CmAttribute a) { attribute_id.set(static_cast<std::uint16_t>(a)); }
  constexpr std::uint64_t tid() const { return transaction_id.get(); }

  // A CM header as cm_format_mad_hdr() writes it: version 1, class 0x07, version 2, Send.
  static constexpr MadHeader cm(CmAttribute attr, std::uint64_t tid, MadMethod method = MadMethod::Send) {
    MadHeader h{};
    h.base_version = kMadBaseVersion;
    h.mgmt_class = kMgmtClassCm;
    h.class_version = kCmClassVersion;
    h.set_method(method);
    h.transaction_id.set(tid);
    h.set_attribute(attr);
    return h;
  }
};
static_assert(sizeof(MadHeader) == kMadHeaderBytes);

// A whole MAD: the header, then one attribute's 232-byte payload struct (cm_*.hpp).
template <typename T>
Mad make_mad(const MadHeader& header, const T& payload) noexcept {
  static_assert(sizeof(T) == kMadDataBytes);
  Mad m{};
  store_header(MutableByteSpan(m), 0, header);
  store_header(MutableByteSpan(m), kMadHeaderBytes, payload);
  return m;
}

std::string to_string(MadMethod m);
std::string to_string(MadStatus s);
std::string to_string(CmAttribute a);
// "REQ", "ClassPortInfo", or "0xNNNN" for an ID the CM class does not define.
std::string cm_attribute_name(std::uint16_t id);
// The name Wireshark's "InfiniBand CM" dissector gives the attribute ("ConnectRequest",
// "MsgRcptAck", ...), or "(Unknown CM Attribute)" as it says for the others.
std::string cm_attribute_dissector_name(std::uint16_t id);

}  // namespace roce::proto
