// Names for the enums of the MAD and CM wire formats, for traces, tools and test messages.
#include <array>
#include <cstdio>
#include <string_view>

#include "protocol/cm_alternate_path.hpp"
#include "protocol/cm_connect.hpp"
#include "protocol/cm_reject.hpp"
#include "protocol/cm_sidr.hpp"
#include "protocol/cma_header.hpp"
#include "protocol/gid.hpp"
#include "protocol/mad.hpp"
#include "protocol/mad_parser.hpp"

namespace roce::proto {

namespace {

std::string hex(unsigned v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", digits, v);
  return buf;
}

struct CodeName {
  std::uint16_t code;
  std::string_view name;
};

// IBTA table 109 (REJ reasons), worded as the kernel's ibcm_reject_msg() words them.
constexpr std::array<CodeName, 34> kRejReasons{{
    {1, "no QP"},
    {2, "no EEC"},
    {3, "no resources"},
    {4, "timeout"},
    {5, "unsupported request"},
    {6, "invalid comm ID"},
    {7, "invalid comm instance"},
    {8, "invalid service ID"},
    {9, "invalid transport type"},
    {10, "stale connection"},
    {11, "RDC does not exist"},
    {12, "invalid GID"},
    {13, "invalid LID"},
    {14, "invalid SL"},
    {15, "invalid traffic class"},
    {16, "invalid hop limit"},
    {17, "invalid packet rate"},
    {18, "invalid alternate GID"},
    {19, "invalid alternate LID"},
    {20, "invalid alternate SL"},
    {21, "invalid alternate traffic class"},
    {22, "invalid alternate hop limit"},
    {23, "invalid alternate packet rate"},
    {24, "port CM redirect"},
    {25, "port redirect"},
    {26, "invalid MTU"},
    {27, "insufficient responder resources"},
    {28, "consumer defined"},
    {29, "invalid RNR retry"},
    {30, "duplicate local comm ID"},
    {31, "invalid class version"},
    {32, "invalid flow label"},
    {33, "invalid alternate flow label"},
    {35, "vendor option not supported"},
}};

constexpr std::array<std::string_view, 6> kSidrStatus{
    "success", "service ID unsupported", "rejected", "no QP", "redirect", "unsupported version"};

constexpr std::array<std::string_view, 14> kAprStatus{
    "loaded",          "invalid comm ID",   "unsupported",           "rejected",          "redirect",
    "is current path", "invalid QPN/EECN",  "invalid LID",           "invalid GID",       "invalid flow label",
    "invalid traffic class", "invalid hop limit", "invalid packet rate", "invalid SL"};

}  // namespace

std::string to_string(MadMethod m) {
  switch (m) {
    case MadMethod::Get: return "Get";
    case MadMethod::Set: return "Set";
    case MadMethod::Send: return "Send";
    case MadMethod::Trap: return "Trap";
    case MadMethod::Report: return "Report";
    case MadMethod::TrapRepress: return "TrapRepress";
    case MadMethod::GetResp: return "GetResp";
    case MadMethod::ReportResp: return "ReportResp";
  }
  return "method " + hex(static_cast<unsigned>(m), 2);
}

std::string to_string(MadStatus s) {
  switch (s) {
    case MadStatus::Ok: return "ok";
    case MadStatus::Busy: return "busy";
    case MadStatus::Redirect: return "redirect";
    case MadStatus::BadVersion: return "bad-version";
    case MadStatus::UnsupportedMethod: return "unsupported-method";
    case MadStatus::UnsupportedMethodAttribute: return "unsupported-method-attribute";
    case MadStatus::InvalidAttributeValue: return "invalid-attribute-value";
  }
  return "status " + hex(static_cast<unsigned>(s), 4);
}

std::string to_string(CmAttribute a) { return cm_attribute_name(static_cast<std::uint16_t>(a)); }

std::string cm_attribute_name(std::uint16_t id) {
  switch (static_cast<CmAttribute>(id)) {
    case CmAttribute::ClassPortInfo: return "ClassPortInfo";
    case CmAttribute::Req: return "REQ";
    case CmAttribute::Mra: return "MRA";
    case CmAttribute::Rej: return "REJ";
    case CmAttribute::Rep: return "REP";
    case CmAttribute::Rtu: return "RTU";
    case CmAttribute::Dreq: return "DREQ";
    case CmAttribute::Drep: return "DREP";
    case CmAttribute::SidrReq: return "SIDR_REQ";
    case CmAttribute::SidrRep: return "SIDR_REP";
    case CmAttribute::Lap: return "LAP";
    case CmAttribute::Apr: return "APR";
  }
  return hex(id, 4);
}

std::string cm_attribute_dissector_name(std::uint16_t id) {
  switch (static_cast<CmAttribute>(id)) {
    case CmAttribute::ClassPortInfo: return "ClassPortInfo";
    case CmAttribute::Req: return "ConnectRequest";
    case CmAttribute::Mra: return "MsgRcptAck";
    case CmAttribute::Rej: return "ConnectReject";
    case CmAttribute::Rep: return "ConnectReply";
    case CmAttribute::Rtu: return "ReadyToUse";
    case CmAttribute::Dreq: return "DisconnectRequest";
    case CmAttribute::Drep: return "DisconnectReply";
    case CmAttribute::SidrReq: return "ServiceIDResReq";
    case CmAttribute::SidrRep: return "ServiceIDResReqResp";
    case CmAttribute::Lap: return "LoadAlternatePath";
    case CmAttribute::Apr: return "AlternatePathResponse";
  }
  return "(Unknown CM Attribute)";
}

std::string to_string(CmTransport t) {
  switch (t) {
    case CmTransport::Rc: return "RC";
    case CmTransport::Uc: return "UC";
    case CmTransport::Rd: return "RD";
    case CmTransport::Extended: return "extended";
  }
  return "transport " + std::to_string(static_cast<unsigned>(t));
}

std::string to_string(CmMessage m) {
  switch (m) {
    case CmMessage::Req: return "REQ";
    case CmMessage::Rep: return "REP";
    case CmMessage::Other: return "other";
  }
  return "reserved " + std::to_string(static_cast<unsigned>(m));
}

std::optional<std::string> rej_reason_name(std::uint16_t code) {
  for (const auto& r : kRejReasons)
    if (r.code == code) return std::string(r.name);
  return std::nullopt;
}

std::string rej_reason_to_string(std::uint16_t code) {
  if (auto n = rej_reason_name(code)) return *n + " (" + std::to_string(code) + ")";
  return "reason " + std::to_string(code);
}

std::string to_string(RejReason r) { return rej_reason_to_string(static_cast<std::uint16_t>(r)); }

std::optional<std::string> sidr_status_name(std::uint8_t code) {
  if (code < kSidrStatus.size()) return std::string(kSidrStatus[code]);
  return std::nullopt;
}

std::string to_string(SidrStatus s) {
  const auto code = static_cast<std::uint8_t>(s);
  return sidr_status_name(code).value_or("status " + std::to_string(code));
}

std::optional<std::string> apr_status_name(std::uint8_t code) {
  if (code < kAprStatus.size()) return std::string(kAprStatus[code]);
  return std::nullopt;
}

std::string to_string(AprStatus s) {
  const auto code = static_cast<std::uint8_t>(s);
  return apr_status_name(code).value_or("status " + std::to_string(code));
}

std::string to_string(MadError e) {
  switch (e) {
    case MadError::None: return "ok";
    case MadError::Truncated: return "truncated";
    case MadError::WrongLength: return "wrong-length";
    case MadError::BadBaseVersion: return "bad-base-version";
    case MadError::NotCmClass: return "not-cm-class";
    case MadError::BadClassVersion: return "bad-class-version";
    case MadError::UnknownAttribute: return "unknown-attribute";
    case MadError::UnsupportedMethod: return "unsupported-method";
    case MadError::ReservedValue: return "reserved-value";
    case MadError::InfoLengthTooLarge: return "info-length-too-large";
    case MadError::Count: break;
  }
  return "unknown";
}

std::string to_string(RdmaPortSpace ps) {
  switch (ps) {
    case RdmaPortSpace::Ipoib: return "IPoIB";
    case RdmaPortSpace::Tcp: return "TCP";
    case RdmaPortSpace::Udp: return "UDP";
    case RdmaPortSpace::Ib: return "IB";
  }
  return "port space " + hex(static_cast<unsigned>(ps), 4);
}

std::string to_string(CmaHeaderError e) {
  switch (e) {
    case CmaHeaderError::None: return "ok";
    case CmaHeaderError::TooShort: return "too-short";
    case CmaHeaderError::BadVersion: return "bad-cma-version";
    case CmaHeaderError::BadIpVersion: return "bad-ip-version";
  }
  return "unknown";
}

std::string gid_to_string(const Gid& g) {
  if (auto v4 = ipv4_of(g)) return ipv4_to_string(*v4);
  return ipv6_to_string(g);
}

}  // namespace roce::proto
