#include "apps/inspect/cm_mad_view.hpp"

#include <cinttypes>
#include <cstdio>

#include "protocol/cm_connect.hpp"
#include "protocol/cm_disconnect.hpp"
#include "protocol/cm_reject.hpp"
#include "protocol/mad_parser.hpp"

namespace roce::inspect {
namespace {

using namespace roce::proto;

std::string hex(std::uint64_t v, int digits) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%0*" PRIx64, digits, v);
  return b;
}

}  // namespace

std::optional<MadView> describe_cm_mad(ByteSpan mad) {
  ParsedMad m;
  const MadError e = parse_mad(mad, m);
  if (!m.has_header) return std::nullopt;
  const MadHeader& h = m.header;
  MadView v;
  v.mgmt_class = h.mgmt_class;
  v.attribute = h.attribute();
  v.tid = h.tid();
  if (e == MadError::NotCmClass) {
    v.text = "MAD class " + hex(h.mgmt_class, 2) + " method " + hex(h.method_byte, 2) + " attribute " + hex(h.attribute(), 4) +
             " TID " + hex(h.tid(), 16);
    return v;
  }
  v.text = "CM " + cm_attribute_name(h.attribute()) + " (" + to_string(h.method()) + ") TID " + hex(h.tid(), 16);
  if (e != MadError::None) {
    v.text += " [" + to_string(e) + "]";
    return v;
  }
  auto ids = [&v](const auto& r) {
    v.local_comm = r.local_comm_id.get();
    if constexpr (requires { r.remote_comm_id; }) v.remote_comm = r.remote_comm_id.get();
  };
  switch (m.attribute) {
    case CmAttribute::Req: {
      const auto r = m.as<CmReq>();
      ids(r);
      v.service_id = r.service_id.get();
      v.qpn = r.local_qpn();
      v.start_psn = r.starting_psn();
      break;
    }
    case CmAttribute::Rep: {
      const auto r = m.as<CmRep>();
      ids(r);
      v.qpn = r.local_qpn();
      v.start_psn = r.starting_psn();
      break;
    }
    case CmAttribute::Rtu: ids(m.as<CmRtu>()); break;
    case CmAttribute::Rej: {
      const auto r = m.as<CmRej>();
      ids(r);
      v.rej_reason = r.reason_code();
      break;
    }
    case CmAttribute::Dreq: ids(m.as<CmDreq>()); break;
    case CmAttribute::Drep: ids(m.as<CmDrep>()); break;
    default: break;
  }
  if (v.local_comm) v.text += " local comm " + hex(*v.local_comm, 8);
  if (v.remote_comm) v.text += " remote comm " + hex(*v.remote_comm, 8);
  if (v.service_id) v.text += " service ID " + hex(*v.service_id, 16);
  if (v.qpn) v.text += " QPN " + hex(*v.qpn, 6) + " starting PSN " + std::to_string(*v.start_psn);
  if (v.rej_reason) v.text += " reason " + rej_reason_to_string(*v.rej_reason);
  return v;
}

}  // namespace roce::inspect
