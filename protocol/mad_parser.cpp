#include "protocol/mad_parser.hpp"

#include "protocol/cm_alternate_path.hpp"
#include "protocol/cm_reject.hpp"
#include "protocol/cm_sidr.hpp"

namespace roce::proto {

bool method_allowed(CmAttribute a, std::uint8_t method_byte) noexcept {
  const auto m = static_cast<MadMethod>(method_byte);
  if (a == CmAttribute::ClassPortInfo) return m == MadMethod::Get || m == MadMethod::Set || m == MadMethod::GetResp;
  return m == MadMethod::Send;
}

namespace {

// Checks of fields whose width admits values the tables reserve.
MadError check_attribute_fields(const ParsedMad& p) noexcept {
  switch (p.attribute) {
    case CmAttribute::Rej: {
      const auto rej = p.as<CmRej>();
      if (rej.message_rejected_raw() > static_cast<std::uint8_t>(CmMessage::Other)) return MadError::ReservedValue;
      if (rej.reject_info_length() > kCmRejAriBytes) return MadError::InfoLengthTooLarge;
      return MadError::None;
    }
    case CmAttribute::Mra:
      if (p.as<CmMra>().message_mraed_raw() > static_cast<std::uint8_t>(CmMessage::Other)) return MadError::ReservedValue;
      return MadError::None;
    case CmAttribute::SidrRep:
      if (p.as<CmSidrRep>().info_length > kCmSidrRepInfoBytes) return MadError::InfoLengthTooLarge;
      return MadError::None;
    case CmAttribute::Apr:
      if (p.as<CmApr>().info_length > kCmAprInfoBytes) return MadError::InfoLengthTooLarge;
      return MadError::None;
    default:
      return MadError::None;
  }
}

}  // namespace

MadError parse_mad(ByteSpan mad, ParsedMad& out) noexcept {
  out = ParsedMad{};
  if (mad.size() < kMadHeaderBytes) return MadError::Truncated;
  out.header = load_header<MadHeader>(mad, 0);
  out.has_header = true;
  if (mad.size() < kMadBytes) return MadError::Truncated;
  if (mad.size() > kMadBytes) return MadError::WrongLength;
  const MadHeader& h = out.header;
  if (h.base_version != kMadBaseVersion) return MadError::BadBaseVersion;
  if (h.mgmt_class != kMgmtClassCm) return MadError::NotCmClass;
  if (h.class_version != kCmClassVersion) return MadError::BadClassVersion;
  if (!is_cm_attribute(h.attribute())) return MadError::UnknownAttribute;
  out.attribute = static_cast<CmAttribute>(h.attribute());
  if (!method_allowed(out.attribute, h.method_byte)) return MadError::UnsupportedMethod;
  out.data = mad.subspan(kMadHeaderBytes, kMadDataBytes);
  return check_attribute_fields(out);
}

}  // namespace roce::proto
