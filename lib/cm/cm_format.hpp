// Whole CM MADs, formatted as Linux's cm_format_*() lay them out: header (TID, attribute) and
// payload from the connection's values. Private data longer than the message takes is cut
// by the caller's checks (CommunicationManager refuses it with EINVAL first).
#pragma once

#include <cstdint>
#include <span>

#include "lib/cm/cm_types.hpp"
#include "protocol/class_port_info.hpp"
#include "protocol/mad.hpp"

namespace roce::cm {

using PrivateData = std::span<const std::uint8_t>;

struct Ids {
  std::uint64_t tid = 0;
  std::uint32_t local_id = 0;
  std::uint32_t remote_id = 0;
};

Mad format_req(const ConnectParams& p, Ids ids, std::uint64_t local_ca_guid, std::uint8_t ca_ack_delay);
Mad format_rep(const AcceptParams& p, Ids ids, std::uint8_t target_ack_delay, std::uint64_t local_ca_guid);
Mad format_rtu(Ids ids, PrivateData pd);
Mad format_mra(Ids ids, proto::CmMessage mraed, std::uint8_t service_timeout, PrivateData pd);
Mad format_rej(Ids ids, proto::CmMessage rejected, proto::RejReason reason, PrivateData ari, PrivateData pd);
Mad format_dreq(Ids ids, std::uint32_t remote_qpn, PrivateData pd);
Mad format_drep(Ids ids, PrivateData pd);
Mad format_sidr_req(std::uint64_t tid, std::uint32_t request_id, std::uint16_t pkey, std::uint64_t service_id, PrivateData pd);
Mad format_sidr_rep(std::uint64_t tid, std::uint32_t request_id, std::uint64_t service_id, const SidrReplyParams& p);
// The GetResp to a Get(ClassPortInfo) with the given request header.
Mad format_class_port_info(const proto::MadHeader& request, const proto::ClassPortInfo& info);
// A GetResp carrying only an error status, for a Get/Set the CM does not serve.
Mad format_status_reply(const proto::MadHeader& request, proto::MadStatus status);

}  // namespace roce::cm
