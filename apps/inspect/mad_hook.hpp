// QP1 (GSI) frames carry management datagrams, among them the CM messages of RDMA CM (REQ, REP,
// RTU, DREQ...). roce-inspect marks them (field `gsi`, their DETH decoded) and hands their
// payload to the describer set here (roce-inspect's main sets cm_mad_view.hpp's, which reads
// them with protocol/'s MAD parser); what it returns becomes the `mad` and `cm.*` fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "protocol/be.hpp"

namespace roce::inspect {

// What a describer found in a MAD: a line for the table, and the values the fields show.
struct MadView {
  std::string text;
  std::uint8_t mgmt_class = 0;
  std::uint16_t attribute = 0;
  std::uint64_t tid = 0;
  std::optional<std::uint32_t> local_comm, remote_comm;
  std::optional<std::uint32_t> qpn, start_psn;  // CM REQ and REP: the sender's QP and starting PSN
  std::optional<std::uint64_t> service_id;      // CM REQ
  std::optional<std::uint16_t> rej_reason;      // CM REJ
};

// The MAD (payload of a GSI datagram, 256 bytes), or nullopt when it cannot say.
using MadDescriber = std::optional<MadView> (*)(proto::ByteSpan mad);

void set_mad_describer(MadDescriber d);
MadDescriber mad_describer();

}  // namespace roce::inspect
