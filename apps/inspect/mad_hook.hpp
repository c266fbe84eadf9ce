// QP1 (GSI) frames carry management datagrams, among them the CM messages of RDMA CM (REQ, REP,
// RTU, DREQ...). roce-inspect marks them (field `gsi`, their DETH decoded) and hands their
// payload to the describer set here, whose one-line text becomes the `mad` field. The MAD codecs
// live in protocol/ with the RDMA CM work; whoever links them sets the describer once at start.
#pragma once

#include <optional>
#include <string>

#include "protocol/be.hpp"

namespace roce::inspect {

// The MAD (payload of a GSI datagram, 256 bytes) as one line, or nullopt when it cannot say.
using MadDescriber = std::optional<std::string> (*)(proto::ByteSpan mad);

void set_mad_describer(MadDescriber d);
MadDescriber mad_describer();

}  // namespace roce::inspect
