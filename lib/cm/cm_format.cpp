#include "lib/cm/cm_format.hpp"

#include <algorithm>

#include "lib/cm/cm_timing.hpp"
#include "protocol/cm_disconnect.hpp"

namespace roce::cm {

using namespace proto;

namespace {

template <std::size_t N>
void copy_into(std::array<std::uint8_t, N>& field, PrivateData pd) {
  std::copy_n(pd.begin(), std::min(pd.size(), N), field.begin());
}

}  // namespace

Mad format_req(const ConnectParams& p, Ids ids, std::uint64_t local_ca_guid, std::uint8_t ca_ack_delay) {
  CmReq r{};
  r.local_comm_id.set(ids.local_id);
  r.service_id.set(p.service_id);
  r.local_ca_guid.set(local_ca_guid);
  r.local_qkey.set(p.local_qkey);
  r.set_local_qpn(p.local_qpn);
  r.set_responder_resources(p.responder_resources);
  r.set_initiator_depth(p.initiator_depth);
  r.set_remote_cm_response_timeout(p.remote_cm_response_timeout);
  r.set_transport(p.transport);
  r.set_end_to_end_flow_control(p.flow_control);
  r.set_starting_psn(p.starting_psn);
  r.set_local_cm_response_timeout(p.local_cm_response_timeout);
  r.set_retry_count(p.retry_count);
  r.partition_key.set(p.pkey);
  r.set_path_mtu(static_cast<std::uint8_t>(p.path_mtu));
  r.set_rnr_retry_count(p.rnr_retry_count);
  r.set_max_cm_retries(p.max_cm_retries);
  r.set_srq(p.srq);
  // RoCE paths cross routers (hop limit > 1): permissive LIDs, subnet local 0 (cm_format_req).
  const bool subnet_local = p.path.hop_limit <= 1;
  r.primary.local_lid.set(subnet_local ? 0 : 0xFFFF);
  r.primary.remote_lid.set(subnet_local ? 0 : 0xFFFF);
  r.primary.local_gid = p.path.local_gid;
  r.primary.remote_gid = p.path.remote_gid;
  r.primary.set_flow_label(p.path.flow_label);
  r.primary.set_packet_rate(p.path.packet_rate);
  r.primary.traffic_class = p.path.traffic_class;
  r.primary.hop_limit = p.path.hop_limit;
  r.primary.set_sl(p.path.sl);
  r.primary.set_subnet_local(subnet_local);
  r.primary.set_local_ack_timeout(cm_ack_timeout(ca_ack_delay, p.path.packet_life_time));
  copy_into(r.private_data, p.private_data);
  r.set_vendor_id(p.ece.vendor_id);
  MadHeader h = MadHeader::cm(CmAttribute::Req, ids.tid);
  h.attribute_modifier.set(p.ece.options);  // ECE (ece.hpp)
  return make_mad(h, r);
}

Mad format_rep(const AcceptParams& p, Ids ids, std::uint8_t target_ack_delay, std::uint64_t local_ca_guid) {
  CmRep r{};
  r.local_comm_id.set(ids.local_id);
  r.remote_comm_id.set(ids.remote_id);
  r.local_qkey.set(p.local_qkey);
  r.set_local_qpn(p.local_qpn);
  r.set_starting_psn(p.starting_psn);
  r.responder_resources = p.responder_resources;
  r.initiator_depth = p.initiator_depth;
  r.set_target_ack_delay(target_ack_delay);
  r.set_failover_accepted(p.failover_accepted);
  r.set_end_to_end_flow_control(p.flow_control);
  r.set_rnr_retry_count(p.rnr_retry_count);
  r.set_srq(p.srq);
  r.local_ca_guid.set(local_ca_guid);
  copy_into(r.private_data, p.private_data);
  set_rep_vendor_id(r, p.ece.vendor_id);
  MadHeader h = MadHeader::cm(CmAttribute::Rep, ids.tid);
  h.attribute_modifier.set(p.ece.options);  // ECE (ece.hpp)
  return make_mad(h, r);
}

Mad format_rtu(Ids ids, PrivateData pd) {
  CmRtu r{};
  r.local_comm_id.set(ids.local_id);
  r.remote_comm_id.set(ids.remote_id);
  copy_into(r.private_data, pd);
  return make_mad(MadHeader::cm(CmAttribute::Rtu, ids.tid), r);
}

Mad format_mra(Ids ids, CmMessage mraed, std::uint8_t service_timeout, PrivateData pd) {
  CmMra m{};
  m.local_comm_id.set(ids.local_id);
  m.remote_comm_id.set(ids.remote_id);
  m.set_message_mraed(mraed);
  m.set_service_timeout(service_timeout);
  copy_into(m.private_data, pd);
  return make_mad(MadHeader::cm(CmAttribute::Mra, ids.tid), m);
}

Mad format_rej(Ids ids, CmMessage rejected, RejReason reason, PrivateData ari, PrivateData pd) {
  CmRej r{};
  r.local_comm_id.set(ids.local_id);
  r.remote_comm_id.set(ids.remote_id);
  r.set_message_rejected(rejected);
  r.set_reason(reason);
  const auto ari_len = std::min(ari.size(), kCmRejAriBytes);
  r.set_reject_info_length(static_cast<std::uint8_t>(ari_len));
  copy_into(r.ari, ari);
  copy_into(r.private_data, pd);
  return make_mad(MadHeader::cm(CmAttribute::Rej, ids.tid), r);
}

Mad format_dreq(Ids ids, std::uint32_t remote_qpn, PrivateData pd) {
  CmDreq d{};
  d.local_comm_id.set(ids.local_id);
  d.remote_comm_id.set(ids.remote_id);
  d.set_remote_qpn(remote_qpn);
  copy_into(d.private_data, pd);
  return make_mad(MadHeader::cm(CmAttribute::Dreq, ids.tid), d);
}

Mad format_drep(Ids ids, PrivateData pd) {
  CmDrep d{};
  d.local_comm_id.set(ids.local_id);
  d.remote_comm_id.set(ids.remote_id);
  copy_into(d.private_data, pd);
  return make_mad(MadHeader::cm(CmAttribute::Drep, ids.tid), d);
}

Mad format_sidr_req(std::uint64_t tid, std::uint32_t request_id, std::uint16_t pkey, std::uint64_t service_id, PrivateData pd) {
  CmSidrReq s{};
  s.request_id.set(request_id);
  s.partition_key.set(pkey);
  s.service_id.set(service_id);
  copy_into(s.private_data, pd);
  return make_mad(MadHeader::cm(CmAttribute::SidrReq, tid), s);
}

Mad format_sidr_rep(std::uint64_t tid, std::uint32_t request_id, std::uint64_t service_id, const SidrReplyParams& p) {
  CmSidrRep s{};
  s.request_id.set(request_id);
  s.set_status(p.status);
  s.info_length = static_cast<std::uint8_t>(std::min(p.info.size(), kCmSidrRepInfoBytes));
  s.set_qpn(p.qpn);
  s.service_id.set(service_id);
  s.qkey.set(p.qkey);
  copy_into(s.additional_info, p.info);
  copy_into(s.private_data, p.private_data);
  return make_mad(MadHeader::cm(CmAttribute::SidrRep, tid), s);
}

Mad format_class_port_info(const MadHeader& request, const ClassPortInfo& info) {
  MadHeader h = request;
  h.set_method(MadMethod::GetResp);
  h.status.set(0);
  CmClassPortInfo c{};
  c.info = info;
  return make_mad(h, c);
}

Mad format_status_reply(const MadHeader& request, MadStatus status) {
  MadHeader h = request;
  h.set_method(MadMethod::GetResp);
  h.status.set(static_cast<std::uint16_t>(status));
  return make_mad(h, std::array<std::uint8_t, kMadDataBytes>{});
}

}  // namespace roce::cm
